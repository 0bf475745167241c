package toolkit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// TestHandlerContextBehavesLikeWithDeadline: the context a handler gets
// reports its deadline, ends with context.DeadlineExceeded, and cancels the
// contexts the handler derives from it.
func TestHandlerContextBehavesLikeWithDeadline(t *testing.T) {
	tk := testutil.Kit(t)
	type seen struct {
		deadline   time.Time
		hasDL      bool
		err, cause error
		childErr   error
		afterFunc  bool
	}
	got := make(chan seen, 1)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "wait", Timeout: 30 * time.Millisecond}, func(ctx context.Context, _ none) (string, error) {
		var s seen
		s.deadline, s.hasDL = ctx.Deadline()
		child, cancel := context.WithCancel(ctx)
		defer cancel()
		timed, cancel2 := context.WithTimeout(ctx, time.Hour)
		defer cancel2()
		fired := make(chan struct{})
		stop := context.AfterFunc(ctx, func() { close(fired) })
		defer stop()
		<-ctx.Done()
		<-child.Done()
		<-timed.Done()
		<-fired
		s.err, s.cause, s.childErr, s.afterFunc = ctx.Err(), context.Cause(ctx), timed.Err(), true
		got <- s
		return "", ctx.Err()
	}))
	before := time.Now()
	r := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("1", "wait", ``)})[0]
	s := <-got
	if !s.hasDL || s.deadline.Before(before.Add(30*time.Millisecond)) || s.deadline.After(time.Now()) {
		t.Errorf("deadline %v (ok %v), run started %v", s.deadline, s.hasDL, before)
	}
	if s.err != context.DeadlineExceeded || !errors.Is(s.cause, context.DeadlineExceeded) || s.childErr != context.DeadlineExceeded || !s.afterFunc {
		t.Errorf("err %v cause %v child %v afterFunc %v", s.err, s.cause, s.childErr, s.afterFunc)
	}
	if r.State != events.StateTimeout {
		t.Errorf("state %s", r.State)
	}
}

// TestParentDeadlineWins: a caller's deadline earlier than the tool's shows
// through, and its expiry interrupts the call rather than timing it out.
func TestParentDeadlineWins(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "wait", Timeout: time.Hour}, func(ctx context.Context, _ none) (string, error) {
		dl, ok := ctx.Deadline()
		if !ok || time.Until(dl) > time.Minute {
			return "", errors.New("the caller's deadline is not visible")
		}
		<-ctx.Done()
		return "", ctx.Err()
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	r := testutil.Session(t, tk, "s").Run(ctx, []toolkit.Call{testutil.Call("1", "wait", ``)})[0]
	if r.State != events.StateInterrupted || !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Fatalf("%s %v", r.State, r.Err)
	}
}

// TestCancelledParentAbandonsStuckHandler: when the caller cancels and a
// handler ignores it, Wait returns after the grace period anyway.
func TestCancelledParentAbandonsStuckHandler(t *testing.T) {
	tk := testutil.Kit(t, toolkit.WithCancelGrace(10*time.Millisecond))
	started, release := make(chan struct{}), make(chan struct{})
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "stuck"}, func(ctx context.Context, _ none) (string, error) {
		close(started)
		<-release
		return "late", nil
	}))
	ctx, cancel := context.WithCancel(context.Background())
	run := testutil.Session(t, tk, "s").Start(ctx, []toolkit.Call{testutil.Call("1", "stuck", ``)})
	testutil.WaitFor(t, started, "handler start")
	cancel()
	testutil.WaitFor(t, run.Done(), "the run to end without the stuck handler")
	if r := run.Wait()[0]; r.State != events.StateInterrupted || !errors.Is(r.Err, context.Canceled) {
		t.Fatalf("%s %v", r.State, r.Err)
	}
	close(release)
}

func TestRunCancel(t *testing.T) {
	tk := testutil.Kit(t)
	started := make(chan struct{})
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "wait"}, func(ctx context.Context, _ none) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	}))
	run := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("1", "wait", ``), testutil.Call("2", "wait", ``)})
	testutil.WaitFor(t, started, "first call")
	run.Cancel()
	rs := run.Wait()
	for _, r := range rs {
		if r.State != events.StateInterrupted || !errors.Is(r.Err, context.Canceled) {
			t.Errorf("%s: %s %v", r.Call.ID, r.State, r.Err)
		}
	}
	if !rs[1].Started.IsZero() {
		t.Error("the second call started after Cancel")
	}
}

// TestCloseWaitsForAbandonedHandlers: Close reports a handler that is still
// running after its call was abandoned, and succeeds once it returns. The
// call is abandoned once its handler runs (a timeout of its own could end
// it before the handler starts on a loaded machine, leaving nothing to
// wait for).
func TestCloseWaitsForAbandonedHandlers(t *testing.T) {
	tk := toolkit.New(toolkit.WithCancelGrace(time.Millisecond))
	release, started := make(chan struct{}), make(chan struct{})
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "stuck"}, func(ctx context.Context, _ none) (string, error) {
		close(started)
		<-release // ignores its context
		return "", nil
	}))
	run := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("1", "stuck", ``)})
	testutil.WaitFor(t, started, "the handler to start")
	run.Cancel()
	if r := run.Wait()[0]; r.State != events.StateInterrupted {
		t.Fatalf("%s", r.State)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := tk.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close with a handler still running: %v", err)
	}
	close(release)
	if err := tk.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
