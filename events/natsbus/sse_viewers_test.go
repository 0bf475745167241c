package natsbus_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
)

// publishRaw stores n events of session straight into the stream (as
// another publisher would) and returns their stream sequences.
func publishRaw(t testing.TB, bus *natsbus.Bus, session string, n int) []uint64 {
	return publishSized(t, bus, session, n, 1)
}

// publishSized is publishRaw with a progress message of size bytes.
func publishSized(t testing.TB, bus *natsbus.Bus, session string, n, size int) []uint64 {
	t.Helper()
	seqs := make([]uint64, n)
	msg := strings.Repeat("m", size)
	for i := range seqs {
		body := fmt.Sprintf(`{"v":1,"type":"progress","session":%q,"call":"c","tool":"t","seq":%d,"time":"2026-11-29T12:00:00Z","progress":{"message":%q}}`, session, i+1, msg)
		ack, err := bus.JetStream().Publish(context.Background(), bus.Subjects().Call(session, "c", "progress"), []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		seqs[i] = ack.Sequence
	}
	return seqs
}

// consumers returns how many consumers the bus's stream has on the server.
func consumers(t testing.TB, bus *natsbus.Bus) int {
	t.Helper()
	s, err := bus.JetStream().Stream(context.Background(), bus.Stream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Consumers
}

// settleGoroutines waits up to d for the goroutine count to come down to at
// most base, and returns the count and how long it took.
func settleGoroutines(base int, d time.Duration) (int, time.Duration) {
	start := time.Now()
	for {
		n := runtime.NumGoroutine()
		if n <= base || time.Since(start) > d {
			return n, time.Since(start)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSSEReconnectStorm: thousands of short requests (a page reloading in
// a loop, EventSources reconnecting) leave nothing behind: no consumer per
// request on the server (JetStream allows 1,000 per stream by default, and
// an ordered consumer stays 5 minutes after its client), goroutines back to
// where they were within two seconds, and the next viewer is served at once
// and gets new events.
func TestSSEReconnectStorm(t *testing.T) {
	bus := natstest.Bus(t, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	srv := httptest.NewServer(bus.SSEHandler())
	defer srv.Close()
	publishRaw(t, bus, "storm", 3)

	// A first viewer starts what is shared between viewers.
	resp := sseGet(t, srv.URL, "storm", "")
	got := readSSE(t, resp, 3)
	resp.Body.Close()
	if len(got) != 3 {
		t.Fatalf("first viewer: %d events", len(got))
	}
	base, _ := settleGoroutines(0, 500*time.Millisecond)

	const storm = 2000
	for i := range storm {
		resp := sseGet(t, srv.URL, "storm", "")
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Fatalf("request %d of the storm: %d %s", i, resp.StatusCode, body)
		}
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		resp.Body.Close()
		if err != nil || !strings.HasPrefix(line, "retry: ") {
			t.Fatalf("request %d: %q %v", i, line, err)
		}
	}
	if n, took := settleGoroutines(base, 2*time.Second); n > base {
		t.Errorf("%d goroutines %v after the storm, %d before it", n, took, base)
	}
	if n := consumers(t, bus); n > 1 {
		t.Errorf("%d consumers on the stream after the storm", n)
	}

	start := time.Now()
	resp = sseGet(t, srv.URL, "storm", "")
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("after the storm: %d", resp.StatusCode)
	}
	if got := readSSE(t, resp, 3); len(got) != 3 {
		t.Fatalf("after the storm: %d stored events", len(got))
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the viewer after the storm waited %v", took)
	}
	seqs := publishRaw(t, bus, "storm", 1)
	if got := readSSE(t, resp, 1); len(got) != 1 || got[0].id != seqs[0] {
		t.Fatalf("after the storm, live: %+v, want id %d", got, seqs[0])
	}
}

// TestSSEViewerLimit: above WithMaxViewers a client gets 503 with Retry-After
// and a message saying why; when a viewer leaves, the next one is served.
func TestSSEViewerLimit(t *testing.T) {
	bus := natstest.Bus(t, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	srv := httptest.NewServer(bus.SSEHandler(natsbus.WithMaxViewers(3, 2*time.Second)))
	defer srv.Close()
	var open []*http.Response
	defer func() {
		for _, r := range open {
			r.Body.Close()
		}
	}()
	for i := range 3 {
		resp := sseGet(t, srv.URL, fmt.Sprint("s", i), "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("viewer %d: %d", i, resp.StatusCode)
		}
		open = append(open, resp)
	}
	resp := sseGet(t, srv.URL, "s9", "")
	if resp.StatusCode != http.StatusServiceUnavailable {
		resp.Body.Close()
		t.Fatalf("fourth viewer: %d", resp.StatusCode)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "2" ||
		!strings.Contains(string(body), "too many viewers") || !strings.Contains(string(body), "at most 3") {
		t.Fatalf("fourth viewer: %d, Retry-After %q, %q", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	open[0].Body.Close()
	open = open[1:]
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp := sseGet(t, srv.URL, "s9", "")
		if resp.StatusCode == http.StatusOK {
			resp.Body.Close()
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("no viewer served after one left: %d", resp.StatusCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSSELastEventIDAtOrPastEnd: an id at the end, past it, or the largest
// there is resumes at the end: nothing stored is sent again and the next
// event arrives. Garbage is refused.
func TestSSELastEventIDAtOrPastEnd(t *testing.T) {
	for _, memory := range []bool{true, false} {
		t.Run(fmt.Sprint("memory=", memory), func(t *testing.T) { testLastEventIDAtOrPastEnd(t, memory) })
	}
}

func testLastEventIDAtOrPastEnd(t *testing.T, memory bool) {
	bus := natstest.Bus(t, natsbus.WithDurable(natsbus.Durable{Memory: memory}))
	srv := httptest.NewServer(bus.SSEHandler())
	defer srv.Close()
	// An empty stream (one recreated since the client's last visit): the
	// first event is the next one.
	resp := sseGet(t, srv.URL, "end", "5")
	first := publishRaw(t, bus, "end", 1)
	got := readSSE(t, resp, 1)
	resp.Body.Close()
	if len(got) != 1 || got[0].id != first[0] {
		t.Fatalf("Last-Event-ID 5 on an empty stream: got %+v, want %d", got, first[0])
	}
	stored := publishRaw(t, bus, "end", 5)
	end := stored[len(stored)-1]
	for _, last := range []func(end uint64) uint64{
		func(end uint64) uint64 { return end },
		func(end uint64) uint64 { return end + 1 },
		func(end uint64) uint64 { return end + 1000 },
		func(uint64) uint64 { return math.MaxUint64 - 1 },
		func(uint64) uint64 { return math.MaxUint64 },
	} {
		for _, inQuery := range []bool{false, true} {
			id := strconv.FormatUint(last(end), 10)
			var resp *http.Response
			if inQuery {
				r, err := http.Get(srv.URL + "?session=end&lastEventId=" + id)
				if err != nil {
					t.Fatal(err)
				}
				resp = r
			} else {
				resp = sseGet(t, srv.URL, "end", id)
			}
			if resp.StatusCode != http.StatusOK {
				resp.Body.Close()
				t.Fatalf("%s: %d", id, resp.StatusCode)
			}
			// The headers come once the viewer follows the session.
			live := publishRaw(t, bus, "end", 1)
			got := readSSE(t, resp, 1)
			resp.Body.Close()
			if len(got) != 1 || got[0].id != live[0] {
				t.Fatalf("Last-Event-ID %s (in the query: %v), end %d: got %+v, want the new event %d", id, inQuery, end, got, live[0])
			}
			end = live[0]
		}
	}
	for _, bad := range []string{"18446744073709551616", "-1", "0x10", "1e3", "seven"} {
		resp := sseGet(t, srv.URL, "end", bad)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("Last-Event-ID %q: %d", bad, resp.StatusCode)
		}
	}
}

// TestSSEIDInTheMiddle: an id in the middle of a session's history resumes
// right after it, also when other sessions' events lie between.
func TestSSEIDInTheMiddle(t *testing.T) {
	bus := natstest.Bus(t, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	srv := httptest.NewServer(bus.SSEHandler())
	defer srv.Close()
	var mine []uint64
	for range 3 {
		mine = append(mine, publishRaw(t, bus, "mid", 2)...)
		publishRaw(t, bus, "other", 2)
	}
	resp := sseGet(t, srv.URL, "mid", strconv.FormatUint(mine[1], 10))
	defer resp.Body.Close()
	got := readSSE(t, resp, 4)
	for i, f := range got {
		if f.id != mine[2+i] {
			t.Fatalf("frame %d: id %d, want %d (%+v)", i, f.id, mine[2+i], got)
		}
	}
}

// TestSSESlowViewerCatchesUp: a viewer that falls behind the live events
// (a client that does not read, with room for one waiting frame) reads them
// back from the stream: it gets every event once, in order.
func TestSSESlowViewerCatchesUp(t *testing.T) {
	natsbus.SetViewerQueue(t, 1)
	bus := natstest.Bus(t, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	// A small socket buffer, so that a client that does not read soon
	// blocks the handler's writes.
	srv := httptest.NewUnstartedServer(bus.SSEHandler())
	srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		c.(*net.TCPConn).SetWriteBuffer(4 << 10)
		return ctx
	}
	srv.Start()
	defer srv.Close()
	resp := sseGet(t, srv.URL, "slow", "")
	defer resp.Body.Close()
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.HasPrefix(line, "retry: ") {
		t.Fatalf("%q %v", line, err)
	}
	// 400 kB while the client reads nothing: far more than the connection
	// buffers, so the handler blocks writing and the live frames pile up.
	const n = 200
	want := publishSized(t, bus, "slow", n, 2<<10)
	got := readSSE(t, resp, n)
	if len(got) != n {
		t.Fatalf("%d of %d events", len(got), n)
	}
	for i, f := range got {
		if f.id != want[i] {
			t.Fatalf("frame %d: id %d, want %d", i, f.id, want[i])
		}
		if ev, err := events.Decode([]byte(f.data)); err != nil || ev.Session != "slow" {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	if bus.CatchUps() == 0 {
		t.Fatal("the viewer never fell behind: the test did not test the catch-up")
	}
}

// TestSSESharedConsumerGoesWhenIdle: the consumer the viewers share is
// deleted on the server a while after the last viewer left, and the bridge's
// connections are closed, and both come back with the next viewer.
func TestSSESharedConsumerGoesWhenIdle(t *testing.T) {
	natsbus.SetHubLinger(t, 50*time.Millisecond)
	bus := natstest.Bus(t, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	srv := httptest.NewServer(bus.SSEHandler())
	defer srv.Close()
	clients := bus.Server().NumClients()
	for round := range 2 {
		resp := sseGet(t, srv.URL, "idle", "")
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		n := consumers(t, bus)
		seqs := publishRaw(t, bus, "idle", 1)
		got := readSSE(t, resp, 1)
		resp.Body.Close()
		if err != nil || !strings.HasPrefix(line, "retry: ") {
			t.Fatalf("%q %v", line, err)
		}
		if n != 1 {
			t.Fatalf("round %d: %d consumers with a viewer", round, n)
		}
		if len(got) != 1 || got[0].id != seqs[0] {
			t.Fatalf("round %d: %+v", round, got)
		}
		deadline := time.Now().Add(5 * time.Second)
		for consumers(t, bus) != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the shared consumer is still there after its viewers left", round)
			}
			time.Sleep(20 * time.Millisecond)
		}
		for bus.Server().NumClients() != clients {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d connections to the server after the viewers left, %d before", round, bus.Server().NumClients(), clients)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestSSELongHistory: a history longer than one direct get (by count and by
// bytes) arrives whole, in order, with other sessions' events between.
func TestSSELongHistory(t *testing.T) {
	bus := natstest.Bus(t, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	srv := httptest.NewServer(bus.SSEHandler())
	defer srv.Close()
	var want []uint64
	for range 3 {
		want = append(want, publishRaw(t, bus, "long", 200)...)          // more than a batch's count
		want = append(want, publishSized(t, bus, "long", 100, 2<<10)...) // more than a batch's bytes
		publishRaw(t, bus, "other", 50)
	}
	for _, from := range []int{0, 250} {
		last := ""
		if from > 0 {
			last = strconv.FormatUint(want[from-1], 10)
		}
		resp := sseGet(t, srv.URL, "long", last)
		got := readSSE(t, resp, len(want)-from)
		resp.Body.Close()
		if len(got) != len(want)-from {
			t.Fatalf("from %d: %d events, want %d", from, len(got), len(want)-from)
		}
		for i, f := range got {
			if f.id != want[from+i] {
				t.Fatalf("from %d: frame %d has id %d, want %d", from, i, f.id, want[from+i])
			}
		}
	}
}

// TestSSEWithoutDirectGets: a stream someone changed so that it no longer
// answers direct gets gives viewers a 503 that says so, not a hang.
func TestSSEWithoutDirectGets(t *testing.T) {
	bus := natstest.Bus(t, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	srv := httptest.NewServer(bus.SSEHandler())
	defer srv.Close()
	publishRaw(t, bus, "nd", 1)
	ctx := context.Background()
	s, err := bus.JetStream().Stream(ctx, bus.Stream())
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.AllowDirect = false
	if _, err := bus.JetStream().UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp := sseGet(t, srv.URL, "nd", "")
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "direct gets") {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("took %v", took)
	}
	t.Logf("%s", body)
}

// TestSSEViewersStayOffThePublishersConnection: what viewers ask of NATS
// (their catch-up's direct gets, the live events of the consumer they
// share) never crosses the bus's own connection, which the publisher uses:
// the server answers a connection's direct gets one after another in its
// read loop, so there a publish waited behind every viewer's catch-up (200
// viewers that never read made a call's p99 ten to a hundred times
// longer: BenchmarkSSEStuckReaders).
func TestSSEViewersStayOffThePublishersConnection(t *testing.T) {
	bus := natstest.Bus(t, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	srv := httptest.NewServer(bus.SSEHandler())
	defer srv.Close()
	// Another publisher, on a connection of its own: its acknowledgements
	// do not come to the bus's connection either.
	nc, err := nats.Connect("", nats.InProcessServer(bus.Server()))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	publish := func(n int) {
		for i := range n {
			body := fmt.Sprintf(`{"v":1,"type":"progress","session":"off","call":"c","tool":"t","seq":%d,"time":"2026-11-29T12:00:00Z","progress":{"message":"m"}}`, i+1)
			if _, err := js.Publish(context.Background(), bus.Subjects().Call("off", "c", "progress"), []byte(body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish(1000) // four direct gets' worth
	before := bus.Conn().Stats().InMsgs
	resp := sseGet(t, srv.URL, "off", "")
	defer resp.Body.Close()
	if got := readSSE(t, resp, 1000); len(got) != 1000 {
		t.Fatalf("history: %d of 1000 events", len(got))
	}
	publish(200)
	if got := readSSE(t, resp, 200); len(got) != 200 {
		t.Fatalf("live: %d of 200 events", len(got))
	}
	if n := bus.Conn().Stats().InMsgs - before; n != 0 {
		t.Fatalf("a viewer's 1,200 events brought %d messages to the bus's own connection, want none", n)
	}
}

// TestSSEConnectionsTakeTheBusOptions: the bridge's own connections log in
// with the options the bus was opened with (here a user and password the
// server requires), and a closed handler among them hears of the bus's
// connection only, not of the bridge's closing once the last viewer left.
func TestSSEConnectionsTakeTheBusOptions(t *testing.T) {
	natsbus.SetHubLinger(t, 50*time.Millisecond)
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
		Username: "agent", Password: "secret", NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	var closed atomic.Int32
	bus := natstest.Bus(t, natsbus.WithURL(srv.ClientURL()), natsbus.WithDurable(natsbus.Durable{Memory: true}),
		natsbus.WithNATSOptions(nats.UserInfo("agent", "secret"), nats.ClosedHandler(func(*nats.Conn) { closed.Add(1) })))
	web := httptest.NewServer(bus.SSEHandler())
	defer web.Close()
	clients := srv.NumClients()
	seqs := publishRaw(t, bus, "auth", 3)
	resp := sseGet(t, web.URL, "auth", "")
	got := readSSE(t, resp, 3)
	resp.Body.Close()
	if len(got) != 3 || got[2].id != seqs[2] {
		t.Fatalf("got %+v", got)
	}
	for deadline := time.Now().Add(5 * time.Second); srv.NumClients() != clients; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections after the viewer left, %d before", srv.NumClients(), clients)
		}
	}
	if n := closed.Load(); n != 0 {
		t.Fatalf("the closed handler given to the bus ran %d times as the bridge's connections closed", n)
	}
}
