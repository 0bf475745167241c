package natsbus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
)

// ownServer starts a JetStream server of its own (fileServer) on a free
// port, with its files in a temporary folder, and opens a bus on it with
// opts. Port and dir start the same server again after stopServer.
func ownServer(t *testing.T, opts ...Option) (bus *Bus, srv *server.Server, port int, dir string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir = t.TempDir()
	srv = fileServer(t, port, dir)
	bus, err = Open(context.Background(), append([]Option{WithURL(fmt.Sprintf("nats://127.0.0.1:%d", port))}, opts...)...)
	if err != nil {
		stopServer(srv)
		t.Fatal(err)
	}
	return bus, srv, port, dir
}

// closeWhileServerAway closes bus while its server (port, dir) is down:
// for half a second when the server stays away, or for up to 20 s while it
// comes back after 300 ms (back), and then returns the server started again
// too (nil when !back).
func closeWhileServerAway(t *testing.T, bus *Bus, port int, dir string, back bool) (closeErr error, restarted *server.Server) {
	t.Helper()
	wait := 500 * time.Millisecond
	again := make(chan *server.Server, 1)
	if back {
		wait = 20 * time.Second
		time.AfterFunc(300*time.Millisecond, func() { again <- fileServer(t, port, dir) })
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	closeErr = bus.Close(ctx)
	cancel()
	if back {
		restarted = <-again
	}
	return closeErr, restarted
}

// fileServer starts a NATS server with JetStream on port and dir, so that a
// test can stop it and look at what its store kept afterwards.
func fileServer(t *testing.T, port int, dir string) *server.Server {
	t.Helper()
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir,
		NoLog: true, NoSigs: true, JetStreamMaxMemory: 64 << 20, JetStreamMaxStore: 1 << 30,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server did not start")
	}
	return srv
}

func stopServer(srv *server.Server) {
	srv.Shutdown()
	srv.WaitForShutdown()
}

func resultEvent(session, call string) *events.Event {
	return &events.Event{Version: events.Version, Type: events.TypeResult, Session: session, Call: call, Tool: "t", Seq: 1, Time: time.Now(),
		Result: &events.Result{State: events.StateSuccess, Content: []events.Part{events.Text("ok " + call)}}}
}

// TestCloseWhileNATSIsAway: the NATS server goes away with results in flight
// (some published and not yet acknowledged, some observed while the
// connection is down), and the bus is closed. Every result is in the stream
// or counted as undelivered, none is lost without a word: when the server
// stays away, Close gives up on what NATS did not acknowledge and says so;
// when it comes back while Close waits, everything is stored, once.
func TestCloseWhileNATSIsAway(t *testing.T) {
	for _, back := range []bool{false, true} {
		t.Run(fmt.Sprintf("back=%v", back), func(t *testing.T) { closeWhileAway(t, back) })
	}
}

func closeWhileAway(t *testing.T, back bool) {
	bus, srv, port, dir := ownServer(t, WithDurable(Durable{}))
	ctx := context.Background()
	p := bus.Publisher()
	const before, after = 2000, 100
	for i := range before {
		p.Observe(resultEvent("s", fmt.Sprintf("a%d", i)))
	}
	stopServer(srv) // with publishes in flight
	for deadline := time.Now().Add(10 * time.Second); bus.nc.IsConnected(); {
		if time.Now().After(deadline) {
			t.Fatal("still connected after the server stopped")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i := range after {
		p.Observe(resultEvent("s", fmt.Sprintf("b%d", i)))
	}
	closeErr, srv := closeWhileServerAway(t, bus, port, dir, back)
	st := p.Stats()
	if srv == nil {
		srv = fileServer(t, port, dir)
	}
	defer stopServer(srv)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, "TOOLSTREAM")
	if err != nil {
		t.Fatal(err)
	}
	stored := stream.CachedInfo().State.Msgs
	t.Logf("stored %d, stats %+v, Close: %v", stored, st, closeErr)
	// A result stored whose acknowledgement was lost with the server is
	// counted undelivered too: the publisher cannot know.
	if stored+st.Undelivered < before+after || stored > before+after {
		t.Fatalf("%d results stored and %d counted undelivered, of %d", stored, st.Undelivered, before+after)
	}
	if st.Undelivered > 0 && closeErr == nil {
		t.Fatal("Close gave events up and returned no error")
	}
	if back && (closeErr != nil || stored != before+after || st.Undelivered != 0) {
		t.Fatalf("the server came back while Close waited: %d of %d stored, %d undelivered, Close: %v", stored, before+after, st.Undelivered, closeErr)
	}
}

// TestConcurrentCloseKeepsItsContext: while one Close waits for NATS to
// acknowledge events (the server is away), another Close returns when its
// own context ends, with its error, instead of waiting for the first; both
// return the same outcome once it is known, and the second's call does not
// cut the first's wait short.
func TestConcurrentCloseKeepsItsContext(t *testing.T) {
	bus, srv, _, _ := ownServer(t, WithDurable(Durable{}))
	ctx := context.Background()
	stopServer(srv)
	for bus.nc.IsConnected() {
		time.Sleep(5 * time.Millisecond)
	}
	bus.Publisher().Observe(resultEvent("s", "c"))

	first := make(chan error, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		first <- bus.Close(cctx)
	}()
	time.Sleep(100 * time.Millisecond) // the first Close is waiting
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	began := time.Now()
	err := bus.Close(cctx)
	if took := time.Since(began); took > time.Second || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the second Close returned %v after %v; want its context's error after 100ms", err, took)
	}
	select {
	case err := <-first:
		if err == nil {
			t.Fatal("the first Close gave an event up without an error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first Close did not return")
	}
	if err := bus.Close(ctx); err == nil {
		t.Fatal("a Close after the end does not return the outcome")
	}
}

// TestCloseWhileNATSIsAwayCore: without JetStream, events published while
// the server is away wait in nats.go's reconnect buffer; when the bus is
// closed before the server is back, they are counted undelivered and Close
// says so (they were counted published and dropped with the buffer). When
// the server comes back while Close waits, they go out.
func TestCloseWhileNATSIsAwayCore(t *testing.T) {
	for _, back := range []bool{false, true} {
		t.Run(fmt.Sprintf("back=%v", back), func(t *testing.T) {
			bus, srv, port, dir := ownServer(t)
			ctx := context.Background()
			p := bus.Publisher()
			p.Observe(resultEvent("s", "before"))
			if err := p.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			stopServer(srv)
			for bus.nc.IsConnected() {
				time.Sleep(5 * time.Millisecond)
			}
			const n = 100
			for i := range n {
				p.Observe(resultEvent("s", fmt.Sprint(i)))
			}
			if err := p.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			closeErr, restarted := closeWhileServerAway(t, bus, port, dir, back)
			if restarted != nil {
				stopServer(restarted)
			}
			st := p.Stats()
			t.Logf("stats %+v, Close: %v", st, closeErr)
			if back {
				if st.Undelivered != 0 || closeErr != nil {
					t.Fatalf("the server came back while Close waited: %d undelivered, Close: %v", st.Undelivered, closeErr)
				}
				return
			}
			if st.Undelivered != n || closeErr == nil {
				t.Fatalf("%d events left in the reconnect buffer at Close: %d counted undelivered, Close: %v", n, st.Undelivered, closeErr)
			}
		})
	}
}

// TestOthersAsyncPublishesAreNotEvents: async publishes another part of the
// program makes on Bus.JetStream() are none of the publisher's business:
// one that fails is not retried as an event, and its acknowledgements do
// not upset the count of events in flight that Close waits for.
func TestOthersAsyncPublishesAreNotEvents(t *testing.T) {
	ctx := context.Background()
	bus, err := Open(ctx, WithDurable(Durable{Memory: true}))
	if err != nil {
		t.Fatal(err)
	}
	js := bus.JetStream()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"other.>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := js.PublishAsync(fmt.Sprintf("other.%d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	nowhere, err := js.PublishAsync("nowhere.stored", []byte("x")) // no stream: fails
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-nowhere.Err():
	case <-time.After(10 * time.Second):
		t.Fatal("the publish with no stream did not fail")
	}
	<-js.PublishAsyncComplete()
	bus.Publisher().Observe(resultEvent("s", "c"))
	time.Sleep(300 * time.Millisecond) // a retry would have happened now
	began := time.Now()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err = bus.Close(cctx)
	st := bus.Publisher().Stats()
	if took := time.Since(began); err != nil || took > 2*time.Second || st.Retried != 0 || st.Undelivered != 0 || st.Published != 1 {
		t.Fatalf("Close: %v after %v; stats %+v", err, took, st)
	}
}

// TestCloseRacingObserve: events observed from several goroutines while
// the bus closes are each published or counted undelivered, never lost
// without a count, and Close waits for none of them.
func TestCloseRacingObserve(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) {
			ctx := context.Background()
			var logs testutil.SyncBuffer
			opts := []Option{WithLogger(zerolog.New(&logs))}
			if durable {
				opts = append(opts, WithDurable(Durable{Memory: true}))
			}
			bus, err := Open(ctx, opts...)
			if err != nil {
				t.Fatal(err)
			}
			const goroutines, each = 4, 2000
			var wg sync.WaitGroup
			start := make(chan struct{})
			for g := range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					for i := range each {
						bus.Publisher().Observe(resultEvent("s", fmt.Sprintf("g%d-%d", g, i)))
					}
				}()
			}
			close(start)
			time.Sleep(time.Millisecond)
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			closeErr := bus.Close(cctx)
			wg.Wait()
			st := bus.Publisher().Stats()
			if st.Published+st.Undelivered != goroutines*each || closeErr != nil {
				t.Fatalf("%d observed: %+v (Close: %v)", goroutines*each, st, closeErr)
			}
			if late := strings.Count(logs.String(), "after the bus closed"); st.Undelivered > 0 && late != 1 {
				t.Fatalf("%d events observed after Close, told %d times in the log:\n%s", st.Undelivered, late, logs.String())
			}
		})
	}
}

// TestBufferedThenSentNotCountedAtClose: without JetStream, events
// published while the server was away wait in the reconnect buffer and go
// out when the connection is back. When the server goes away once more and
// the bus closes then, those events are not counted undelivered: they were
// sent at the reconnection. Before, the count of buffered events was reset
// only by a publish made while connected, so Close counted the 20 events
// undelivered and said they "were still in the reconnect buffer at close".
// Events buffered in the second outage still count.
func TestBufferedThenSentNotCountedAtClose(t *testing.T) {
	bus, srv, port, dir := ownServer(t)
	ctx := context.Background()
	p := bus.Publisher()
	away := func(srv *server.Server) {
		stopServer(srv)
		for bus.nc.IsConnected() {
			time.Sleep(5 * time.Millisecond)
		}
	}
	publish := func(n int, prefix string) {
		for i := range n {
			p.Observe(resultEvent("s", fmt.Sprint(prefix, i)))
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	away(srv)
	publish(20, "first")
	srv = fileServer(t, port, dir)
	for !bus.nc.IsConnected() {
		time.Sleep(5 * time.Millisecond)
	}
	// A round trip: the server has what the reconnection sent.
	if err := bus.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	away(srv)
	publish(3, "second")
	closeErr, _ := closeWhileServerAway(t, bus, port, dir, false)
	st := p.Stats()
	if st.Undelivered != 3 || closeErr == nil || !strings.Contains(closeErr.Error(), "events: 3 events published while NATS was away") {
		t.Fatalf("20 events sent at the reconnection, 3 left in the buffer at close: %d counted undelivered, Close: %v", st.Undelivered, closeErr)
	}
}

// TestLongOutageDoesNotStallThePublisher: while NATS is away, durable
// publishes wait for their acknowledgements; once nats.go holds its limit
// of them (4,096), each further publish waited 200 ms for room (nats.go's
// stall wait) before it failed: the publisher handed over 5 events a
// second, and every run's Flush waited its whole bound (here 2 s, which
// expired with the last events of 4,200 not handed over). Now events beyond the
// limit wait for NATS to come back among the retries, at once. When it is
// back, every event is stored once, and the counters add up: Published
// counts each event handed to NATS once, also one whose first hand-over
// failed and a retry made (before, such events were stored but never
// counted).
func TestLongOutageDoesNotStallThePublisher(t *testing.T) {
	bus, srv, port, dir := ownServer(t, WithDurable(Durable{}))
	p := bus.Publisher()
	stopServer(srv)
	for bus.nc.IsConnected() {
		time.Sleep(5 * time.Millisecond)
	}
	const n = 4200
	for i := range n {
		p.Observe(resultEvent("s", fmt.Sprint(i)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	err := p.Flush(ctx)
	cancel()
	if err != nil {
		t.Fatalf("Flush while NATS is away: %v (%d of %d events handed over)", err, p.handled.Load(), n)
	}
	srv = fileServer(t, port, dir)
	defer stopServer(srv)
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
	closeErr := bus.Close(ctx)
	cancel()
	st := p.Stats()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(context.Background(), "TOOLSTREAM")
	if err != nil {
		t.Fatal(err)
	}
	if stored := stream.CachedInfo().State.Msgs; stored != n || closeErr != nil || st.Undelivered != 0 || st.Published != n {
		t.Fatalf("%d of %d stored, stats %+v, Close: %v", stored, n, st, closeErr)
	}
}
