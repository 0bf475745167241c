package natsbus_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// natsServer runs a standalone NATS server (the "other process" of a real
// deployment) on a fixed port and store, so that it can be stopped and
// started again.
type natsServer struct {
	t    testing.TB
	port int
	dir  string
	srv  *server.Server
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func startNATS(t testing.TB) *natsServer {
	n := &natsServer{t: t, port: freePort(t), dir: t.TempDir()}
	n.start()
	t.Cleanup(n.stop)
	return n
}

func (n *natsServer) start() {
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: n.port, JetStream: true, StoreDir: n.dir,
		NoLog: true, NoSigs: true, JetStreamMaxMemory: 64 << 20, JetStreamMaxStore: 1 << 30,
	})
	if err != nil {
		n.t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		n.t.Fatal("NATS server did not start")
	}
	n.srv = srv
}

func (n *natsServer) stop() {
	if n.srv != nil {
		n.srv.Shutdown()
		n.srv.WaitForShutdown()
		n.srv = nil
	}
}

func (n *natsServer) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.port) }

// TestNATSStoppedMidRun: the NATS server goes away in the middle of a run
// and comes back. Tools finish in their normal time with their results in
// process; afterwards the stream holds every event of the run exactly once.
func TestNATSStoppedMidRun(t *testing.T) {
	ns := startNATS(t)
	bus := natstest.Bus(t, natsbus.WithURL(ns.url()), natsbus.WithDurable(natsbus.Durable{}))
	tk := toolkit.New(toolkit.WithInlineObserver(bus.Publisher()), toolkit.WithFlushTimeout(200*time.Millisecond))
	defer tk.Close(context.Background())
	steps := 40
	if err := tk.Add(toolkit.MustTool(toolkit.Spec{Name: "ticker", ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (string, error) {
		em := stream.From(ctx)
		for i := 1; i <= steps; i++ {
			em.Step("tick", i, steps)
			fmt.Fprintf(em, "tick %d\n", i)
			time.Sleep(10 * time.Millisecond) // a tool doing real work takes time
		}
		return "done", nil
	})); err != nil {
		t.Fatal(err)
	}
	sess, _ := tk.Session("outage")
	calls := make([]toolkit.Call, 4)
	for i := range calls {
		calls[i] = toolkit.Call{ID: fmt.Sprintf("t%d", i), Name: "ticker"}
	}
	start := time.Now()
	run := sess.Start(context.Background(), calls)
	time.Sleep(100 * time.Millisecond)
	ns.stop() // NATS goes away mid-run
	time.Sleep(300 * time.Millisecond)
	ns.start() // and comes back
	rs := run.Wait()
	took := time.Since(start)
	for _, r := range rs {
		if r.State != events.StateSuccess || r.Text() == "" {
			t.Fatalf("%s: %s %q", r.Call.ID, r.State, r.Text())
		}
	}
	// 40 ticks of 10 ms: about 0.4 s of work. The outage must not add more
	// than the flush timeout.
	if took > 5*time.Second {
		t.Fatalf("the run took %v", took)
	}

	// Every event, stored once: read the whole stream back.
	var mu sync.Mutex
	var got []*events.Event
	seen := map[uint64]bool{}
	want := 1 + steps + steps + 1 + 1 // per call: start, progress and delta per tick, the returned text, result
	total := want * len(calls)
	complete := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop, err := bus.Replay(ctx, bus.Subjects().Session("outage"), 0, func(seq uint64, ev *events.Event) {
		mu.Lock()
		defer mu.Unlock()
		if seen[seq] {
			t.Errorf("stream sequence %d delivered twice", seq)
		}
		seen[seq] = true
		got = append(got, ev)
		if len(got) == total {
			close(complete)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	// A publish lost on the wire as the server went down is retried when its
	// acknowledgement fails, which can be after the run's results are back:
	// wait for the stream to hold everything, bounded.
	select {
	case <-complete:
	case <-time.After(30 * time.Second):
		mu.Lock()
		n := len(got)
		mu.Unlock()
		t.Fatalf("%d of %d events reached the stream (publisher stats %+v)", n, total, bus.Publisher().Stats())
	}
	time.Sleep(100 * time.Millisecond) // a duplicate would show up now
	// A publish retried after the outage may land after later ones: order
	// each call's events by their sequence, then every one must be there once.
	byCall := map[string][]*events.Event{}
	for _, ev := range got {
		byCall[ev.Call] = append(byCall[ev.Call], ev)
	}
	for id, list := range byCall {
		slices.SortFunc(list, func(a, b *events.Event) int { return int(a.Seq) - int(b.Seq) })
		if len(list) != want {
			t.Fatalf("%s: %d events in the stream, want %d (stats %+v)", id, len(list), want, bus.Publisher().Stats())
		}
		for i, ev := range list {
			if ev.Seq != uint64(i+1) {
				t.Fatalf("%s: sequence %d at position %d", id, ev.Seq, i)
			}
		}
	}
	if len(byCall) != len(calls) {
		t.Fatalf("events of %d calls", len(byCall))
	}
	t.Logf("publisher after the outage: %+v", bus.Publisher().Stats())
}
