package toolkit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// TestInterceptorCancelsItsOwnContext: an interceptor that ends the context
// it hands the rest of the chain (with a cause of its own: another attempt
// won, a per-call stop) while the batch goes on: the call is interrupted,
// and the model reads that cause; the result's error matches it. The
// handler that returned the context's error, and the interceptor asking
// ContextFailure, say the same.
func TestInterceptorCancelsItsOwnContext(t *testing.T) {
	won := errors.New("another attempt won")
	tk := testutil.Kit(t)
	entered := make(chan struct{}, 2)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "slow"}, func(ctx context.Context, _ none) (string, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	}))
	if err := tk.Use(toolkit.Interceptor{Name: "hedge", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		inner, cancel := context.WithCancelCause(ctx)
		switch inv.Call.ID {
		case "before": // ended before the tool runs
			cancel(won)
			return next(inner, inv)
		case "asked": // the interceptor words it itself
			cancel(won)
			return inv.ContextFailure(inner)
		case "live": // asked about a context nothing ended: a misuse, still worded
			defer cancel(nil)
			return inv.ContextFailure(inner)
		}
		go func() { <-entered; cancel(won) }()
		return next(inner, inv)
	}}); err != nil {
		t.Fatal(err)
	}
	if r := testutil.Run(t, tk, "s", testutil.Call("live", "slow", `{}`))[0]; r.State != events.StateInterrupted ||
		!errors.Is(r.Err, context.Canceled) || strings.Contains(r.Text(), "<nil>") {
		t.Errorf("ContextFailure of a live context: %s %v %q", r.State, r.Err, r.Text())
	}
	for _, id := range []string{"before", "asked", "while"} {
		r := testutil.Run(t, tk, "s", testutil.Call(id, "slow", `{}`))[0]
		if r.State != events.StateInterrupted || !errors.Is(r.Err, toolkit.ErrInterrupted) || !errors.Is(r.Err, won) ||
			!strings.Contains(r.Text(), won.Error()) || strings.Contains(r.Text(), "<nil>") {
			t.Errorf("call %s: %s %v %q", id, r.State, r.Err, r.Text())
		}
	}
}
