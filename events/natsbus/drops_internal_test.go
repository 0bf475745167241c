package natsbus

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events"
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
