package toolkit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// TestEmitterReset: a tool that relays another engine's stream can take back
// what it streamed (Emitter.Reset); the deltas still add up to the result,
// a later attempt can reset too, and a reset after the call ended is refused.
func TestEmitterReset(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithObserver(rec))
	late := make(chan *stream.Emitter, 2)
	testutil.Add(t, tk,
		testutil.Tool(t, toolkit.Spec{Name: "relay"}, func(ctx context.Context, _ none) (string, error) {
			em := stream.From(ctx)
			em.Text("lost piece ")
			if err := em.Reset(); err != nil {
				return "", err
			}
			em.Text("whole ")
			late <- em
			return "again", nil
		}),
	)
	attempts := 0
	if err := tk.Use(toolkit.Interceptor{Name: "twice", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		attempts++
		next(ctx, inv)
		return next(ctx, inv) // the second attempt's emitter is bound to its number
	}}); err != nil {
		t.Fatal(err)
	}
	r := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("c1", "relay", ``)})[0]
	if r.Text() != "whole again" {
		t.Fatalf("result %q, want %q", r.Text(), "whole again")
	}
	if got := testutil.Deltas(rec.Of("c1")); !events.EqualContent(got, r.Content) {
		t.Fatalf("deltas %+v != result %+v", got, r.Content)
	}
	resets := 0
	for _, ev := range rec.Of("c1") {
		if ev.Type == events.TypeDelta && ev.Reset {
			resets++
		}
	}
	// Two by the tool (one per attempt) and one by the engine for the second attempt.
	if resets != 3 {
		t.Fatalf("%d reset deltas, want 3", resets)
	}
	<-late
	em := <-late
	if err := em.Reset(); !errors.Is(err, stream.ErrCallFinished) {
		t.Fatalf("reset after the end: %v, want ErrCallFinished", err)
	}
	var nilEm *stream.Emitter
	if err := nilEm.Reset(); err != nil {
		t.Fatalf("nil emitter: %v", err)
	}
}
