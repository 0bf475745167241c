package toolkit_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/leak"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// TestCancelWithCallsQueued: cancelling a batch while calls of the running
// stage wait for a slot reports them at once as interrupted, never started,
// with the cancellation as the cause; the running call is interrupted too.
func TestCancelWithCallsQueued(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithMaxParallel(1), toolkit.WithObserver(rec))
	entered := make(chan struct{})
	var ran atomic.Int32
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "wait", ConcurrencySafe: true}, func(ctx context.Context, _ none) (string, error) {
		if ran.Add(1) == 1 {
			close(entered)
		}
		<-ctx.Done()
		return "", ctx.Err()
	}))
	b := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{
		testutil.Call("1", "wait", `{}`), testutil.Call("2", "wait", `{}`), testutil.Call("3", "wait", `{}`)})
	testutil.WaitFor(t, entered, "the first call to run")
	b.Cancel()
	testutil.WaitFor(t, b.Done(), "the batch to end")
	rs := b.Wait()
	if r := rs[0]; r.State != events.StateInterrupted || !errors.Is(r.Err, context.Canceled) {
		t.Errorf("the running call: %s %v", r.State, r.Err)
	}
	for _, r := range rs[1:] {
		if r.State != events.StateInterrupted || !errors.Is(r.Err, toolkit.ErrInterrupted) || !errors.Is(r.Err, context.Canceled) ||
			!strings.Contains(r.Text(), "cancelled before the call started") || !r.Started.IsZero() {
			t.Errorf("queued call %s: %s %v %q", r.Call.ID, r.State, r.Err, r.Text())
		}
		checkNeverStarted(t, rec, r.Call.ID)
	}
	if ran.Load() != 1 {
		t.Errorf("%d calls ran", ran.Load())
	}
	if !errors.Is(b.Err(), context.Canceled) {
		t.Errorf("Batch.Err() = %v", b.Err())
	}
	rec.Check(t)
}

// TestTakeOverStuckToo: the goroutine that took over driving from a driver
// stuck in a deaf handler gets stuck in turn in the next call of the same
// stage (one runner at a time; its longer timeout kept it in the queue): it
// is given up too, and a third goroutine drives on to the serial call after
// them. The batch ends on time; nothing is left running once the handlers
// return. (Should the take-over come only after the second call's deadline,
// a slow machine, the call times out without running: the same result.)
func TestTakeOverStuckToo(t *testing.T) {
	t.Cleanup(leak.Check(t))
	entered := make(chan string, 2)
	tk := testutil.Kit(t, toolkit.WithMaxParallel(1), toolkit.WithCancelGrace(10*time.Millisecond))
	release := releaseAtEnd(t)
	deaf := func(ctx context.Context, _ none) (string, error) {
		info, _ := toolkit.CallInfoFrom(ctx)
		entered <- info.CallID
		<-release
		return "too late", nil
	}
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "deaf", ConcurrencySafe: true, Timeout: 20 * time.Millisecond}, deaf),
		testutil.Tool(t, toolkit.Spec{Name: "deafer", ConcurrencySafe: true, Timeout: 200 * time.Millisecond}, deaf),
		testutil.Tool(t, toolkit.Spec{Name: "next"}, func(context.Context, none) (string, error) { return "next ran", nil }))
	b := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{
		testutil.Call("1", "deaf", `{}`), testutil.Call("2", "deafer", `{}`), testutil.Call("3", "next", `{}`)})
	select {
	case <-b.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the batch did not end while two drivers in turn were stuck")
	}
	rs := b.Wait()
	if r := rs[0]; r.State != events.StateTimeout || r.Text() != `Error: tool "deaf" timed out after 20ms` {
		t.Errorf("call 1: %s %q", r.State, r.Text())
	}
	if r := rs[1]; r.State != events.StateTimeout || !strings.HasPrefix(r.Text(), `Error: tool "deafer" timed out after 200ms`) {
		t.Errorf("call 2: %s %q", r.State, r.Text())
	}
	if rs[2].State != events.StateSuccess || rs[2].Text() != "next ran" {
		t.Errorf("the call after them: %s %q", rs[2].State, rs[2].Text())
	}
	if id := <-entered; id != "1" {
		t.Errorf("the first handler to run was call %s's", id)
	}
	close(release)
}

// TestResumeAfterTheBatchEnded: an interceptor that suspended its call and
// ignores the wait's end is left behind at the cancellation's grace; when
// it resumes later, the batch is over: the context resume gives is already
// done, and whatever the chain does then reaches nothing.
func TestResumeAfterTheBatchEnded(t *testing.T) {
	t.Cleanup(leak.Check(t))
	tk := testutil.Kit(t, toolkit.WithCancelGrace(10*time.Millisecond))
	var ran atomic.Int32
	testutil.Add(t, tk, countTool(t, "a", &ran))
	suspended, release := make(chan struct{}), releaseAtEnd(t)
	resumed := make(chan error, 1)
	late := make(chan toolkit.Result, 1)
	if err := tk.Use(toolkit.Interceptor{Name: "deaf", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		_, resume := inv.Suspend("approval")
		close(suspended)
		<-release // ignores the wait's end
		rctx := resume()
		resumed <- rctx.Err()
		out := next(rctx, inv)
		late <- out
		return out
	}}); err != nil {
		t.Fatal(err)
	}
	b := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("1", "a", `{}`)})
	testutil.WaitFor(t, suspended, "the call to wait")
	b.Cancel()
	select {
	case <-b.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the batch waits for an interceptor that ignores the end of its wait")
	}
	r := b.Wait()[0]
	if r.State != events.StateInterrupted || !errors.Is(r.Err, context.Canceled) {
		t.Errorf("%s %v", r.State, r.Err)
	}
	close(release)
	if err := <-resumed; err == nil {
		t.Error("resume after the batch ended gave a live context")
	}
	if out := <-late; out.State == events.StateSuccess || ran.Load() != 0 {
		t.Errorf("the late chain: %s, the tool ran %d times", out.State, ran.Load())
	}
	if got := b.Wait()[0]; got.State != r.State || got.Text() != r.Text() {
		t.Errorf("the result changed after the end: %s %q", got.State, got.Text())
	}
}

// TestInterceptorAttemptTimeout: a deadline an interceptor sets on one
// attempt (shorter than the call's) that passes is a timeout, its message
// the time the call ran, while the batch goes on.
func TestInterceptorAttemptTimeout(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "slow", Timeout: time.Minute}, func(ctx context.Context, _ none) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}))
	if err := tk.Use(toolkit.Interceptor{Name: "attempt", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		actx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		return next(actx, inv)
	}}); err != nil {
		t.Fatal(err)
	}
	r := testutil.Run(t, tk, "s", testutil.Call("1", "slow", `{}`))[0]
	if r.State != events.StateTimeout || !errors.Is(r.Err, toolkit.ErrTimeout) || !errors.Is(r.Err, context.DeadlineExceeded) ||
		!strings.HasPrefix(r.Text(), `Error: tool "slow" timed out after `) || strings.Contains(r.Text(), "1m0s") {
		t.Errorf("%s %v %q", r.State, r.Err, r.Text())
	}
}
