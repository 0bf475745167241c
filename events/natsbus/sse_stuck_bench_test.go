package natsbus_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

// BenchmarkSSEStuckReaders measures what clients that open an SSE stream and
// never read (TOOLSTREAM_SSE_STUCK, default 200) do to the calls of the
// session they watch, side by side in one run: rounds of calls without them
// alternate with rounds during which they are there, each such round (1 s
// of calls, 2 ms apart) starting as they connect (so their catch-up of the
// session's 1 MB history and their getting stuck fall inside it) and ending
// as they go.
//
// A call's latency is the time from the start of Session.Run (one call of a
// tool that streams 5 lines: 13 events) to its result event reaching a NATS
// subscriber on a connection of its own: what the agent's other consumers
// see. Reported: the p50 and p99 of each side and p99-ratio (with / without;
// the target is at most 2), and the same for a viewer that does read
// (viewer-p99-ratio: the result's frame reaching it), since a stuck viewer
// must not slow the other viewers either.
//
// The server's sockets have 64 kB send buffers, so that a client that never
// reads blocks its handler's writes soon (with Linux's autotuning a socket
// takes up to 4 MB first, and such a client is stuck only later). Run it
// with
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
		rounds  = 8 // half of them with the stuck readers, in the order ABBA ABBA
		round   = time.Second
		pace    = 2 * time.Millisecond // between the end of a call and the next
		session = "stuck-bench"
	)
	bus := natstest.Bus(b, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	srv := httptest.NewUnstartedServer(bus.SSEHandler(natsbus.SSEOptions{}))
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
		if r := sess.Run(context.Background(), []toolkit.Call{{ID: id, Name: "streamer", Args: []byte(`{"lines":5}`)}}); r[0].State != toolkit.StateSuccess {
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

	for i := 0; i < b.N; i++ {
		var without, with, viewerWithout, viewerWith []float64
		for r := range rounds {
			withStuck := r%4 == 1 || r%4 == 2
			var conns []net.Conn
			cpu0 := processCPU()
			if withStuck {
				conns = openStuckReaders(b, srv.Listener.Addr().String(), session, stuck)
			}
			for end := time.Now().Add(round); time.Now().Before(end); time.Sleep(pace) {
				d, v := call()
				if withStuck {
					with, viewerWith = append(with, d), append(viewerWith, v)
				} else {
					without, viewerWithout = append(without, d), append(viewerWithout, v)
				}
			}
			fmt.Fprintf(os.Stderr, "round %d stuck=%v cpu %v\n", r, withStuck, processCPU()-cpu0)
			for _, c := range conns {
				c.Close()
			}
		}
		p99, p99With := testutil.Quantile(without, 0.99), testutil.Quantile(with, 0.99)
		v99, v99With := testutil.Quantile(viewerWithout, 0.99), testutil.Quantile(viewerWith, 0.99)
		b.ReportMetric(float64(stuck), "stuck-readers")
		b.ReportMetric(float64(len(with)), "calls-stuck")
		b.ReportMetric(testutil.Median(without), "ms-p50")
		b.ReportMetric(testutil.Median(with), "ms-p50-stuck")
		b.ReportMetric(p99, "ms-p99")
		b.ReportMetric(p99With, "ms-p99-stuck")
		b.ReportMetric(p99With/p99, "p99-ratio")
		b.ReportMetric(v99With/v99, "viewer-p99-ratio")
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
