package toolkit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

type withinKey struct{}

// within is an interceptor that puts a value in its context and runs the
// rest of the chain within d (grace < 0: the toolkit's).
func within(d, grace time.Duration) toolkit.Interceptor {
	return toolkit.Interceptor{Name: "within", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		return inv.Within(context.WithValue(ctx, withinKey{}, "seen"), d, grace, next)
	}}
}

// A pass's deadline is the handler's context's (Deadline, Err), its
// context keeps the interceptor's values, and a handler that honours it
// ends as the engine's timeout, worded with the pass's time.
func TestWithinPassDeadline(t *testing.T) {
	tk := testutil.Kit(t)
	if err := tk.Use(within(20*time.Millisecond, -1)); err != nil {
		t.Fatal(err)
	}
	var deadline time.Time
	var value any
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "wait"}, func(ctx context.Context, _ none) (string, error) {
		deadline, _ = ctx.Deadline()
		value = ctx.Value(withinKey{})
		<-ctx.Done()
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Errorf("the context ended with %v, want DeadlineExceeded", ctx.Err())
		}
		return "", ctx.Err()
	}))
	start := time.Now()
	r := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("c1", "wait", `{}`)})[0]
	if r.State != events.StateTimeout || !errors.Is(r.Err, toolkit.ErrTimeout) || !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Fatalf("got %s %v, want the engine's timeout", r.State, r.Err)
	}
	if !strings.Contains(r.Text(), `tool "wait" timed out after 20ms`) {
		t.Fatalf("the model reads %q", r.Text())
	}
	// The pass's deadline, 20ms after the pass began; the call's own is the
	// default, 2 minutes.
	if d := deadline.Sub(start); d < 20*time.Millisecond || d > time.Minute || value != "seen" {
		t.Fatalf("the handler's deadline was %v after the start, its value %v; want the pass's and the interceptor's value", d, value)
	}
}

// The call's own deadline, sooner than the pass's, ends the pass: the call
// times out after its own time.
func TestWithinCallDeadlineFirst(t *testing.T) {
	tk := testutil.Kit(t)
	if err := tk.Use(within(time.Hour, -1)); err != nil {
		t.Fatal(err)
	}
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "wait", Timeout: 20 * time.Millisecond}, func(ctx context.Context, _ none) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}))
	r := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("c1", "wait", `{}`)})[0]
	if r.State != events.StateTimeout || !strings.Contains(r.Text(), `tool "wait" timed out after 20ms`) {
		t.Fatalf("got %s %q, want the call's own timeout", r.State, r.Text())
	}
}

// A handler that ignores the pass's end is left behind after the grace
// given: the call is reported, and what the handler writes later is
// refused. Cancelling the batch ends a pass like a deadline, with the same
// grace, and the call is interrupted.
func TestWithinLeavesTheRestBehind(t *testing.T) {
	for _, tc := range []struct {
		name   string
		d      time.Duration
		cancel bool
		want   events.State
	}{
		{"deadline", 20 * time.Millisecond, false, events.StateTimeout},
		{"cancelled", time.Hour, true, events.StateInterrupted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk := testutil.Kit(t, toolkit.WithCancelGrace(time.Hour))
			if err := tk.Use(within(tc.d, 10*time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			started, release, late := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "deaf"}, func(ctx context.Context, _ none) (string, error) {
				close(started)
				<-release
				late <- stream.From(ctx).Text("too late")
				return "done", nil
			}))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b := testutil.Session(t, tk, "s").Start(ctx, []toolkit.Call{testutil.Call("c1", "deaf", `{}`)})
			testutil.WaitFor(t, started, "the handler")
			if tc.cancel {
				cancel()
			}
			testutil.WaitFor(t, b.Done(), "the batch (the toolkit's grace is an hour)")
			close(release)
			if r := b.Wait()[0]; r.State != tc.want || strings.Contains(r.Text(), "too late") {
				t.Fatalf("got %s %q, want %s", r.State, r.Text(), tc.want)
			}
			if err := <-late; !errors.Is(err, stream.ErrCallFinished) {
				t.Fatalf("a write after the call was reported: %v", err)
			}
		})
	}
}
