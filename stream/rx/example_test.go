package rx_test

import (
	"context"
	"fmt"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/stream/rx"
	"github.com/toolstream/toolstream/toolkit"
)

// countTool is a tool that reports three steps and streams three numbers.
var countTool = toolkit.MustTool(toolkit.Spec{Name: "count"}, func(ctx context.Context, _ struct{}) (string, error) {
	em := stream.From(ctx)
	for i := 1; i <= 3; i++ {
		em.Step("counting", i, 3)
		fmt.Fprintf(em, "%d ", i)
	}
	return "done", nil
})

// In process, without NATS: a hub observes a toolkit; one view keeps the
// progress people watch, another rebuilds each result from its deltas.
func Example() {
	hub := &rx.Hub{}
	defer hub.Close()
	tk := toolkit.New(toolkit.WithObserver(hub))
	defer tk.Close(context.Background())
	tk.Add(countTool)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // ends the observables
	progress := rx.ProgressOnly(hub.Observable(ctx, rx.Filter{Session: "s"})).Observe()
	results := rx.Accumulate(ctx, hub.Observable(ctx, rx.Filter{Session: "s"})).Observe()

	sess, _ := tk.Session("s")
	sess.Run(ctx, []toolkit.Call{{ID: "c1", Name: "count"}})
	for range 3 {
		p := (<-progress).V.(*events.Event).Progress
		fmt.Printf("%s %.2f\n", p.Message, *p.Fraction)
	}
	r := (<-results).V.(rx.Rebuilt)
	fmt.Printf("%s: %q (mismatch: %q)\n", r.Call, events.ContentText(r.Content), r.Mismatch)
	// Output:
	// counting 0.33
	// counting 0.67
	// counting 1.00
	// c1: "1 2 3 done" (mismatch: "")
}

// From NATS: a session's model-visible events, replayed from the bus's
// stream after the run, in the order they were published. The numbers are
// stream sequences (the start and progress events the filter leaves out
// have theirs): a viewer that stops resumes with from = the last one + 1.
func ExampleReplay() {
	ctx := context.Background()
	bus, err := natsbus.Open(ctx, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	if err != nil {
		panic(err)
	}
	defer bus.Close(ctx)
	tk := toolkit.New(toolkit.WithInlineObserver(bus.Publisher()))
	defer tk.Close(ctx)
	tk.Add(countTool)
	sess, _ := tk.Session("s")
	sess.Run(ctx, []toolkit.Call{{ID: "c1", Name: "count"}})

	rctx, stop := context.WithCancel(ctx)
	replay, err := rx.Replay(rctx, bus, rx.Filter{Session: "s", Types: []events.Type{events.TypeDelta, events.TypeResult}}, 0)
	if err != nil {
		panic(err)
	}
	items := replay.Observe()
	for {
		ev := (<-items).V.(*events.Event)
		if ev.Type == events.TypeResult {
			fmt.Printf("%d result %q\n", ev.Stream, events.ContentText(ev.Result.Content))
			break
		}
		fmt.Printf("%d delta %q\n", ev.Stream, ev.Delta.Text)
	}
	stop()
	for range items { // completes once the replay has stopped
	}
	// Output:
	// 3 delta "1 "
	// 5 delta "2 "
	// 7 delta "3 "
	// 8 delta "done"
	// 9 result "1 2 3 done"
}
