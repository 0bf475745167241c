package natsbus_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

// BenchmarkSSEStuckReaders measures what clients that open an SSE stream and
// never read (TOOLSTREAM_SSE_STUCK, default 200) do to the calls of the
// session they watch, side by side in one run: 1 s rounds of calls (2 ms
// apart) of three kinds, interleaved: without them; while they arrive (they
// connect as the round starts, so their catch-up of the session's history,
// 1 MB and more, and their getting stuck fall inside it); and once they are
// stuck (every one's handler blocked writing to it).
//
// A call's latency is the time from the start of Session.Run (one call of a
// tool that streams 5 lines: 13 events) to its result event reaching a NATS
// subscriber on a connection of its own: what the agent's other consumers
// see. Reported: p50 and p99 of each kind, p99-ratio (arriving / without;
// the target is at most 2) and p99-ratio-stuck (stuck / without), the same
// for a viewer that does read (viewer-p99-ratio, viewer-p99-ratio-stuck:
// the result's frame reaching it), since a stuck viewer must not slow the
// other viewers either, and the CPU the readers cost the process in a
// round (ms-cpu-arriving, ms-cpu-stuck).
//
// The server's sockets have 64 kB send buffers, so that a client that never
// reads blocks its handler's writes soon. With Linux's autotuning a socket
// takes up to 4 MB first: until then such a client costs what a viewer
// that reads does, and 200 of them arriving at once on a long history are
// a load of hundreds of megabytes of catch-up (see docs/benchmarks.md). Run
// it with
//
//	go test -run '^$' -bench BenchmarkSSEStuckReaders -benchtime 1x ./events/natsbus/
func BenchmarkSSEStuckReaders(b *testing.B) {
	stuck := 200
	if s := os.Getenv("TOOLSTREAM_SSE_STUCK"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("TOOLSTREAM_SSE_STUCK=%q", s)
		}
		stuck = n
	}
	const (
		rounds  = 12
		round   = time.Second
		pace    = 2 * time.Millisecond // between the end of a call and the next
		session = "stuck-bench"
	)
	bus := natstest.Bus(b, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	h, blocked := natsbus.CountBlockedWrites(bus.SSEHandler())
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetWriteBuffer(64 << 10)
		}
		return ctx
	}
	srv.Start()
	b.Cleanup(srv.Close)
	tk := kit(b, bus)
	sess, err := tk.Session(session)
	if err != nil {
		b.Fatal(err)
	}
	publishSized(b, bus, session, 500, 2<<10) // 1 MB of history

	// The agent's other consumer: results on a connection of its own.
	nc, err := nats.Connect("", nats.InProcessServer(bus.Server()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	results := make(chan string, 16)
	sub, err := nc.Subscribe(bus.Subjects().Session(session), func(m *nats.Msg) {
		if strings.HasSuffix(m.Subject, ".result") {
			results <- m.Subject
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	sub.SetPendingLimits(-1, -1)
	if err := nc.Flush(); err != nil {
		b.Fatal(err)
	}
	// A viewer that reads: the call ids of the results it sees.
	resp := sseGet(b, srv.URL, session, "")
	b.Cleanup(func() { resp.Body.Close() })
	seen := make(chan string, 16)
	go func() {
		r := bufio.NewReader(resp.Body)
		result := false
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				close(seen)
				return
			}
			switch {
			case line == "event: result\n":
				result = true
			case result && strings.HasPrefix(line, "data: "):
				_, rest, _ := strings.Cut(line, `"call":"`)
				id, _, _ := strings.Cut(rest, `"`)
				seen <- id
				result = false
			}
		}
	}()

	n := 0
	call := func() (toNATS, toViewer float64) {
		n++
		// Call ids come back: a session of thousands of distinct calls
		// would make each direct get cost the server a walk over as many
		// subjects (the filter is a wildcard), which a conversation does
		// not have.
		id := fmt.Sprint("c", n%50)
		start := time.Now()
		if r := sess.Run(context.Background(), []toolkit.Call{{ID: id, Name: "streamer", Args: []byte(`{"lines":5}`)}}); r[0].State != events.StateSuccess {
			b.Fatalf("call %s: %s", id, r[0].State)
		}
		want := bus.Subjects().Call(session, id, "result")
		var gotNATS, gotViewer bool
		stall := time.After(30 * time.Second)
		for !gotNATS || !gotViewer {
			select {
			case s := <-results:
				if s == want {
					toNATS, gotNATS = ms(time.Since(start)), true
				}
			case s, ok := <-seen:
				if !ok {
					b.Fatal("the reading viewer's stream ended")
				}
				if s == id {
					toViewer, gotViewer = ms(time.Since(start)), true
				}
			case <-stall:
				b.Fatalf("call %s: no result after 30s (NATS %v, viewer %v)", id, gotNATS, gotViewer)
			}
		}
		return toNATS, toViewer
	}
	for range 20 { // warm-up
		call()
	}

	// Three kinds of rounds, interleaved so that what changes over the run
	// (the machine's other work) falls on each alike.
	const (
		none       = iota // no stuck reader
		arriving          // they connect as the round starts
		stuckRound        // they connected before it and are all blocked
	)
	kinds := []int{none, arriving, stuckRound, stuckRound, arriving, none}
	for i := 0; i < b.N; i++ {
		var lat, viewer [3][]float64
		var cpu [3]time.Duration
		for r := range rounds {
			kind := kinds[r%len(kinds)]
			settled := runtime.NumGoroutine()
			var conns []net.Conn
			if kind == stuckRound {
				conns = openStuckReaders(b, srv.Listener.Addr().String(), session, stuck)
				waitBlocked(b, blocked, stuck)
			}
			cpu0 := processCPU()
			if kind == arriving {
				conns = openStuckReaders(b, srv.Listener.Addr().String(), session, stuck)
			}
			for end := time.Now().Add(round); time.Now().Before(end); time.Sleep(pace) {
				d, v := call()
				lat[kind], viewer[kind] = append(lat[kind], d), append(viewer[kind], v)
			}
			cpu[kind] += processCPU() - cpu0
			for _, c := range conns {
				c.Close()
			}
			// Their handlers end before the next round begins, which
			// would otherwise pay for it.
			settleGoroutines(settled, 5*time.Second)
		}
		p99 := func(kind int) float64 { return testutil.Quantile(lat[kind], 0.99) }
		v99 := func(kind int) float64 { return testutil.Quantile(viewer[kind], 0.99) }
		perRound := float64(rounds / len(kinds) * 2)
		b.ReportMetric(float64(stuck), "stuck-readers")
		b.ReportMetric(testutil.Median(lat[none]), "ms-p50")
		b.ReportMetric(testutil.Median(lat[arriving]), "ms-p50-arriving")
		b.ReportMetric(p99(none), "ms-p99")
		b.ReportMetric(p99(arriving), "ms-p99-arriving")
		b.ReportMetric(p99(stuckRound), "ms-p99-stuck")
		b.ReportMetric(p99(arriving)/p99(none), "p99-ratio")
		b.ReportMetric(p99(stuckRound)/p99(none), "p99-ratio-stuck")
		b.ReportMetric(v99(arriving)/v99(none), "viewer-p99-ratio")
		b.ReportMetric(v99(stuckRound)/v99(none), "viewer-p99-ratio-stuck")
		// What the readers cost the process in a round (0 where the
		// platform does not say): arriving, catching up and getting stuck;
		// and once stuck.
		b.ReportMetric(ms(cpu[arriving]-cpu[none])/perRound, "ms-cpu-arriving")
		b.ReportMetric(ms(cpu[stuckRound]-cpu[none])/perRound, "ms-cpu-stuck")
	}
}

// waitBlocked waits until n handlers are blocked writing to their clients:
// that many writes under way, and none ending for a while.
func waitBlocked(tb testing.TB, blocked func() int64, n int) {
	tb.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if w := blocked(); w >= int64(n) {
			time.Sleep(100 * time.Millisecond)
			if blocked() >= int64(n) {
				return
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d of %d handlers blocked writing after 30s", blocked(), n)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// openStuckReaders opens n SSE streams of session that never read a byte of
// the response.
func openStuckReaders(tb testing.TB, addr, session string, n int) []net.Conn {
	tb.Helper()
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			tb.Fatal(err)
		}
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetReadBuffer(4 << 10)
		}
		req, _ := http.NewRequest(http.MethodGet, "/?session="+session, nil)
		req.Host = addr
		if err := req.Write(c); err != nil {
			tb.Fatal(err)
		}
		conns = append(conns, c)
	}
	return conns
}
