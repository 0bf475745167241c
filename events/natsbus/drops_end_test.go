package natsbus_test

import (
	"context"
	"sync"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// TestObserverDropsAtTheEndToldByTheResult: progress an asynchronous
// observer's queue could not take after the last progress event it got,
// with nothing after it but the result, is told in that result
// (Result.Dropped): what the observer saw plus every count it was told adds
// up to what the tool reported. The NATS publisher beside it, which dropped
// nothing, gets every progress event and a result that tells no drops (the
// count goes on the slow observer's copy), and the model-visible content is
// the deltas as ever.
func TestObserverDropsAtTheEndToldByTheResult(t *testing.T) {
	bus := natstest.Bus(t)
	unblock, taken := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	var slowEvs []*events.Event
	slow := toolkit.ObserverFunc(func(ev *events.Event) {
		once.Do(func() { close(taken) }) // its mailbox holds nothing more: the burst queues from empty
		<-unblock
		mu.Lock()
		slowEvs = append(slowEvs, ev)
		mu.Unlock()
	})
	const queue, burst = 8, 100
	tk := kit(t, bus, toolkit.WithObserver(slow), toolkit.WithObserverQueue(queue))
	burstDone := make(chan struct{})
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "chatty"}, func(ctx context.Context, _ struct{}) (string, error) {
		<-taken // the slow observer is stuck on the start event
		em := stream.From(ctx)
		for i := range burst {
			em.Step("item", i, burst)
		}
		close(burstDone)
		return "done", nil // no progress after the burst: only the result can tell the drops
	}))
	col := subscribe(t, bus, bus.Subjects().Session("end"))
	sess, _ := tk.Session("end")
	run := sess.Start(context.Background(), []toolkit.Call{{ID: "1", Name: "chatty"}})
	testutil.WaitFor(t, burstDone, "the burst")
	close(unblock)
	rs := run.Wait() // the slow observer has taken the result
	if rs[0].State != events.StateSuccess || events.ContentText(rs[0].Content) != "done" {
		t.Fatalf("result %s %q, want success \"done\"", rs[0].State, events.ContentText(rs[0].Content))
	}

	mu.Lock()
	got := slowEvs
	mu.Unlock()
	var seen, told uint64
	var res *events.Event
	for _, ev := range got {
		switch ev.Type {
		case events.TypeProgress:
			seen++
			told += ev.Progress.Dropped
		case events.TypeResult:
			res = ev
		}
	}
	if res == nil || got[len(got)-1] != res {
		t.Fatalf("the slow observer did not get the result last (%d events)", len(got))
	}
	dropped := tk.Stats().DroppedProgress
	if dropped != burst-queue || told != 0 {
		t.Fatalf("%d progress events dropped for the slow observer, %d told on progress events; want %d, all after its last progress", dropped, told, burst-queue)
	}
	if res.Result.Dropped != dropped || seen+told+res.Result.Dropped != burst {
		t.Fatalf("the slow observer saw %d progress events, was told of %d drops by them and %d by the result (%d dropped); want %d in all",
			seen, told, res.Result.Dropped, dropped, burst)
	}
	if events.ContentText(res.Result.Content) != "done" {
		t.Fatalf("the result's content %q, want the deltas' \"done\"", events.ContentText(res.Result.Content))
	}
	// On the wire, and back: the count is in the result's JSON, in the
	// schema, and decodes to the same.
	wire := events.AppendJSON(nil, res)
	testutil.CheckEvent(t, wire)
	if back, err := events.Decode(wire); err != nil || back.Result.Dropped != dropped {
		t.Fatalf("decoded %+v, %v: want dropped %d", back, err, dropped)
	}

	evs := col.waitUntil(t, "the result on NATS", func(evs []*events.Event) bool { return countType(evs, events.TypeResult) == 1 })
	checkCalls(t, evs)
	var onNATS uint64
	for _, ev := range evs {
		switch ev.Type {
		case events.TypeProgress:
			onNATS++
			if ev.Progress.Dropped != 0 {
				t.Fatalf("progress on NATS tells %d drops; the publisher dropped none", ev.Progress.Dropped)
			}
		case events.TypeResult:
			if ev.Result.Dropped != 0 {
				t.Fatalf("the result on NATS tells %d drops; the publisher dropped none (the slow observer's count is its own)", ev.Result.Dropped)
			}
		}
	}
	if onNATS != burst {
		t.Fatalf("%d progress events on NATS, want all %d", onNATS, burst)
	}
}
