package natsbus

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
)

// smallBuffers makes every accepted connection's send buffer small, so that
// a client that stops reading blocks the server's writes soon.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

// stuckViewer connects an SSE client that reads the response's first line
// and then nothing, to a session holding about 2 MB of events, and waits
// until the handler is blocked writing to it. It returns a channel closed
// when the handler returns.
func stuckViewer(t *testing.T, bus *Bus, opt SSEOption, waitBlocked bool) (returned chan struct{}, stop func()) {
	t.Helper()
	p := bus.Publisher()
	big := strings.Repeat("x", 32<<10)
	for i := range 64 {
		d := events.Text(big)
		p.Observe(&events.Event{Version: events.Version, Type: events.TypeDelta, Session: "stuck", Call: "c", Tool: "t",
			Seq: uint64(i + 1), Time: time.Now(), Delta: &d})
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-bus.js.PublishAsyncComplete()

	fc := &flushCounter{}
	started, finished := &fc.started, &fc.finished
	returned = make(chan struct{})
	h := fc.wrap(bus.SSEHandler(opt))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(returned)
		h.ServeHTTP(w, r)
	}))
	srv.Listener = smallBuffers{srv.Listener}
	srv.Start()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).SetReadBuffer(4 << 10)
	fmt.Fprintf(c, "GET /?session=stuck HTTP/1.1\r\nHost: x\r\n\r\n")
	line, err := bufio.NewReaderSize(c, 16).ReadString('\n')
	if err != nil || !strings.Contains(line, "200") {
		t.Fatalf("%q, %v", line, err)
	}
	// Blocked: a flush began and has not ended for a while.
	for deadline := time.Now().Add(20 * time.Second); waitBlocked; {
		s := started.Load()
		if s > finished.Load() {
			time.Sleep(200 * time.Millisecond)
			if started.Load() == s && finished.Load() < s {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the handler never blocked writing to the client")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return returned, func() {
		c.Close()
		srv.Close()
	}
}

// TestSSEClientThatStopsReading: a client that stops reading (a frozen tab,
// a dead network path that never resets) does not hold its handler, its
// goroutine and its buffers for ever: Bus.Close ends its stream, and without
// a Close, so does a write that takes longer than WithWriteTimeout (the client,
// if alive, reconnects with Last-Event-ID and misses nothing).
func TestSSEClientThatStopsReading(t *testing.T) {
	t.Run("close", func(t *testing.T) {
		ctx := context.Background()
		bus, err := Open(ctx, WithDurable(Durable{Memory: true}))
		if err != nil {
			t.Fatal(err)
		}
		returned, stop := stuckViewer(t, bus, WithWriteTimeout(time.Hour), true)
		defer stop()
		bus.Close(ctx)
		select {
		case <-returned:
		case <-time.After(10 * time.Second):
			t.Fatal("Bus.Close left the handler of a client that stopped reading blocked")
		}
	})
	t.Run("timeout", func(t *testing.T) {
		ctx := context.Background()
		bus, err := Open(ctx, WithDurable(Durable{Memory: true}))
		if err != nil {
			t.Fatal(err)
		}
		defer bus.Close(ctx)
		returned, stop := stuckViewer(t, bus, WithWriteTimeout(300*time.Millisecond), false)
		defer stop()
		select {
		case <-returned:
		case <-time.After(10 * time.Second):
			t.Fatal("a write blocked past WithWriteTimeout")
		}
	})
}

// TestSSESlowViewerMemory: the live events waiting for a viewer that does
// not keep up are bounded in bytes, not only in number: a client that stops
// reading while its session streams large events (a tool's large output
// goes out as deltas up to the max payload, 1 MiB) does not hold hundreds
// of megabytes until its write times out. It drops them and reads them back
// from the stream, as it does past viewerQueue events.
func TestSSESlowViewerMemory(t *testing.T) {
	// 64 live events of 256 KiB while the viewer is stuck (16 MiB): the
	// bytes bound holds them; 2,000 of a few hundred bytes (under 1 MiB):
	// the count bound does.
	t.Run("large", func(t *testing.T) { slowViewerHolds(t, 64, 256<<10) })
	t.Run("many", func(t *testing.T) { slowViewerHolds(t, 2000, 100) })
}

// slowViewerHolds publishes n live deltas of size bytes while the session's
// one viewer is stuck, and checks what waits for it: at most viewerQueue
// frames and viewerQueueBytes (a viewer past either drops its queue and
// catches up from the stream).
func slowViewerHolds(t *testing.T, n, size int) {
	ctx := context.Background()
	bus, err := Open(ctx, WithDurable(Durable{Memory: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close(ctx)
	returned, stop := stuckViewer(t, bus, WithWriteTimeout(time.Hour), true)
	defer stop()
	defer func() { bus.Close(ctx); <-returned }()

	p := bus.Publisher()
	text := strings.Repeat("y", size)
	for i := range n {
		d := events.Text(text)
		p.Observe(&events.Event{Version: events.Version, Type: events.TypeDelta, Session: "stuck", Call: "live", Tool: "t",
			Seq: uint64(i + 1), Time: time.Now(), Delta: &d})
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	<-bus.js.PublishAsyncComplete()
	info, err := bus.js.Stream(ctx, bus.durable.Stream)
	if err != nil {
		t.Fatal(err)
	}
	end := info.CachedInfo().State.LastSeq
	for deadline := time.Now().Add(10 * time.Second); bus.hub.last.Load() < end; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the shared consumer delivered up to %d of %d", bus.hub.last.Load(), end)
		}
	}
	bus.hub.mu.Lock()
	var queued, frames, viewers int
	for v := range bus.hub.viewers[events.EncodeToken("stuck")] {
		viewers++
		v.mu.Lock()
		for _, f := range v.q {
			queued += len(f.b)
		}
		frames += len(v.q)
		v.mu.Unlock()
	}
	bus.hub.mu.Unlock()
	if viewers != 1 {
		t.Fatalf("%d viewers of the session, want the stuck one", viewers)
	}
	if frames > viewerQueue || queued > viewerQueueBytes {
		t.Fatalf("a stuck viewer holds %d live frames of %d bytes in all: want at most %d frames and %d bytes", frames, queued, viewerQueue, viewerQueueBytes)
	}
}

// TestSSECatchUpHoldsOneBatch: a viewer catching up holds one direct get's
// worth of frames while it writes them, not the batch's messages (whose
// parsed headers are several times their data). Viewers whose clients read
// nothing, blocked writing their history, each hold a little more than
// getBytes; they used to hold about 330 kB each (256 messages and a 64 kB
// buffer), and 2,000 viewers catching up 1.2 GB. Nor does a catch-up add a
// subscription on the server: each change to the subscriptions takes the
// lock that routing every publish reads, and empties its cache.
func TestSSECatchUpHoldsOneBatch(t *testing.T) {
	ctx := context.Background()
	bus, err := Open(ctx, WithDurable(Durable{Memory: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close(ctx)
	// 4,000 small events: 800 kB of history, far more than a socket takes.
	p := bus.Publisher()
	for i := range 4000 {
		p.Observe(&events.Event{Version: events.Version, Type: events.TypeProgress, Session: "hist", Call: "c", Tool: "t",
			Seq: uint64(i + 1), Time: time.Now(), Progress: &events.Progress{Message: strings.Repeat("p", 100)}})
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	<-bus.js.PublishAsyncComplete()

	fc := &flushCounter{}
	started, finished := &fc.started, &fc.finished
	srv := httptest.NewUnstartedServer(fc.wrap(bus.SSEHandler(WithWriteTimeout(time.Hour))))
	srv.Listener = smallBuffers{srv.Listener}
	srv.Start()
	defer srv.Close()

	// A first viewer (of another session) starts what viewers share.
	first, err := http.Get(srv.URL + "?session=other")
	if err != nil {
		t.Fatal(err)
	}
	defer first.Body.Close()
	if line, err := bufio.NewReader(first.Body).ReadString('\n'); err != nil || !strings.HasPrefix(line, "retry: ") {
		t.Fatalf("%q %v", line, err)
	}
	// Its first write is over: the client has its data as the handler
	// returns from the write.
	for deadline := time.Now().Add(10 * time.Second); started.Load() != finished.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first viewer's write never ended")
		}
	}
	subs := bus.srv.NumSubscriptions()

	const n = 20
	before := liveHeap()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.(*net.TCPConn).SetReadBuffer(4 << 10)
		fmt.Fprintf(c, "GET /?session=hist HTTP/1.1\r\nHost: x\r\n\r\n")
		conns = append(conns, c)
	}
	// Every handler blocked: n flushes under way, and none ends for a while.
	for deadline := time.Now().Add(20 * time.Second); ; {
		s, f := started.Load(), finished.Load()
		if s-f == n {
			time.Sleep(200 * time.Millisecond)
			if started.Load() == s && finished.Load() == f {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d handlers blocked writing", s-f, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A subscription a viewer would make per catch-up shows as n more; the
	// shared consumer recreating its own on a busy machine (an ordered
	// consumer does after a missed heartbeat) as one.
	if more := int(bus.srv.NumSubscriptions()) - int(subs); more > 1 {
		t.Errorf("%d viewers catching up added %d subscriptions on the server, want none (one at most, the shared consumer's)", n, more)
	}
	held := (int64(liveHeap()) - int64(before)) / n
	t.Logf("a viewer blocked writing its history holds %d kB", held>>10)
	if held > 2*getBytes+32<<10 {
		t.Errorf("a viewer blocked writing its history holds %d kB, want at most about one direct get's worth (%d kB)", held>>10, getBytes>>10)
	}
}

// liveHeap is the heap in use once garbage is collected.
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
