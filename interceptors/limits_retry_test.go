package interceptors_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// A retried call counts once even when the attempt before it is still
// running: Timeout (inside Retry) gave up on an attempt whose handler
// ignores its context, and the retry passes CallLimits while that attempt
// has not come back. Before, CallLimits marked the call as counted only
// when the attempt returned, so the retry took a second place and, under
// a limit of 1, was refused by its own call.
func TestCallLimitsRetryWhileAnAttemptIsLeftBehind(t *testing.T) {
	tk := icKit(t, nil,
		interceptors.Retry(interceptors.RetryMaxAttempts(2), interceptors.RetryBackoff(time.Millisecond, time.Millisecond)),
		interceptors.Timeout(30*time.Millisecond, interceptors.TimeoutGrace(5*time.Millisecond)),
		interceptors.CallLimits(interceptors.PerTurn(1)),
	)
	left := make(chan struct{})
	n := &icCounter{}
	testutil.Add(t, tk, icTool(t, toolkit.Spec{Name: "slow"}, func(ctx context.Context) (string, error) {
		if n.inc() == 1 {
			defer close(left)
			<-ctx.Done()
			time.Sleep(200 * time.Millisecond) // ignores the cancellation for a while
			return "late", nil
		}
		return "ok", nil
	}))
	s := testutil.Session(t, tk, "s")
	res := s.Run(context.Background(), []toolkit.Call{testutil.Call("c", "slow", `{}`)})[0]
	<-left
	if res.State != events.StateSuccess || res.Text() != "ok" {
		t.Fatalf("the retry got %s %q, want success \"ok\"", res.State, res.Text())
	}
	if n.get() != 2 {
		t.Fatalf("the tool ran %d times, want 2", n.get())
	}
	// The call took one place: the next run of the session has its own.
	res = s.Run(context.Background(), []toolkit.Call{testutil.Call("d", "slow", `{}`)})[0]
	if res.State != events.StateSuccess {
		t.Fatalf("the next run: %s %q", res.State, res.Text())
	}
}
