package natsbus

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// askGate is an inline observer and progress gate whose answer is decided
// by accept, given how many times it was asked (from 1).
type askGate struct {
	accept func(asked int) bool
	result chan struct{} // closed when it observes a result
	mu     sync.Mutex
	asked  int
	evs    []*events.Event
}

func newAskGate(accept func(asked int) bool) *askGate {
	return &askGate{accept: accept, result: make(chan struct{})}
}

func (g *askGate) AcceptProgress() bool {
	g.mu.Lock()
	g.asked++
	n := g.asked
	g.mu.Unlock()
	return g.accept(n)
}

func (g *askGate) Observe(ev *events.Event) {
	g.mu.Lock()
	g.evs = append(g.evs, ev)
	g.mu.Unlock()
	if ev.Type == events.TypeResult {
		close(g.result)
	}
}

// TestStatsWithAGateAfterThePublisher: the publisher is asked first
// (an observer with AcceptProgress) and declines, then another gate is asked. Its
// decline is not a drop until the other gate declines too; when that one
// accepts, the event is built and handed to the publisher all the same,
// which queues it (its queue drained meanwhile) or drops it. Either way
// Stats.DroppedProgress counts each progress event the publisher did not
// publish exactly once, and equals the drops a real NATS subscriber is
// told; received plus told adds up to what the tool reported, also when
// the event the publisher drops carries the toolkit's own count.
func TestStatsWithAGateAfterThePublisher(t *testing.T) {
	const limit = 3
	t.Run("dropped at the full queue", func(t *testing.T) {
		// Progress 1-3 fill the queue (NATS is behind: the publishing
		// goroutine waits); 4-8 neither gate takes (not built: the
		// toolkit's count of 5), 9-20 the other gate takes and the
		// publisher drops, the first of them carrying the toolkit's 5.
		const declined, burst = 5, 20
		g := newAskGate(func(asked int) bool { return asked > declined })
		received, told, stats := gateAfterPublisher(t, limit, burst, g, nil)
		if received != limit || told != burst-limit || stats != burst-limit {
			t.Fatalf("NATS got %d progress events and was told of %d drops, the publisher counted %d; want %d, %d and %d (received plus told = %d reported)",
				received, told, stats, limit, burst-limit, burst-limit, burst)
		}
	})
	t.Run("queue drained before it is observed", func(t *testing.T) {
		// Progress 4 finds the queue full: the publisher declines; the
		// other gate lets NATS catch up, then accepts, and the publisher
		// queues it: nothing is dropped.
		const burst = limit + 1
		var p *Publisher
		var once sync.Once
		g := newAskGate(func(int) bool {
			once.Do(func() {
				go p.run()
				if err := p.Flush(context.Background()); err != nil {
					t.Error(err)
				}
			})
			return true
		})
		received, told, stats := gateAfterPublisher(t, limit, burst, g, &p)
		if received != burst || told != 0 || stats != 0 {
			t.Fatalf("NATS got %d progress events and was told of %d drops, the publisher counted %d; want %d, 0 and 0",
				received, told, stats, burst)
		}
	})
}

// gateAfterPublisher runs a tool that reports burst progress events on a
// toolkit whose inline observers are a publisher with a queue of limit
// progress events, not publishing until the burst is done (unless the gate
// starts it: *pp is set for it), then g. It returns the progress events a
// NATS subscriber received, the drops it was told (on progress and on the
// result) and the publisher's Stats.DroppedProgress.
func gateAfterPublisher(t *testing.T, limit, burst int, g *askGate, pp **Publisher) (received, told, stats uint64) {
	ctx := context.Background()
	bus, err := Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close(ctx)
	got, arrived, unsubscribe := subscribeCall(t, bus, "gates")
	defer unsubscribe()

	p := makePublisher(bus, limit)
	if pp != nil {
		*pp = p
	}
	tk := toolkit.New(toolkit.WithInlineObserver(p), toolkit.WithInlineObserver(g))
	defer tk.Close(ctx)
	if err := tk.Add(toolkit.MustTool(toolkit.Spec{Name: "chatty"}, func(ctx context.Context, _ struct{}) (string, error) {
		em := stream.From(ctx)
		for i := range burst {
			em.Step("item", i, burst)
		}
		return "done", nil
	})); err != nil {
		t.Fatal(err)
	}
	sess, _ := tk.Session("gates")
	run := sess.Start(ctx, []toolkit.Call{{ID: "1", Name: "chatty"}})
	// The result reaches the observers before the batch flushes: the
	// publisher, not running, holds it.
	testutil.WaitFor(t, g.result, "the result at the gate")
	if pp == nil {
		go p.run()
	}
	defer p.close(ctx)
	if rs := run.Wait(); rs[0].State != events.StateSuccess || events.ContentText(rs[0].Content) != "done" {
		t.Fatalf("result %s %q, want success \"done\"", rs[0].State, events.ContentText(rs[0].Content))
	}
	testutil.WaitFor(t, arrived, "the result on NATS")
	for i, ev := range got() {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("event %d on NATS has seq %d: the wire must be gap-free", i, ev.Seq)
		}
		switch ev.Type {
		case events.TypeProgress:
			received++
			told += ev.Progress.Dropped
		case events.TypeResult:
			told += ev.Result.Dropped
			if events.ContentText(ev.Result.Content) != "done" {
				t.Fatalf("the result's content on NATS %q, want the deltas' \"done\"", events.ContentText(ev.Result.Content))
			}
		}
	}
	if received+told != uint64(burst) {
		t.Errorf("NATS got %d progress events and was told of %d drops: %d, but the tool reported %d", received, told, received+told, burst)
	}
	return received, told, p.Stats().DroppedProgress
}

// subscribeCall subscribes to the events of session, a session of one call,
// on bus, checking each against the schema. got returns the events
// received; arrived is closed when the call's result is received.
func subscribeCall(t *testing.T, bus *Bus, session string) (got func() []*events.Event, arrived <-chan struct{}, unsubscribe func() error) {
	t.Helper()
	var mu sync.Mutex
	var evs []*events.Event
	result := make(chan struct{})
	sub, err := bus.Conn().Subscribe(bus.Subjects().Session(session), func(m *nats.Msg) {
		testutil.CheckEvent(t, m.Data)
		ev, err := events.Decode(m.Data)
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		evs = append(evs, ev)
		mu.Unlock()
		if ev.Type == events.TypeResult {
			close(result)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	bus.Conn().Flush()
	got = func() []*events.Event {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(evs)
	}
	return got, result, sub.Unsubscribe
}
