package toolkit_test

import (
	"context"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// TestReturnFlushesACutCharacter: the first bytes of a character that a
// handler's last Write cut go out when the handler returns, before what it
// returns (stream.Emitter.Flush: "the toolkit flushes each call's emitter
// when its handler returns"), on the first attempt and on a retry's, whose
// emitter is its own.
func TestReturnFlushesACutCharacter(t *testing.T) {
	for _, attempts := range []int{1, 2} {
		rec := &testutil.Recorder{}
		tk := testutil.Kit(t, toolkit.WithObserver(rec))
		testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "cat"}, func(ctx context.Context, _ none) (string, error) {
			if _, err := stream.From(ctx).Write([]byte("caf\xc3")); err != nil {
				return "", err
			}
			return "\xa9!", nil
		}))
		if err := tk.Use(toolkit.Interceptor{Name: "again", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
			out := next(ctx, inv)
			for range attempts - 1 {
				out = next(ctx, inv)
			}
			return out
		}}); err != nil {
			t.Fatal(err)
		}
		r := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("1", "cat", `{}`)})[0]
		if r.State != events.StateSuccess || r.Text() != "café!" {
			t.Errorf("%d attempts: %s %v %q, want café!", attempts, r.State, r.Err, r.Text())
		}
		testutil.CheckDeltasAddUp(t, rec, r)
	}
}
