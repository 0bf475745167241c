package toolkit_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// Tests of what a closed session does to the work that reaches it: a batch
// started on it, a call that would wait outside the process, an
// interceptor's or a Before hook's wait that begins after Close.

// TestBatchOnClosedSession: a batch started on a session after its Close
// runs nothing; every call is interrupted with ErrClosed as the cause and a
// message that says the run was cancelled (Session.Close's godoc: later
// batches in it fail with ErrClosed as the cause).
func TestBatchOnClosedSession(t *testing.T) {
	for _, run := range []bool{false, true} {
		t.Run(map[bool]string{false: "Start", true: "Run"}[run], func(t *testing.T) {
			var ran atomic.Int32
			rec := &testutil.Recorder{}
			tk := testutil.Kit(t, toolkit.WithObserver(rec))
			testutil.Add(t, tk, countTool(t, "a", &ran))
			s := testutil.Session(t, tk, "s")
			s.Close()
			rs := results(t, start(s, context.Background(), run, testutil.Call("1", "a", `{}`), testutil.Call("2", "a", `{}`)), "a batch on a closed session")
			for _, r := range rs {
				if r.State != events.StateInterrupted || !errors.Is(r.Err, toolkit.ErrInterrupted) || !errors.Is(r.Err, toolkit.ErrClosed) {
					t.Errorf("call %s: %s %v; want interrupted by ErrClosed", r.Call.ID, r.State, r.Err)
				}
				if !strings.Contains(r.Text(), `session "s"`) || !r.Started.IsZero() {
					t.Errorf("call %s: %q, started %v", r.Call.ID, r.Text(), r.Started)
				}
			}
			if ran.Load() != 0 {
				t.Errorf("%d calls ran on a closed session", ran.Load())
			}
			rec.Check(t)
		})
	}
}

// TestExternalCallAfterSessionClosed: a batch already running when its
// session is closed reaches a call of an external tool: the call cannot
// wait (nobody can Submit to a closed session). It is interrupted with
// ErrClosed as the cause, like the calls that were waiting at Close, and
// the model reads that the session was closed, not that its call was
// invalid.
func TestExternalCallAfterSessionClosed(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithObserver(rec))
	entered, release := make(chan struct{}), make(chan struct{})
	testutil.Add(t, tk, externalTool(t, toolkit.Spec{Name: "ask"}),
		testutil.Tool(t, toolkit.Spec{Name: "slow"}, func(context.Context, none) (string, error) {
			close(entered)
			<-release
			return "slow done", nil
		}))
	s := testutil.Session(t, tk, "s")
	b := s.Start(context.Background(), []toolkit.Call{testutil.Call("1", "slow", `{}`), testutil.Call("2", "ask", `{"question":"?"}`)})
	testutil.WaitFor(t, entered, "the first call to run")
	s.Close()
	close(release)
	testutil.WaitFor(t, b.Done(), "the batch to end")
	rs := b.Wait()
	if rs[0].State != events.StateSuccess {
		t.Errorf("the call running at Close: %s %v", rs[0].State, rs[0].Err)
	}
	r := rs[1]
	if r.State != events.StateInterrupted || !errors.Is(r.Err, toolkit.ErrInterrupted) || !errors.Is(r.Err, toolkit.ErrClosed) || errors.Is(r.Err, toolkit.ErrInvalidCall) {
		t.Errorf("the external call: %s %v; want interrupted by ErrClosed", r.State, r.Err)
	}
	if !strings.Contains(r.Text(), "session was closed") {
		t.Errorf("the model reads %q", r.Text())
	}
	for _, ev := range rec.Of("2") {
		if ev.Type == events.TypeSuspend {
			t.Error("a suspend event went out for a call that cannot wait")
		}
	}
	if got := s.Suspended(); len(got) != 0 {
		t.Errorf("Suspended() = %v", got)
	}
	if err := s.Submit("2", []events.Part{events.Text("late")}, nil); !errors.Is(err, toolkit.ErrClosed) {
		t.Errorf("Submit after Close = %v, want ErrClosed", err)
	}
	rec.Check(t)
}

// TestExternalCallIDAlreadyWaiting: a call of an external tool whose id a
// call of another batch of the session waits under already cannot wait
// (Submit could not tell them apart): it fails at once with ErrInvalidCall
// and a message that says why; the first call still waits and gets what is
// submitted.
func TestExternalCallIDAlreadyWaiting(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, externalTool(t, toolkit.Spec{Name: "ask"}))
	s := testutil.Session(t, tk, "s")
	first := s.Start(context.Background(), []toolkit.Call{testutil.Call("x", "ask", `{"question":"first"}`)})
	waitSuspended(t, first)
	rs := s.Run(context.Background(), []toolkit.Call{testutil.Call("x", "ask", `{"question":"second"}`)})
	if r := rs[0]; r.State != events.StateError || !errors.Is(r.Err, toolkit.ErrInvalidCall) ||
		!strings.Contains(r.Text(), "already suspended") || !strings.Contains(r.Text(), `call "x"`) {
		t.Errorf("the second call: %s %v %q", r.State, r.Err, r.Text())
	}
	if err := s.Submit("x", []events.Part{events.Text("answer")}, nil); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	if r := first.Wait()[0]; r.State != events.StateSuccess || r.Text() != "answer" || string(r.Call.Args) != `{"question":"first"}` {
		t.Errorf("the first call: %s %q %s", r.State, r.Text(), r.Call.Args)
	}
}

// TestSuspendAfterSessionClosed: an interceptor that suspends its call
// after the session was closed gets a wait that is over at once, its cause
// ErrClosed (Invocation.Suspend: Session.Close ends a wait); the call is
// interrupted by ErrClosed, not left waiting. (context.Cause of the wait is
// context.Canceled: the standard library reads causes only from its own
// contexts; Invocation.ContextFailure gives ErrClosed.)
func TestSuspendAfterSessionClosed(t *testing.T) {
	tk := testutil.Kit(t)
	var ran atomic.Int32
	testutil.Add(t, tk, countTool(t, "a", &ran))
	entered, release := make(chan struct{}), make(chan struct{})
	waitCause := make(chan error, 1)
	if err := tk.Use(toolkit.Interceptor{Name: "approve", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		close(entered)
		<-release
		wait, _ := inv.Suspend("approval")
		select {
		case <-wait.Done():
		case <-time.After(5 * time.Second):
			waitCause <- errors.New("the wait did not end within 5 s")
			return next(ctx, inv)
		}
		out := inv.ContextFailure(wait)
		waitCause <- out.Err
		return out
	}}); err != nil {
		t.Fatal(err)
	}
	s := testutil.Session(t, tk, "s")
	b := s.Start(context.Background(), []toolkit.Call{testutil.Call("1", "a", `{}`)})
	testutil.WaitFor(t, entered, "the interceptor to run")
	s.Close()
	close(release)
	if err := <-waitCause; !errors.Is(err, toolkit.ErrClosed) {
		t.Errorf("ContextFailure of the wait: %v, want ErrClosed", err)
	}
	testutil.WaitFor(t, b.Done(), "the batch to end")
	if r := b.Wait()[0]; r.State != events.StateInterrupted || !errors.Is(r.Err, toolkit.ErrClosed) || ran.Load() != 0 {
		t.Errorf("%s %v; ran %d", r.State, r.Err, ran.Load())
	}
}

// TestBatchHookSuspendAfterSessionClosed: a Before hook that suspends its
// plan after the session was closed finds the batch interrupted at once:
// its context ends with ErrClosed, and every call is interrupted without
// running.
func TestBatchHookSuspendAfterSessionClosed(t *testing.T) {
	tk := testutil.Kit(t)
	var ran atomic.Int32
	testutil.Add(t, tk, countTool(t, "a", &ran))
	entered, release := make(chan struct{}), make(chan struct{})
	hookCause := make(chan error, 1)
	if err := tk.Use(toolkit.Interceptor{Name: "approve", BeforeBatch: func(ctx context.Context, p *toolkit.BatchPlan) {
		close(entered)
		<-release
		p.Suspend()
		select {
		case <-ctx.Done():
			hookCause <- context.Cause(ctx)
		case <-time.After(5 * time.Second):
			hookCause <- errors.New("the hook's context did not end within 5 s")
		}
	}}); err != nil {
		t.Fatal(err)
	}
	s := testutil.Session(t, tk, "s")
	b := s.Start(context.Background(), []toolkit.Call{testutil.Call("1", "a", `{}`), testutil.Call("2", "a", `{}`)})
	testutil.WaitFor(t, entered, "the hook to run")
	s.Close()
	close(release)
	if err := <-hookCause; !errors.Is(err, toolkit.ErrClosed) {
		t.Errorf("the hook's context ended with %v, want ErrClosed", err)
	}
	testutil.WaitFor(t, b.Done(), "the batch to end")
	for _, r := range b.Wait() {
		if r.State != events.StateInterrupted || !errors.Is(r.Err, toolkit.ErrClosed) {
			t.Errorf("call %s: %s %v", r.Call.ID, r.State, r.Err)
		}
	}
	if ran.Load() != 0 {
		t.Errorf("%d calls ran", ran.Load())
	}
}
