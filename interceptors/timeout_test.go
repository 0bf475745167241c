package interceptors_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

func timeoutCheck(t *testing.T, r toolkit.Result) {
	t.Helper()
	if r.State != events.StateTimeout || !errors.Is(r.Err, toolkit.ErrTimeout) || !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Fatalf("got %s %v, want a timeout matching ErrTimeout and DeadlineExceeded", r.State, r.Err)
	}
	if !strings.Contains(r.Text(), "timed out") {
		t.Fatalf("the model reads %q", r.Text())
	}
}

func TestTimeoutCooperativeHandler(t *testing.T) {
	tk := icKit(t, nil, interceptors.Timeout(30*time.Millisecond))
	testutil.Add(t, tk, icTool(t, toolkit.Spec{Name: "slow"}, func(ctx context.Context) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}))
	timeoutCheck(t, icRun(t, testutil.Session(t, tk, "s"), testutil.Call("c1", "slow", `{}`)))
}

func TestTimeoutHandlerReturningItsOwnError(t *testing.T) {
	errClosed := errors.New("use of closed connection")
	tk := icKit(t, nil, interceptors.Timeout(30*time.Millisecond))
	testutil.Add(t, tk, icTool(t, toolkit.Spec{Name: "net"}, func(ctx context.Context) (string, error) {
		<-ctx.Done()
		return "", errClosed
	}))
	r := icRun(t, testutil.Session(t, tk, "s"), testutil.Call("c1", "net", `{}`))
	timeoutCheck(t, r)
	if !errors.Is(r.Err, errClosed) {
		t.Fatalf("the handler's error is lost: %v", r.Err)
	}
}

func TestTimeoutHandlerIgnoringCancellation(t *testing.T) {
	tk := icKit(t, nil, interceptors.Timeout(30*time.Millisecond, interceptors.TimeoutGrace(20*time.Millisecond)))
	release, exited := make(chan struct{}), make(chan struct{})
	testutil.Add(t, tk, icTool(t, toolkit.Spec{Name: "stubborn"}, func(ctx context.Context) (string, error) {
		defer close(exited)
		stream.From(ctx).Text("partial ")
		<-release // ignores ctx
		stream.From(ctx).Text("too late")
		return "done", nil
	}))
	t.Cleanup(func() { close(release); <-exited })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := testutil.Session(t, tk, "s").Start(ctx, []toolkit.Call{testutil.Call("c1", "stubborn", `{}`)})
	select {
	case <-run.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a handler ignoring cancellation held the call (the engine default is 2 minutes)")
	}
	r := run.Wait()[0]
	timeoutCheck(t, r)
	if strings.Contains(r.Text(), "too late") {
		t.Fatalf("late output reached the result: %q", r.Text())
	}
}

func TestTimeoutPerTool(t *testing.T) {
	// Far longer than the 20ms deadlines, so that a loaded machine cannot
	// make both ready at once.
	slow := func(ctx context.Context) (string, error) {
		select {
		case <-time.After(250 * time.Millisecond):
			return "finished", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	t.Run("only listed tools", func(t *testing.T) {
		tk := icKit(t, nil, interceptors.Timeout(0, interceptors.TimeoutFor("limited", 20*time.Millisecond)))
		testutil.Add(t, tk, icTool(t, toolkit.Spec{Name: "limited"}, slow), icTool(t, toolkit.Spec{Name: "free"}, slow))
		s := testutil.Session(t, tk, "s")
		timeoutCheck(t, icRun(t, s, testutil.Call("c1", "limited", `{}`)))
		if r := icRun(t, s, testutil.Call("c2", "free", `{}`)); r.State != events.StateSuccess {
			t.Fatalf("free tool: %s %v", r.State, r.Err)
		}
	})
	t.Run("exemption and override", func(t *testing.T) {
		tk := icKit(t, nil, interceptors.Timeout(20*time.Millisecond,
			interceptors.TimeoutFor("exempt", 0), interceptors.TimeoutFor("longer", 10*time.Second)))
		testutil.Add(t, tk, icTool(t, toolkit.Spec{Name: "exempt"}, slow), icTool(t, toolkit.Spec{Name: "longer"}, slow),
			icTool(t, toolkit.Spec{Name: "plain"}, slow))
		s := testutil.Session(t, tk, "s")
		for _, name := range []string{"exempt", "longer"} {
			if r := icRun(t, s, testutil.Call("c-"+name, name, `{}`)); r.State != events.StateSuccess {
				t.Fatalf("%s: %s %v", name, r.State, r.Err)
			}
		}
		timeoutCheck(t, icRun(t, s, testutil.Call("c-plain", "plain", `{}`)))
	})
}

func TestTimeoutFastCallUntouched(t *testing.T) {
	tk := icKit(t, nil, interceptors.Timeout(time.Second))
	testutil.Add(t, tk, icTool(t, toolkit.Spec{Name: "fast"}, func(ctx context.Context) (string, error) {
		stream.From(ctx).Text("a ")
		return "b", nil
	}))
	r := icRun(t, testutil.Session(t, tk, "s"), testutil.Call("c1", "fast", `{}`))
	if r.State != events.StateSuccess || r.Text() != "a b" {
		t.Fatalf("got %s %q", r.State, r.Text())
	}
}

func TestTimeoutRunCancelledWhileHandlerIgnoresIt(t *testing.T) {
	tk := icKit(t, []toolkit.Option{toolkit.WithCancelGrace(time.Hour)}, interceptors.Timeout(time.Hour, interceptors.TimeoutGrace(20*time.Millisecond)))
	started, release, exited := make(chan struct{}), make(chan struct{}), make(chan struct{})
	testutil.Add(t, tk, icTool(t, toolkit.Spec{Name: "stubborn"}, func(ctx context.Context) (string, error) {
		defer close(exited)
		close(started)
		<-release
		return "done", nil
	}))
	t.Cleanup(func() { close(release); <-exited })
	ctx, cancel := context.WithCancel(context.Background())
	run := testutil.Session(t, tk, "s").Start(ctx, []toolkit.Call{testutil.Call("c1", "stubborn", `{}`)})
	testutil.WaitFor(t, started, "the handler")
	cancel()
	testutil.WaitFor(t, run.Done(), "the run after cancellation")
	if r := run.Wait()[0]; r.State != events.StateInterrupted || !errors.Is(r.Err, toolkit.ErrInterrupted) {
		t.Fatalf("got %s %v, want interrupted", r.State, r.Err)
	}
}

// Timeout's deadline is the engine's: a handler that ignores its context
// gets the toolkit's cancel grace period (WithCancelGrace), as under the
// engine's own deadline, not a shorter one of the interceptor's. Before,
// Timeout kept its own deadline and a grace of 100 ms: the call was
// reported timed out 100 ms after the deadline while the toolkit promised
// its handlers an hour.
func TestTimeoutGivesTheToolkitsGrace(t *testing.T) {
	tk := icKit(t, []toolkit.Option{toolkit.WithCancelGrace(time.Hour)}, interceptors.Timeout(20*time.Millisecond))
	deadline, release := make(chan struct{}), make(chan struct{})
	testutil.Add(t, tk, icTool(t, toolkit.Spec{Name: "deaf"}, func(ctx context.Context) (string, error) {
		<-ctx.Done()
		close(deadline)
		<-release // ignores the cancellation, within the grace period
		return "done late", nil
	}))
	run := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("c1", "deaf", `{}`)})
	testutil.WaitFor(t, deadline, "the deadline")
	select {
	case <-run.Done():
		t.Fatalf("the call was reported during the toolkit's grace period: %s %q", run.Wait()[0].State, run.Wait()[0].Text())
	case <-time.After(300 * time.Millisecond): // three times the old grace
	}
	close(release)
	testutil.WaitFor(t, run.Done(), "the run")
	if r := run.Wait()[0]; r.State != events.StateSuccess || r.Text() != "done late" {
		t.Fatalf("got %s %q, want the handler's own result, returned within the grace period", r.State, r.Text())
	}
}

// Past the grace period, the call gets the engine's timeout, and what the
// handler writes afterwards is refused.
func TestTimeoutLeavesADeafHandlerBehind(t *testing.T) {
	tk := icKit(t, []toolkit.Option{toolkit.WithCancelGrace(10 * time.Millisecond)}, interceptors.Timeout(20*time.Millisecond))
	release, late := make(chan struct{}), make(chan error, 1)
	testutil.Add(t, tk, icTool(t, toolkit.Spec{Name: "deaf"}, func(ctx context.Context) (string, error) {
		stream.From(ctx).Text("partial ")
		<-release
		late <- stream.From(ctx).Text("too late")
		return "done", nil
	}))
	r := icRun(t, testutil.Session(t, tk, "s"), testutil.Call("c1", "deaf", `{}`))
	close(release)
	timeoutCheck(t, r)
	if !strings.Contains(r.Text(), `tool "deaf" timed out after 20ms`) || strings.Contains(r.Text(), "too late") {
		t.Fatalf("the model reads %q", r.Text())
	}
	if err := <-late; !errors.Is(err, stream.ErrCallFinished) {
		t.Fatalf("a write after the call was reported: %v, want ErrCallFinished", err)
	}
}

// An interceptor after Timeout runs on Timeout's goroutine: its panic is
// the call's *PanicError, as for any interceptor. Before, it crashed the
// process (the goroutine Timeout started had no recover).
func TestTimeoutInnerInterceptorPanics(t *testing.T) {
	boom := toolkit.Interceptor{Name: "boom", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		panic("boom")
	}}
	tk := icKit(t, nil, interceptors.Timeout(time.Minute), boom)
	testutil.Add(t, tk, icTool(t, toolkit.Spec{Name: "fine"}, func(ctx context.Context) (string, error) { return "ok", nil }))
	r := icRun(t, testutil.Session(t, tk, "s"), testutil.Call("c1", "fine", `{}`))
	if r.State != events.StateError || !isErr[*toolkit.PanicError](r.Err) {
		t.Fatalf("got %s %v, want an error with a *PanicError", r.State, r.Err)
	}
}
