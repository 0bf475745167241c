package natsbus

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// TestDropsAreExplicit: the publisher reports drops only through
// Progress.Dropped: the toolkit's count passes through, the publisher adds
// the progress it dropped itself (queue full), and a gap in the toolkit's
// sequence numbers is not taken for drops. The wire stays gap-free.
func TestDropsAreExplicit(t *testing.T) {
	ctx := context.Background()
	bus, err := Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close(ctx)
	var got []*events.Event
	recv := make(chan struct{}, 16)
	sub, err := bus.Conn().Subscribe(bus.Subjects().Session("d"), func(m *nats.Msg) {
		ev, err := events.Decode(m.Data)
		if err != nil {
			t.Error(err)
			return
		}
		got = append(got, ev) // one subscription delivers on one goroutine
		recv <- struct{}{}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	bus.Conn().Flush()

	// A publisher whose goroutine has not started: its queue of one
	// progress event fills and stays full.
	p := makePublisher(bus, 1)
	ev := func(seq uint64, typ events.Type) *events.Event {
		return &events.Event{Version: events.Version, Type: typ, Session: "d", Call: "c", Tool: "t", Seq: seq, Time: time.Now()}
	}
	start := ev(1, events.TypeStart)
	start.Start = &events.Start{}
	p1 := ev(2, events.TypeProgress)
	p1.Progress = &events.Progress{Message: "first", Dropped: 3} // the toolkit dropped 3 before it
	lost := ev(3, events.TypeProgress)
	lost.Progress = &events.Progress{Message: "lost"} // the queue is full: the publisher drops it
	delta := ev(4, events.TypeDelta)
	a := events.Text("a")
	delta.Delta = &a
	for _, e := range []*events.Event{start, p1, lost, delta} {
		p.Observe(e)
	}
	go p.run()
	defer p.close(ctx)
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	p2 := ev(9, events.TypeProgress) // a gap in the toolkit's numbers: not a drop
	p2.Progress = &events.Progress{Message: "second", Dropped: 2}
	res := ev(10, events.TypeResult)
	res.Result = &events.Result{State: events.StateSuccess, Content: []events.Part{a}}
	p.Observe(p2)
	p.Observe(res)
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	bus.Conn().Flush()
	for range 5 {
		select {
		case <-recv:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d events arrived", len(got))
		}
	}
	var seqs, dropped []uint64
	var messages []string
	for _, e := range got {
		seqs = append(seqs, e.Seq)
		if e.Type == events.TypeProgress {
			dropped = append(dropped, e.Progress.Dropped)
			messages = append(messages, e.Progress.Message)
		}
	}
	if !slices.Equal(seqs, []uint64{1, 2, 3, 4, 5}) || !slices.Equal(messages, []string{"first", "second"}) || !slices.Equal(dropped, []uint64{3, 3}) {
		t.Fatalf("seqs %v, progress %v with dropped %v; want 1..5, [first second], [3 3] (the toolkit's 3; its 2 plus the publisher's 1)", seqs, messages, dropped)
	}
	if s := p.Stats(); s.DroppedProgress != 1 {
		t.Fatalf("stats %+v: the publisher dropped 1", s)
	}
	if len(p.calls) != 0 {
		t.Fatalf("%d calls' state kept after their results", len(p.calls))
	}
}

// TestPublisherDropsAtTheEndToldByTheResult: when NATS is behind at the end
// of a call (the publisher's goroutine is not running: its queue of 3
// progress events fills and stays full), the progress dropped after the
// call's last published progress is told in the result on NATS
// (Result.Dropped): the toolkit's own count (progress no observer would
// take, not built) plus the publisher's (built for another observer, dropped
// at its full queue). Delivered progress plus every count told adds up to
// what the tool reported, whether the result is queued with the drops
// (late=false) or published after the publisher took them (late=true), and
// the model-visible result is still exactly the deltas.
func TestPublisherDropsAtTheEndToldByTheResult(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(map[bool]string{false: "result queued with the drops", true: "result after the drops were taken"}[late], func(t *testing.T) {
			publisherDropsAtTheEnd(t, late)
		})
	}
}

func publisherDropsAtTheEnd(t *testing.T, late bool) {
	const limit, accepted, burst = 3, 10, 50
	ctx := context.Background()
	bus, err := Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close(ctx)
	got, arrived, unsubscribe := subscribeCall(t, bus, "end")
	defer unsubscribe()

	p := makePublisher(bus, limit) // NATS is behind until p.run runs
	// The gate comes first, so the publisher is asked only once the gate
	// declines: progress 4 to 10 is built for the gate and dropped by the
	// publisher, 11 to 50 is built for no one.
	g := newAskGate(func(asked int) bool { return asked <= accepted })
	tk := toolkit.New(toolkit.WithInlineObserver(g), toolkit.WithInlineObserver(p))
	defer tk.Close(ctx)
	burstDone, resume := make(chan struct{}), make(chan struct{})
	if err := tk.Add(toolkit.MustTool(toolkit.Spec{Name: "chatty"}, func(ctx context.Context, _ struct{}) (string, error) {
		em := stream.From(ctx)
		for i := range burst {
			em.Step("item", i, burst)
		}
		close(burstDone)
		<-resume
		return "done", nil
	})); err != nil {
		t.Fatal(err)
	}
	sess, _ := tk.Session("end")
	run := sess.Start(ctx, []toolkit.Call{{ID: "1", Name: "chatty"}})
	testutil.WaitFor(t, burstDone, "the burst")
	started, closed := false, false
	startPublisher := func() {
		go p.run()
		started = true
	}
	defer func() {
		if !started {
			startPublisher()
		}
		if !closed {
			p.close(ctx)
		}
	}()
	if late {
		// The publisher catches up with the burst before the result: it
		// took the drops with its queue and keeps them for the call.
		startPublisher()
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	close(resume)
	testutil.WaitFor(t, g.result, "the result at the gate")
	if !late {
		startPublisher()
	}
	rs := run.Wait()
	if rs[0].State != events.StateSuccess || events.ContentText(rs[0].Content) != "done" {
		t.Fatalf("result %s %q, want success \"done\"", rs[0].State, events.ContentText(rs[0].Content))
	}
	testutil.WaitFor(t, arrived, "the result on NATS")

	// The toolkit's view: what the gate got.
	g.mu.Lock()
	atGate := g.evs
	g.mu.Unlock()
	var gateSeen uint64
	for _, ev := range atGate {
		if ev.Type == events.TypeProgress {
			gateSeen++
		}
	}
	gateRes := atGate[len(atGate)-1]
	if gateSeen != accepted || gateRes.Type != events.TypeResult || gateRes.Result.Dropped != burst-accepted {
		t.Fatalf("the gate saw %d progress events and a last %s event telling %v drops; want %d and a result telling the toolkit's %d",
			gateSeen, gateRes.Type, gateRes.Result, accepted, burst-accepted)
	}

	// NATS's view.
	var seqs []uint64
	var seen, told uint64
	var result *events.Event
	for _, ev := range got() {
		seqs = append(seqs, ev.Seq)
		switch ev.Type {
		case events.TypeProgress:
			seen++
			told += ev.Progress.Dropped
		case events.TypeResult:
			result = ev
		}
	}
	if want := uint64(1 + limit + 1 + 1); !slices.Equal(seqs, seqsTo(want)) {
		t.Fatalf("seqs on NATS %v, want 1..%d (start, %d progress, the delta, the result)", seqs, want, limit)
	}
	if seen != limit || told != 0 {
		t.Fatalf("%d progress events on NATS telling %d drops, want %d telling none: the drops all came after them", seen, told, limit)
	}
	if result.Result.Dropped != burst-limit || seen+told+result.Result.Dropped != burst {
		t.Fatalf("the result on NATS tells %d drops; want %d: the toolkit's %d and the publisher's %d, adding up to %d with the %d delivered",
			result.Result.Dropped, burst-limit, burst-accepted, accepted-limit, burst, seen)
	}
	if events.ContentText(result.Result.Content) != "done" {
		t.Fatalf("the result's content %q, want the deltas' \"done\"", events.ContentText(result.Result.Content))
	}
	if s := p.Stats(); s.DroppedProgress != burst-limit {
		t.Fatalf("the publisher counted %d drops, want %d", s.DroppedProgress, burst-limit)
	}
	closed = true
	if err := p.close(ctx); err != nil { // its goroutine is done: its state can be read
		t.Fatal(err)
	}
	if len(p.calls) != 0 || len(p.drops) != 0 {
		t.Fatalf("state kept after the result: %d calls, %d drop counts", len(p.calls), len(p.drops))
	}
}

func seqsTo(n uint64) []uint64 {
	s := make([]uint64, n)
	for i := range s {
		s[i] = uint64(i + 1)
	}
	return s
}
