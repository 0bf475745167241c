package natsbus_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

// envClients carries the client side's orders: "<url> <viewers> <history>
// <events>".
const envClients = "TOOLSTREAM_SSE_CLIENTS"

// BenchmarkSSEViewers is the SSE bridge's load test: thousands of viewers
// (TOOLSTREAM_SSE_VIEWERS, default 2000) of one session at once, each
// receiving the session's history (303 events, 70 kB: more than one direct
// get) and then its live events, held by one server. The clients run in a
// process of their own, so that what is measured here is the server alone.
//
// Every figure is against the process before any viewer came (the bus's
// shared consumer not started), as an operator would see it:
//
//   - heap-B/viewer: heap in use after a collection, once every viewer has
//     its history and waits (an idle viewer); it fails above 50 kB;
//   - peak-heap-B/viewer: the most live heap (as of each collection) while
//     the viewers connected and caught up;
//   - stack-B/viewer, goroutines/viewer: while they are connected;
//   - ms-goroutines-back: from the viewers leaving until their goroutines
//     are gone (one viewer stays, keeping what the bus shares between
//     viewers); it fails above 2 s;
//   - goroutines-left: once that last viewer has left too and the shared
//     consumer's linger (hubLinger) has passed, against the count before
//     any viewer: it fails above 0;
//   - ms-connect-all, ms-live-to-all: until every viewer had its history,
//     and then every live event.
//
// Run it with
//
//	go test -run '^$' -bench BenchmarkSSEViewers -benchtime 1x ./events/natsbus/
func BenchmarkSSEViewers(b *testing.B) {
	viewers := 2000
	if s := os.Getenv("TOOLSTREAM_SSE_VIEWERS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("TOOLSTREAM_SSE_VIEWERS=%q", s)
		}
		viewers = n
	}
	for i := 0; i < b.N; i++ {
		f := newLoad(b).run(fmt.Sprint("load-", i), viewers)
		b.ReportMetric(float64(viewers), "viewers")
		b.ReportMetric(float64(f.heap)/float64(viewers), "heap-B/viewer")
		b.ReportMetric(float64(f.peak)/float64(viewers), "peak-heap-B/viewer")
		b.ReportMetric(float64(f.stack)/float64(viewers), "stack-B/viewer")
		b.ReportMetric(float64(f.goroutines)/float64(viewers), "goroutines/viewer")
		b.ReportMetric(float64(f.connect.Milliseconds()), "ms-connect-all")
		b.ReportMetric(float64(f.deliver.Milliseconds()), "ms-live-to-all")
		b.ReportMetric(float64(f.release.Milliseconds()), "ms-goroutines-back")
		b.ReportMetric(float64(f.left), "goroutines-left")
		if per := f.heap / int64(viewers); per > 50<<10 {
			b.Errorf("%d bytes of heap per idle viewer, want at most 50 kB", per)
		}
	}
}

// TestSSEManyViewers is the load test at a size the test suite affords:
// 100 viewers at once, each with every event, and nothing left after them.
func TestSSEManyViewers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process with 100 clients")
	}
	natsbus.SetHubLinger(t, 100*time.Millisecond)
	const n = 100
	f := newLoad(t).run("many", n)
	t.Logf("%d viewers: %d B heap (%d B at the peak) and %d B stacks each, %.1f goroutines each; all connected in %v, live events to all in %v, goroutines back in %v, %d left",
		n, f.heap/n, f.peak/n, f.stack/n, float64(f.goroutines)/n, f.connect, f.deliver, f.release, f.left)
}

type load struct {
	tb  testing.TB
	bus *natsbus.Bus
	srv *httptest.Server
	tk  *toolkit.Toolkit
}

type loadFigures struct {
	heap, peak, stack, goroutines, left int64
	connect, deliver, release           time.Duration
}

func newLoad(tb testing.TB) *load {
	l := &load{tb: tb, bus: natstest.Bus(tb, natsbus.WithDurable(natsbus.Durable{Memory: true}))}
	l.srv = httptest.NewServer(l.bus.SSEHandler())
	tb.Cleanup(l.srv.Close)
	l.tk = kit(tb, l.bus)
	// Warm up the toolkit's workers, so that the baseline has them; no
	// viewer yet.
	warm, _ := l.tk.Session("warm-up")
	warm.Run(context.Background(), callsFor(2, 1))
	return l
}

// heapLive is the live heap as of the last collection.
var heapLive = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}

// peakHeap samples the live heap until stop is closed, and then sends the
// highest value it saw.
func peakHeap(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		var peak uint64
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			s := slices.Clone(heapLive)
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-stop:
				out <- peak
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// run has viewers follow session from a process of their own: its history
// (303 events) and then 26 live ones.
func (l *load) run(session string, viewers int) loadFigures {
	tb := l.tb
	var f loadFigures
	sess, _ := l.tk.Session(session)
	sess.Run(context.Background(), callsFor(1, 150))
	history := 2*150 + 3
	want := history + 2*(1+5+6+1)

	settleGoroutines(0, 200*time.Millisecond)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	liveBefore := heapAfterGC()
	baseG := runtime.NumGoroutine()

	// One viewer that stays until the others have gone: what the bus
	// shares between viewers stays with it.
	first := sseGet(tb, l.srv.URL, session, "")
	if got := readSSE(tb, first, history); len(got) != history {
		tb.Fatalf("the first viewer got %d of %d events", len(got), history)
	}
	settleGoroutines(0, 100*time.Millisecond)
	sharedG := runtime.NumGoroutine()

	cmd := exec.Command(os.Args[0], "-test.run=^TestSSEClientProcess$", "-test.bench=^$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s?session=%s %d %d %d", envClients, l.srv.URL, url.QueryEscape(session), viewers, history, want))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stopPeak := make(chan struct{})
	peak := peakHeap(stopPeak)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	expect := func(what string) {
		tb.Helper()
		for lines.Scan() {
			if lines.Text() == what {
				return
			}
			if strings.HasPrefix(lines.Text(), "error") {
				stdin.Close()
				cmd.Wait()
				tb.Fatalf("clients: %s", lines.Text())
			}
		}
		stdin.Close()
		cmd.Wait()
		tb.Fatalf("clients ended before %q", what)
	}
	expect("connected") // every viewer has its history
	f.connect = time.Since(start)
	close(stopPeak)
	f.peak = int64(<-peak) - int64(liveBefore)
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	f.heap = int64(after.HeapInuse) - int64(before.HeapInuse)
	f.stack = int64(after.StackInuse) - int64(before.StackInuse)
	f.goroutines = int64(runtime.NumGoroutine() - baseG)

	start = time.Now()
	sess.Run(context.Background(), callsFor(2, 5)) // live: 26 events
	expect("received")
	f.deliver = time.Since(start)

	stdin.Close() // the viewers go
	expect("closed")
	start = time.Now()
	left, _ := settleGoroutines(sharedG, 5*time.Second)
	f.release = time.Since(start)
	if err := cmd.Wait(); err != nil {
		tb.Fatalf("clients: %v", err)
	}
	if left > sharedG || f.release > 2*time.Second {
		buf := make([]byte, 1<<20)
		tb.Errorf("%d goroutines %v after %d viewers left, %d before they came:\n%s", left, f.release, viewers, sharedG, buf[:runtime.Stack(buf, true)])
	}
	first.Body.Close() // the last viewer goes: after the linger, so does what viewers share
	n, _ := settleGoroutines(baseG, natsbus.HubLinger()+5*time.Second)
	f.left = int64(n - baseG)
	if f.left > 0 {
		buf := make([]byte, 1<<20)
		tb.Errorf("%d goroutines more than before the first viewer, after the last one left and the linger passed:\n%s", f.left, buf[:runtime.Stack(buf, true)])
	}
	if n := consumers(tb, l.bus); n > 0 {
		tb.Errorf("%d consumers on the stream after the last viewer left", n)
	}
	return f
}

// TestSSEClientProcess is the client side of BenchmarkSSEViewers, run in a
// process of its own; as a test it does nothing. It opens the viewers,
// prints "connected" once each has the session's history, "received" once
// each has every event (in order, each once, of its session), and closes
// them when its input ends ("closed").
func TestSSEClientProcess(t *testing.T) {
	spec := os.Getenv(envClients)
	if spec == "" {
		t.Skip("the client side of BenchmarkSSEViewers")
	}
	var target string
	var viewers, history, want int
	if _, err := fmt.Sscanf(spec, "%s %d %d %d", &target, &viewers, &history, &want); err != nil {
		t.Fatalf("%s=%q: %v", envClients, spec, err)
	}
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	session := u.Query().Get("session")
	var (
		mu        sync.Mutex
		conns     []net.Conn
		failed    = make(chan string, 1)
		connected sync.WaitGroup
		received  sync.WaitGroup
		dials     = make(chan struct{}, 64) // connects in flight
	)
	fail := func(format string, v ...any) {
		select {
		case failed <- fmt.Sprintf("error "+format, v...):
		default:
		}
	}
	connected.Add(viewers)
	received.Add(viewers)
	for i := range viewers {
		go func() {
			dials <- struct{}{}
			c, err := net.Dial("tcp", u.Host)
			if err == nil {
				fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", u.RequestURI(), u.Host)
			}
			<-dials
			if err != nil {
				fail("viewer %d: %v", i, err)
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			r := bufio.NewReader(c)
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				fail("viewer %d: %v", i, err)
				return
			}
			if resp.StatusCode != http.StatusOK {
				msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
				fail("viewer %d: %s: %s", i, resp.Status, msg)
				return
			}
			body := bufio.NewScanner(resp.Body)
			var last uint64
			got := 0
			for body.Scan() {
				line := body.Text()
				switch {
				case strings.HasPrefix(line, "id: "):
					id, err := strconv.ParseUint(line[4:], 10, 64)
					if err != nil || id <= last {
						fail("viewer %d: id %q after %d", i, line, last)
						return
					}
					last = id
				case strings.HasPrefix(line, "data: "):
					if !strings.Contains(line, `"session":"`+session+`"`) {
						fail("viewer %d: %s", i, line)
						return
					}
					got++
					if got == history {
						connected.Done()
					}
					if got == want {
						received.Done()
					}
					if got > want {
						fail("viewer %d: %d events, want %d", i, got, want)
					}
				}
			}
		}()
	}
	wait := func(wg *sync.WaitGroup, what string) bool {
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
			fmt.Println(what)
			return true
		case msg := <-failed:
			fmt.Println(msg)
		case <-time.After(2 * time.Minute):
			fmt.Println("error timed out before", what)
		}
		return false
	}
	if wait(&connected, "connected") {
		wait(&received, "received")
	}
	bufio.NewReader(os.Stdin).ReadString(0) // until the benchmark closes it
	mu.Lock()
	for _, c := range conns {
		c.Close()
	}
	mu.Unlock()
	fmt.Println("closed")
}
