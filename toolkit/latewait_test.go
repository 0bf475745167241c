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
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// TestSuspendAfterCancelGetsGrace: an interceptor that suspends its call
// only after the batch was interrupted (here by itself: AbortBatch), and
// then ignores the wait (which is over at once), is given the cancel grace
// period like any code that ignores its context: the call is reported
// interrupted and the batch ends on time (Start's godoc: results are final
// no later than the deadline plus the grace, whatever a handler does); Run
// returns once the interceptor does, with that result.
func TestSuspendAfterCancelGetsGrace(t *testing.T) {
	for _, run := range []bool{false, true} {
		t.Run(map[bool]string{false: "Start", true: "Run"}[run], func(t *testing.T) {
			t.Cleanup(leak.Check(t))
			stop := errors.New("the user pressed stop")
			suspended := make(chan struct{})
			tk := testutil.Kit(t, toolkit.WithCancelGrace(20*time.Millisecond))
			release := releaseAtEnd(t)
			testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "a"}, func(context.Context, none) (string, error) { return "ran", nil }))
			if err := tk.Use(toolkit.Interceptor{Name: "late", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
				inv.AbortBatch(stop) // the batch is interrupted before the call asks to wait
				wait, _ := inv.Suspend("approval")
				close(suspended)
				<-release // ignores that the wait is over
				return inv.ContextFailure(wait)
			}}); err != nil {
				t.Fatal(err)
			}
			got := start(testutil.Session(t, tk, "s"), context.Background(), run, testutil.Call("1", "a", `{}`))
			testutil.WaitFor(t, suspended, "the call to ask to wait")
			if run {
				close(release) // Run returns only once the interceptor does
			}
			rs := results(t, got, "an interceptor that ignores a wait it asked for after the interruption")
			if r := rs[0]; r.State != events.StateInterrupted || !errors.Is(r.Err, stop) {
				t.Errorf("%s %v", r.State, r.Err)
			}
		})
	}
}

// TestWaitEndedBySessionCloseGetsGrace: an interceptor whose wait
// Session.Close ends (it waited when the session was closed, or asked to
// wait after) and that ignores it is given the cancel grace period: the
// call is reported interrupted by ErrClosed and the batch ends on time.
func TestWaitEndedBySessionCloseGetsGrace(t *testing.T) {
	for _, after := range []bool{false, true} {
		t.Run(map[bool]string{false: "waiting", true: "after"}[after], func(t *testing.T) {
			t.Cleanup(leak.Check(t))
			entered, closed, suspended := make(chan struct{}), make(chan struct{}), make(chan struct{})
			tk := testutil.Kit(t, toolkit.WithCancelGrace(20*time.Millisecond))
			release := releaseAtEnd(t)
			testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "a"}, func(context.Context, none) (string, error) { return "ran", nil }))
			if err := tk.Use(toolkit.Interceptor{Name: "deaf", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
				close(entered)
				if after {
					<-closed
				}
				wait, _ := inv.Suspend("approval")
				close(suspended)
				<-release // ignores the end of its wait
				return inv.ContextFailure(wait)
			}}); err != nil {
				t.Fatal(err)
			}
			s := testutil.Session(t, tk, "s")
			b := s.Start(context.Background(), []toolkit.Call{testutil.Call("1", "a", `{}`)})
			testutil.WaitFor(t, entered, "the interceptor to run")
			if !after {
				testutil.WaitFor(t, suspended, "the call to wait")
			}
			s.Close()
			close(closed)
			testutil.WaitFor(t, suspended, "the call to ask to wait")
			select {
			case <-b.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("no result 5 s after Session.Close (grace 20 ms): the batch waits for an interceptor that ignores its wait")
			}
			if r := b.Wait()[0]; r.State != events.StateInterrupted || !errors.Is(r.Err, toolkit.ErrClosed) {
				t.Errorf("%s %v", r.State, r.Err)
			}
		})
	}
}

// TestDeafCodeAroundExternalCall: code that ignores its context around a
// call of an external tool (an interceptor before the call waits, or an
// OnWait hook while the call is registered for Submit) is left behind at
// the cancel grace period like around any call: the call is reported
// interrupted and the batch ends on time. A Submit for the call once it was
// reported gets ErrUnknownCall (never nil for a result nobody gets); the
// deaf code, once released, sends nothing after the result (no suspend
// event) and leaves no goroutine behind. The same for an unknown call an
// Unknown interceptor points at the external tool.
func TestDeafCodeAroundExternalCall(t *testing.T) {
	for _, where := range []string{"interceptor", "OnWait", "alias"} {
		t.Run(where, func(t *testing.T) {
			t.Cleanup(leak.Check(t))
			entered, returned := make(chan struct{}), make(chan struct{})
			rec := &testutil.Recorder{}
			tk := testutil.Kit(t, toolkit.WithCancelGrace(20*time.Millisecond), toolkit.WithInlineObserver(rec))
			release := releaseAtEnd(t)
			testutil.Add(t, tk, externalTool(t, toolkit.Spec{Name: "ask"}))
			ask, _ := tk.Tool("ask")
			if err := tk.Use(toolkit.Interceptor{Name: "deaf", Unknown: true, Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
				defer close(returned)
				if inv.Unknown() { // "old_ask", the external tool's old name
					inv.Tool = ask
				}
				if where == "interceptor" {
					close(entered)
					<-release // ignores its context
				} else {
					inv.OnWait(func(reason string) {
						if reason != "" {
							close(entered)
							<-release // ignores the call's context: a store that hangs
						}
					})
				}
				return next(ctx, inv)
			}}); err != nil {
				t.Fatal(err)
			}
			s := testutil.Session(t, tk, "s")
			name := "ask"
			if where == "alias" {
				name = "old_ask" // an unknown call an interceptor points at the external tool, deaf OnWait hook
			}
			b := s.Start(context.Background(), []toolkit.Call{testutil.Call("1", name, `{"question":"?"}`)})
			testutil.WaitFor(t, entered, "the deaf code to run")
			b.Cancel()
			select {
			case <-b.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("no result 5 s after the cancellation (grace 20 ms): the batch waits for deaf code around an external call")
			}
			if r := b.Wait()[0]; r.State != events.StateInterrupted || !errors.Is(r.Err, context.Canceled) {
				t.Errorf("%s %v", r.State, r.Err)
			}
			if err := s.Submit("1", nil, nil); !errors.Is(err, toolkit.ErrUnknownCall) {
				t.Errorf("Submit for the call reported interrupted: %v, want ErrUnknownCall", err)
			}
			if got := s.Suspended(); len(got) != 0 {
				t.Errorf("Suspended() = %v", got)
			}
			close(release)
			testutil.WaitFor(t, returned, "the interceptor to return once released")
			if got := testutil.Types(rec.Of("1")); len(got) == 0 || got[len(got)-1] != events.TypeResult {
				t.Errorf("events %v: the result must be the last", got)
			}
		})
	}
}

// TestLateSuspendOfAFinishedCall: an interceptor left behind at the grace
// period that asks to wait only afterwards changes nothing: no suspend event
// follows the call's result, Batch.Results yields no suspension notice after
// the batch ended, its OnWait hooks are not told of a wait (a store would
// record a finished call as waiting), and the wait it gets is over.
func TestLateSuspendOfAFinishedCall(t *testing.T) {
	t.Cleanup(leak.Check(t))
	rec := &testutil.Recorder{}
	entered, returned := make(chan struct{}), make(chan struct{})
	tk := testutil.Kit(t, toolkit.WithCancelGrace(20*time.Millisecond), toolkit.WithInlineObserver(rec))
	release := releaseAtEnd(t)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "a"}, func(context.Context, none) (string, error) { return "ran", nil }))
	told := make(chan string, 4)
	lateWait := make(chan error, 1)
	if err := tk.Use(toolkit.Interceptor{Name: "deaf", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		defer close(returned)
		inv.OnWait(func(reason string) { told <- reason })
		close(entered)
		<-release // ignores its context past the grace period
		wait, resume := inv.Suspend("approval")
		lateWait <- wait.Err()
		return next(resume(), inv)
	}}); err != nil {
		t.Fatal(err)
	}
	b := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("1", "a", `{}`)})
	testutil.WaitFor(t, entered, "the interceptor to run")
	b.Cancel()
	testutil.WaitFor(t, b.Done(), "the batch to end")
	close(release)
	testutil.WaitFor(t, returned, "the interceptor to return")
	if err := <-lateWait; err == nil {
		t.Error("the late wait is not over")
	}
	if got := testutil.Types(rec.Of("1")); len(got) == 0 || got[len(got)-1] != events.TypeResult {
		t.Errorf("events %v: the result must be the last", got)
	}
	var notices []events.State
	for r := range b.Results() {
		notices = append(notices, r.State)
	}
	if len(notices) != 1 || notices[0] != events.StateInterrupted {
		t.Errorf("Results after the end: %v", notices)
	}
	close(told)
	for reason := range told {
		t.Errorf("OnWait told %q after the call was final", reason)
	}
}

// TestDeafBeforeHookInterruptedTwice: a second interruption of a batch
// whose deaf Before hook is in its grace period (the toolkit closing after
// Batch.Cancel) keeps the first cause and the first grace period: the calls
// are interrupted by context.Canceled, naming the hook, and Close returns.
func TestDeafBeforeHookInterruptedTwice(t *testing.T) {
	t.Cleanup(leak.Check(t))
	tk := testutil.Kit(t, toolkit.WithCancelGrace(stuckGrace))
	var ran atomic.Int32
	testutil.Add(t, tk, countTool(t, "a", &ran))
	h := newDeafHook(t, false)
	if err := tk.Use(toolkit.Interceptor{Name: "deaf", BeforeBatch: h.before}); err != nil {
		t.Fatal(err)
	}
	got := start(testutil.Session(t, tk, "s"), context.Background(), false, testutil.Call("1", "a", `{}`))
	testutil.WaitFor(t, h.entered, "the hook to start")
	h.batch.Load().Cancel()
	closed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		closed <- tk.Close(ctx)
	}()
	rs := results(t, got, "a deaf Before hook, cancelled then closed")
	checkHookAbandoned(t, rs, context.Canceled)
	checkLateIgnored(t, h, rs, &ran)
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
}

// TestBrokenFilterOnAnAbandonedCall: a call whose stream filter panicked
// and whose handler then ignores its deadline is reported at the grace
// period failing closed, as a call whose handler returns is
// (TestStreamFilterPanics): an error caused by the filter's *PanicError, and
// the model reads that the output was withheld, nothing of it.
func TestBrokenFilterOnAnAbandonedCall(t *testing.T) {
	t.Cleanup(leak.Check(t))
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithCancelGrace(20*time.Millisecond), toolkit.WithObserver(rec))
	release := releaseAtEnd(t)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "leaky", Timeout: 20 * time.Millisecond}, func(ctx context.Context, _ none) (string, error) {
		em := stream.From(ctx)
		_ = em.Text("public ")
		_ = em.Text("secret ")
		<-release // ignores its deadline
		return "", nil
	}))
	if err := tk.Use(toolkit.Interceptor{Name: "filters", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		inv.FilterStream(&bombFilter{at: "filter"})
		return next(ctx, inv)
	}}); err != nil {
		t.Fatal(err)
	}
	b := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("1", "leaky", `{}`)})
	select {
	case <-b.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the batch did not end")
	}
	r := b.Wait()[0]
	var pe *toolkit.PanicError
	if r.State != events.StateError || !errors.As(r.Err, &pe) || pe.In != "a stream filter" {
		t.Errorf("%s %v", r.State, r.Err)
	}
	if strings.Contains(r.Text(), "secret") || !strings.Contains(r.Text(), "withheld") {
		t.Errorf("the model reads %q", r.Text())
	}
	for _, d := range rec.DeltaTexts("1") {
		if strings.Contains(d, "secret") {
			t.Errorf("an observer saw %q", d)
		}
	}
	testutil.CheckDeltasAddUp(t, rec, r)
	close(release)
}

// TestLateResumeOfAFinishedCall: an interceptor left behind at the grace
// period while its call waited, that resumes afterwards, gets a context that
// is over, and its OnWait hooks are told of the wait's start only, not of an
// end after which the call would go on (a store would record a finished
// call as running).
func TestLateResumeOfAFinishedCall(t *testing.T) {
	t.Cleanup(leak.Check(t))
	suspended, returned := make(chan struct{}), make(chan struct{})
	tk := testutil.Kit(t, toolkit.WithCancelGrace(20*time.Millisecond))
	release := releaseAtEnd(t)
	var ran atomic.Int32
	testutil.Add(t, tk, countTool(t, "a", &ran))
	told := make(chan string, 4)
	resumed := make(chan error, 1)
	if err := tk.Use(toolkit.Interceptor{Name: "deaf", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		defer close(returned)
		inv.OnWait(func(reason string) { told <- reason })
		_, resume := inv.Suspend("approval")
		close(suspended)
		<-release // ignores the end of its wait past the grace period
		rctx := resume()
		resumed <- rctx.Err()
		return next(rctx, inv)
	}}); err != nil {
		t.Fatal(err)
	}
	b := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("1", "a", `{}`)})
	testutil.WaitFor(t, suspended, "the call to wait")
	b.Cancel()
	testutil.WaitFor(t, b.Done(), "the batch to end")
	close(release)
	testutil.WaitFor(t, returned, "the interceptor to return")
	if err := <-resumed; err == nil {
		t.Error("the late resume gave a live context")
	}
	close(told)
	var reasons []string
	for r := range told {
		reasons = append(reasons, r)
	}
	if len(reasons) != 1 || reasons[0] != "approval" || ran.Load() != 0 {
		t.Errorf("OnWait told %q; the tool ran %d times", reasons, ran.Load())
	}
}

// TestLateRequestsOfAFinishedCall: an interceptor left behind at the grace
// period changes nothing of its batch afterwards: a StopLoop does not change
// Batch.Stop once the batch is done (its godoc: final after Wait), and an
// AbortBatch does not interrupt the calls that still run nor change
// Batch.Err.
func TestLateRequestsOfAFinishedCall(t *testing.T) {
	t.Cleanup(leak.Check(t))
	entered, returned := make(chan struct{}), make(chan struct{})
	tk := testutil.Kit(t, toolkit.WithCancelGrace(20*time.Millisecond))
	release := releaseAtEnd(t)
	nextStarted, nextGo := make(chan struct{}), make(chan struct{})
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "deaf", Timeout: 20 * time.Millisecond, ConcurrencySafe: true}, func(context.Context, none) (string, error) {
		close(entered)
		<-release
		return "too late", nil
	}), testutil.Tool(t, toolkit.Spec{Name: "later", ConcurrencySafe: true}, func(ctx context.Context, _ none) (string, error) {
		close(nextStarted)
		<-nextGo
		return "later ran", ctx.Err()
	}))
	if err := tk.Use(toolkit.Interceptor{Name: "late", Tools: []string{"deaf"}, Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		defer close(returned)
		out := next(ctx, inv) // held by the deaf handler past the grace period
		inv.StopLoop(toolkit.StopCallLimit, "too late")
		inv.AbortBatch(errors.New("too late"))
		return out
	}}); err != nil {
		t.Fatal(err)
	}
	b := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("1", "deaf", `{}`), testutil.Call("2", "later", `{}`)})
	testutil.WaitFor(t, entered, "the deaf handler to run")
	testutil.WaitFor(t, nextStarted, "the other call to run")
	for r := range b.Results() {
		if r.Call.ID == "1" {
			break // reported at its grace period
		}
	}
	close(release)
	testutil.WaitFor(t, returned, "the interceptor to return")
	close(nextGo)
	rs := b.Wait()
	if rs[0].State != events.StateTimeout {
		t.Errorf("the deaf call: %s %v", rs[0].State, rs[0].Err)
	}
	if rs[1].State != events.StateSuccess || rs[1].Text() != "later ran" {
		t.Errorf("the other call: %s %v", rs[1].State, rs[1].Err)
	}
	if st, ok := b.Stop(); ok {
		t.Errorf("Stop() = %+v after a late StopLoop", st)
	}
	if err := b.Err(); err != nil {
		t.Errorf("Err() = %v after a late AbortBatch", err)
	}
}
