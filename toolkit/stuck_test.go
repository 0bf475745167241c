package toolkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/leak"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// Tests of user code that runs before a call and ignores its context: a
// batch hook's Before and a ToolResolver. The bounds below only turn a hang
// into a failure; the grace periods are 20 ms.

const stuckGrace = 20 * time.Millisecond

// countTool is a tool that counts its runs.
func countTool(t *testing.T, name string, ran *atomic.Int32) *toolkit.Tool {
	return testutil.Tool(t, toolkit.Spec{Name: name}, func(context.Context, none) (string, error) {
		ran.Add(1)
		return name + " ran", nil
	})
}

// deafHook is a Before hook that ignores its context until release is
// closed, then tries to decide every call: decisions that must be ignored.
type deafHook struct {
	suspend  bool
	entered  chan struct{}
	release  chan struct{}
	returned chan struct{}
	batch    atomic.Pointer[toolkit.Batch]
	lateErr  atomic.Value // what the plan's Emit said after the hook's time was over
	lateSaw  atomic.Bool  // the plan still showed a call (Call, Tool, Decided) after it
}

// newDeafHook makes a deaf hook released at the end of the test, before the
// toolkit is closed.
func newDeafHook(t *testing.T, suspend bool) *deafHook {
	return &deafHook{suspend: suspend, entered: make(chan struct{}), release: releaseAtEnd(t), returned: make(chan struct{})}
}

// releaseAtEnd returns a channel that releases code a test holds: the test
// closes it, or, if it has not, the cleanup it registers does (register it
// after testutil.Kit, so that the code is released before the toolkit is
// closed).
func releaseAtEnd(t *testing.T) chan struct{} {
	release := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	return release
}

func (h *deafHook) before(_ context.Context, p *toolkit.BatchPlan) {
	defer close(h.returned)
	h.batch.Store(p.Batch())
	if h.suspend {
		p.Suspend()
	}
	close(h.entered)
	<-h.release
	// Too late: none of this may reach the batch, nor panic, nor race.
	for i := range p.Len() {
		if p.Call(i).ID != "" || p.Tool(i) != nil || p.Decided(i) {
			h.lateSaw.Store(true)
		}
		p.Approve(i)
		p.Rewrite(i, "b", json.RawMessage(`{"late":true}`))
		p.Decide(i, toolkit.Failure(events.StateDenied, errors.New("denied too late")))
	}
	p.Suspend()
	p.StopLoop("late", "a decision after the hook's time was over")
	h.lateErr.Store(errorText(p.Emit("late_request", map[string]string{"too": "late"})))
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// start runs calls with Session.Start (or Session.Run, on a goroutine of
// its own) and returns a channel that gets the results.
func start(s *toolkit.Session, ctx context.Context, run bool, calls ...toolkit.Call) <-chan []toolkit.Result {
	got := make(chan []toolkit.Result, 1)
	if run {
		go func() { got <- s.Run(ctx, calls) }()
	} else {
		b := s.Start(ctx, calls)
		go func() { got <- b.Wait() }()
	}
	return got
}

// results waits for the results, failing the test if they take more than
// 5 s.
func results(t *testing.T, got <-chan []toolkit.Result, what string) []toolkit.Result {
	t.Helper()
	select {
	case rs := <-got:
		return rs
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: no results 5 s later (grace period %v): the batch hangs", what, stuckGrace)
		return nil
	}
}

// checkHookAbandoned checks that every call was reported interrupted,
// never run, with a message that names the hook and says why.
func checkHookAbandoned(t *testing.T, rs []toolkit.Result, cause error) {
	t.Helper()
	for _, r := range rs {
		text := r.Text()
		if r.State != events.StateInterrupted || !errors.Is(r.Err, toolkit.ErrInterrupted) || !errors.Is(r.Err, cause) {
			t.Errorf("call %s: %s %v; want interrupted, caused by %v", r.Call.ID, r.State, r.Err, cause)
		}
		for _, want := range []string{`batch hook "deaf"`, "did not return", "never ran"} {
			if !strings.Contains(text, want) {
				t.Errorf("call %s: the model reads %q, which does not say %q", r.Call.ID, text, want)
			}
		}
		if !r.Started.IsZero() {
			t.Errorf("call %s reports a start", r.Call.ID)
		}
	}
}

// checkLateIgnored releases the hook and checks that what it did after its
// time was over changed nothing.
func checkLateIgnored(t *testing.T, h *deafHook, rs []toolkit.Result, ran *atomic.Int32) {
	t.Helper()
	close(h.release)
	testutil.WaitFor(t, h.returned, "the hook to return once released")
	b := h.batch.Load()
	again := b.Wait()
	for i := range rs {
		if again[i].State != rs[i].State || again[i].Text() != rs[i].Text() || again[i].Call.Name != rs[i].Call.Name {
			t.Errorf("call %d changed after the hook returned: %s %q (%s), was %s %q (%s)", i,
				again[i].State, again[i].Text(), again[i].Call.Name, rs[i].State, rs[i].Text(), rs[i].Call.Name)
		}
	}
	if s, ok := b.Stop(); ok {
		t.Errorf("a stop requested after the hook's time was over counted: %+v", s)
	}
	if h.lateSaw.Load() {
		t.Error("the plan still showed a call after the hook's time was over (Call, Tool and Decided must give zero values)")
	}
	if got, _ := h.lateErr.Load().(string); !strings.Contains(got, "deaf") {
		t.Errorf("Emit after the hook's time was over said %q", got)
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("%d calls ran", n)
	}
}

// TestStuckBeforeHookCancelled: a Before hook that ignores its context no
// longer hangs its batch: once the caller's context is cancelled, the hook
// gets the grace period, then every call is reported interrupted with a
// message that names the hook, and Wait returns (Run, whose caller the
// hook holds, returns with the same results when the hook does); whatever
// the hook decides when it finally returns is ignored. Once it returned and
// the toolkit is closed, no goroutine is left.
func TestStuckBeforeHookCancelled(t *testing.T) {
	for _, run := range []bool{false, true} {
		name := map[bool]string{false: "Start", true: "Run"}[run]
		t.Run(name, func(t *testing.T) {
			t.Cleanup(leak.Check(t)) // last: after the hook's release and Close
			rec := &testutil.Recorder{}
			tk := testutil.Kit(t, toolkit.WithCancelGrace(stuckGrace), toolkit.WithObserver(rec))
			var ran atomic.Int32
			testutil.Add(t, tk, countTool(t, "a", &ran), countTool(t, "b", &ran))
			h := newDeafHook(t, false)
			_ = tk.Use(toolkit.Interceptor{Name: "deaf", BeforeBatch: h.before})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			got := start(testutil.Session(t, tk, "s"), ctx, run, testutil.Call("1", "a", `{}`), testutil.Call("2", "b", `{}`))
			testutil.WaitFor(t, h.entered, "the hook to start")
			cancel()
			wait := got
			if run {
				// The hook holds Run's caller: as for a deaf handler, Run
				// returns when the hook does. The batch's results are final
				// on time all the same.
				ch := make(chan []toolkit.Result, 1)
				b := h.batch.Load()
				go func() { ch <- b.Wait() }()
				wait = ch
			}
			rs := results(t, wait, "a deaf Before hook, caller's context cancelled")
			checkHookAbandoned(t, rs, context.Canceled)
			checkLateIgnored(t, h, rs, &ran)
			if run {
				late := results(t, got, "Run once the hook returned")
				for i := range rs {
					if late[i].State != rs[i].State || late[i].Text() != rs[i].Text() {
						t.Errorf("Run's call %d: %s %q, the batch's %s %q", i, late[i].State, late[i].Text(), rs[i].State, rs[i].Text())
					}
				}
			}
			// Observers saw one result per call and nothing else of them.
			for _, id := range []string{"1", "2"} {
				checkNeverStarted(t, rec, id)
			}
			rec.Check(t)
		})
	}
}

// checkNeverStarted checks that observers saw one result of the call, no
// start.
func checkNeverStarted(t *testing.T, rec *testutil.Recorder, id string) {
	t.Helper()
	var results, starts int
	for _, ev := range rec.Of(id) {
		switch ev.Type {
		case events.TypeResult:
			results++
		case events.TypeStart:
			starts++
		}
	}
	if results != 1 || starts != 0 {
		t.Errorf("call %s: %d result and %d start events: %v", id, results, starts, testutil.Types(rec.Of(id)))
	}
}

// TestStuckBeforeHookToolkitClose: Toolkit.Close ends the wait for a deaf
// Before hook like a cancellation (the calls are interrupted with
// ErrClosed), and returns within its own context even though the hook's
// goroutine is still stuck. With Session.Run and a context that cannot be
// cancelled, the hook runs on the caller's goroutine: the batch's results
// are final and Close returns, and Run itself returns when the hook does.
func TestStuckBeforeHookToolkitClose(t *testing.T) {
	for _, run := range []bool{false, true} {
		name := map[bool]string{false: "Start", true: "Run"}[run]
		t.Run(name, func(t *testing.T) {
			tk := testutil.Kit(t, toolkit.WithCancelGrace(stuckGrace))
			var ran atomic.Int32
			testutil.Add(t, tk, countTool(t, "a", &ran), countTool(t, "b", &ran))
			h := newDeafHook(t, false)
			_ = tk.Use(toolkit.Interceptor{Name: "deaf", BeforeBatch: h.before})
			got := start(testutil.Session(t, tk, "s"), context.Background(), run, testutil.Call("1", "a", `{}`), testutil.Call("2", "b", `{}`))
			testutil.WaitFor(t, h.entered, "the hook to start")
			b := h.batch.Load()

			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			began := time.Now()
			err := tk.Close(ctx)
			if took := time.Since(began); took > 5*time.Second {
				t.Fatalf("Close took %v with a 300 ms context", took)
			}
			if !run && !errors.Is(err, context.DeadlineExceeded) {
				// The stuck hook holds a pool goroutine: Close says it could not wait for it.
				t.Errorf("Close: %v; want the context's error while the hook's goroutine is stuck", err)
			}
			if run && err != nil {
				t.Errorf("Close: %v; the stuck goroutine is the caller's, not the toolkit's", err)
			}
			testutil.WaitFor(t, b.Done(), "the batch to be done after Close")
			rs := b.Wait()
			checkHookAbandoned(t, rs, toolkit.ErrClosed)
			checkLateIgnored(t, h, rs, &ran)
			if again := results(t, got, "after the hook returned"); &again[0] != &rs[0] {
				t.Error("Wait or Run returned other results")
			}
			ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel2()
			if err := tk.Close(ctx2); err != nil {
				t.Fatalf("Close once the hook returned: %v", err)
			}
		})
	}
}

// TestStuckBeforeHookSessionClose: closing the session ends the wait of a
// Before hook that suspended the batch (the calls showed as suspended),
// as it ends the waits of suspended calls; a deaf hook gets the grace
// period, then the calls are interrupted with ErrClosed. Session.Close
// itself never waits.
func TestStuckBeforeHookSessionClose(t *testing.T) {
	tk := testutil.Kit(t, toolkit.WithCancelGrace(stuckGrace))
	var ran atomic.Int32
	testutil.Add(t, tk, countTool(t, "a", &ran), countTool(t, "b", &ran))
	h := newDeafHook(t, true)
	_ = tk.Use(toolkit.Interceptor{Name: "deaf", BeforeBatch: h.before})
	s := testutil.Session(t, tk, "s")
	got := start(s, context.Background(), false, testutil.Call("1", "a", `{}`), testutil.Call("2", "b", `{}`))
	testutil.WaitFor(t, h.entered, "the hook to start")
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	testutil.WaitFor(t, closed, "Session.Close to return")
	rs := results(t, got, "a deaf Before hook that suspended the batch, session closed")
	checkHookAbandoned(t, rs, toolkit.ErrClosed)
	checkLateIgnored(t, h, rs, &ran)

	// A hook that listens gets a context that ends with ErrClosed as its cause.
	tk2 := testutil.Kit(t)
	testutil.Add(t, tk2, countTool(t, "a", &ran))
	cause := make(chan error, 1)
	waiting := make(chan struct{})
	_ = tk2.Use(toolkit.Interceptor{Name: "ask", BeforeBatch: func(ctx context.Context, p *toolkit.BatchPlan) {
		p.Suspend()
		close(waiting)
		<-ctx.Done()
		cause <- context.Cause(ctx)
	}})
	s2 := testutil.Session(t, tk2, "s")
	got = start(s2, context.Background(), false, testutil.Call("1", "a", `{}`))
	testutil.WaitFor(t, waiting, "the hook to wait")
	s2.Close()
	rs = results(t, got, "a listening hook, session closed")
	if err := <-cause; !errors.Is(err, toolkit.ErrClosed) {
		t.Errorf("the hook's context ended with %v", err)
	}
	if rs[0].State != events.StateInterrupted || !errors.Is(rs[0].Err, toolkit.ErrClosed) {
		t.Errorf("%s %v", rs[0].State, rs[0].Err)
	}
}

// TestBeforeHookHasNoDeadline: the calls' deadlines start after Before, so
// a hook may wait longer than the toolkit's default timeout (for a person's
// decision): it is not cut short, and the calls then run with their whole
// timeout.
func TestBeforeHookHasNoDeadline(t *testing.T) {
	tk := testutil.Kit(t, toolkit.WithDefaultTimeout(30*time.Millisecond), toolkit.WithCancelGrace(stuckGrace))
	var ran atomic.Int32
	testutil.Add(t, tk, countTool(t, "a", &ran))
	_ = tk.Use(toolkit.Interceptor{Name: "slow", BeforeBatch: func(ctx context.Context, p *toolkit.BatchPlan) {
		select {
		case <-time.After(150 * time.Millisecond):
		case <-ctx.Done():
			t.Errorf("the hook's context ended: %v", context.Cause(ctx))
		}
	}})
	rs := testutil.Run(t, tk, "s", testutil.Call("1", "a", `{}`))
	if rs[0].State != events.StateSuccess || ran.Load() != 1 {
		t.Fatalf("%s %v", rs[0].State, rs[0].Err)
	}
}

// stuckResolver resolves "ghost" only after release is closed, ignoring its
// context (the tool it then returns must be ignored), "polite" never but
// returning when its context ends, and nothing else.
type stuckResolver struct {
	entered  chan struct{} // ghost was asked
	asked    chan struct{} // polite was asked (once)
	release  chan struct{}
	returned chan struct{}
	late     *toolkit.Tool
	cause    chan error
}

func newStuckResolver(late *toolkit.Tool) *stuckResolver {
	return &stuckResolver{entered: make(chan struct{}), asked: make(chan struct{}), release: make(chan struct{}), returned: make(chan struct{}), late: late, cause: make(chan error, 1)}
}

// free releases the resolver at the end of the test, before the toolkit
// made before it is closed.
func (r *stuckResolver) free(t *testing.T) {
	t.Cleanup(func() {
		select {
		case <-r.release:
		default:
			close(r.release)
		}
	})
}

func (r *stuckResolver) resolve(ctx context.Context, _ *toolkit.Session, c toolkit.Call) (*toolkit.Tool, error) {
	switch c.Name {
	case "ghost":
		defer close(r.returned)
		close(r.entered)
		<-r.release
		return r.late, nil
	case "polite":
		close(r.asked)
		<-ctx.Done()
		r.cause <- context.Cause(ctx)
		return nil, ctx.Err()
	}
	return nil, nil
}

// TestStuckResolverTimesOut: a ToolResolver that ignores its context gets
// the call's deadline (the toolkit's default timeout, counted from the
// stage's start) and the grace period; then the call is a timeout whose
// message names the resolver, the batch goes on with the next call, and
// the tool the resolver returns later is ignored. A resolver that listens
// sees the deadline, and its call is a timeout too. Once it returned and
// the toolkit is closed, no goroutine is left.
func TestStuckResolverTimesOut(t *testing.T) {
	for _, run := range []bool{false, true} {
		name := map[bool]string{false: "Start", true: "Run"}[run]
		t.Run(name, func(t *testing.T) {
			t.Cleanup(leak.Check(t)) // last: after the resolver's release and Close
			var ran, lateRan atomic.Int32
			late := countTool(t, "ghost", &lateRan)
			r := newStuckResolver(late)
			rec := &testutil.Recorder{}
			tk := testutil.Kit(t, toolkit.WithDefaultTimeout(50*time.Millisecond), toolkit.WithCancelGrace(stuckGrace),
				toolkit.WithToolResolver(r.resolve), toolkit.WithObserver(rec))
			r.free(t)
			testutil.Add(t, tk, countTool(t, "a", &ran))
			got := start(testutil.Session(t, tk, "s"), context.Background(), run, testutil.Call("1", "ghost", `{}`), testutil.Call("2", "a", `{}`))
			rs := results(t, got, "a deaf resolver, 50 ms default timeout")
			text := rs[0].Text()
			if rs[0].State != events.StateTimeout || !errors.Is(rs[0].Err, toolkit.ErrTimeout) || !errors.Is(rs[0].Err, context.DeadlineExceeded) {
				t.Errorf("ghost: %s %v", rs[0].State, rs[0].Err)
			}
			for _, want := range []string{`tool "ghost"`, "tool resolver", "did not return", "never ran"} {
				if !strings.Contains(text, want) {
					t.Errorf("ghost: the model reads %q, which does not say %q", text, want)
				}
			}
			if rs[1].State != events.StateSuccess || ran.Load() != 1 {
				t.Errorf("the call after it: %s %v", rs[1].State, rs[1].Err)
			}
			// Like any call that fails before running, it has a start, its
			// message as a delta, and its result.
			if got := events.ContentText(rec.Content("1")); got != text {
				t.Errorf("ghost: deltas %q, result %q", got, text)
			}
			rec.Check(t)
			close(r.release)
			testutil.WaitFor(t, r.returned, "the resolver to return once released")
			time.Sleep(10 * time.Millisecond) // a late tool would run now
			if lateRan.Load() != 0 {
				t.Error("the tool the resolver returned late ran")
			}

			// A resolver that listens to its context.
			rs = results(t, start(testutil.Session(t, tk, "s"), context.Background(), run, testutil.Call("3", "polite", `{}`)), "a listening resolver")
			if rs[0].State != events.StateTimeout || !errors.Is(rs[0].Err, toolkit.ErrTimeout) || !strings.Contains(rs[0].Text(), "tool resolver") {
				t.Errorf("polite: %s %q", rs[0].State, rs[0].Text())
			}
			if err := <-r.cause; !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("the resolver's context ended with %v", err)
			}
		})
	}
}

// TestStuckResolverCancelled: cancelling the caller's context, or closing
// the toolkit, ends a deaf resolver's wait after the grace period: its call
// is interrupted with a message that names the resolver, the calls after
// it never run, and Run or Wait return (Close itself within its context,
// though the resolver's pool goroutine is still stuck).
func TestStuckResolverCancelled(t *testing.T) {
	for _, v := range []struct {
		name       string
		run, close bool
	}{{"Start", false, false}, {"Run", true, false}, {"Start/Close", false, true}, {"Run/Close", true, true}} {
		t.Run(v.name, func(t *testing.T) {
			var ran atomic.Int32
			r := newStuckResolver(nil)
			tk := testutil.Kit(t, toolkit.WithCancelGrace(stuckGrace), toolkit.WithToolResolver(r.resolve))
			r.free(t)
			testutil.Add(t, tk, countTool(t, "a", &ran))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			got := start(testutil.Session(t, tk, "s"), ctx, v.run, testutil.Call("1", "ghost", `{}`), testutil.Call("2", "a", `{}`))
			testutil.WaitFor(t, r.entered, "the resolver to be asked")
			cause := error(context.Canceled)
			if v.close {
				cause = toolkit.ErrClosed
				cctx, ccancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				defer ccancel()
				began := time.Now()
				if err := tk.Close(cctx); !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Close: %v; want the context's error while the resolver's goroutine is stuck", err)
				}
				if took := time.Since(began); took > 5*time.Second {
					t.Fatalf("Close took %v with a 300 ms context", took)
				}
			} else {
				cancel()
			}
			rs := results(t, got, "a deaf resolver, batch interrupted")
			text := rs[0].Text()
			if rs[0].State != events.StateInterrupted || !errors.Is(rs[0].Err, toolkit.ErrInterrupted) || !errors.Is(rs[0].Err, cause) {
				t.Errorf("ghost: %s %v", rs[0].State, rs[0].Err)
			}
			for _, want := range []string{`tool "ghost"`, "tool resolver", "did not return", "never ran"} {
				if !strings.Contains(text, want) {
					t.Errorf("ghost: the model reads %q, which does not say %q", text, want)
				}
			}
			if rs[1].State != events.StateInterrupted || ran.Load() != 0 {
				t.Errorf("the call after it: %s %v", rs[1].State, rs[1].Err)
			}
		})
	}
}

// TestResolverContextEndsWithBatch: the resolver's context ends when the
// batch is cancelled (Batch.Cancel) or the toolkit closed, not only with the
// caller's context.
func TestResolverContextEndsWithBatch(t *testing.T) {
	for _, how := range []string{"Cancel", "Close"} {
		t.Run(how, func(t *testing.T) {
			r := newStuckResolver(nil)
			tk := testutil.Kit(t, toolkit.WithToolResolver(r.resolve))
			b := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("1", "polite", `{}`)})
			testutil.WaitFor(t, r.asked, "the resolver to be asked")
			want := context.Canceled
			if how == "Cancel" {
				b.Cancel()
			} else {
				want = toolkit.ErrClosed
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := tk.Close(ctx); err != nil {
					t.Fatalf("Close: %v", err)
				}
			}
			testutil.WaitFor(t, b.Done(), "the batch to end")
			if rs := b.Wait(); rs[0].State != events.StateInterrupted || !errors.Is(rs[0].Err, want) {
				t.Errorf("%s %v", rs[0].State, rs[0].Err)
			}
			if err := <-r.cause; !errors.Is(err, want) {
				t.Errorf("the resolver's context ended with %v, want %v", err, want)
			}
		})
	}
}

// TestBatchHookOnCancellableRun: with a context that can be cancelled,
// Session.Run runs the Before hooks on a pool goroutine; what they decide
// reaches the calls as on the caller's goroutine, and no call starts
// before they return.
func TestBatchHookOnCancellableRun(t *testing.T) {
	tk := testutil.Kit(t)
	var ran atomic.Int32
	testutil.Add(t, tk, countTool(t, "a", &ran), countTool(t, "b", &ran))
	var sawRun atomic.Int32
	_ = tk.Use(toolkit.Interceptor{Name: "policy", BeforeBatch: func(ctx context.Context, p *toolkit.BatchPlan) {
		sawRun.Store(ran.Load() + 1)
		if v, _ := ctx.Value(callerKey{}).(string); v != "caller's" {
			t.Errorf("the hook's context lacks the caller's values: %q", v)
		}
		p.Decide(0, toolkit.Failure(events.StateDenied, errors.New("no a today")))
		p.Rewrite(1, "a", nil)
	}})
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), callerKey{}, "caller's"))
	defer cancel()
	rs := testutil.Session(t, tk, "s").Run(ctx, []toolkit.Call{testutil.Call("1", "a", `{}`), testutil.Call("2", "b", `{}`)})
	if sawRun.Load() != 1 {
		t.Errorf("a call ran before the hook")
	}
	if rs[0].State != events.StateDenied || rs[0].Text() != "Error: no a today" || rs[1].State != events.StateSuccess || rs[1].Text() != "a ran" {
		t.Fatalf("%s %q, %s %q", rs[0].State, rs[0].Text(), rs[1].State, rs[1].Text())
	}
}

type callerKey struct{}

// TestStuckAfterHook: an After hook that ignores its context holds its
// batch no longer than Batch.Cancel or Toolkit.Close plus the cancel grace
// period: Wait then returns the calls' final results (the cancellation
// changes none of them), the batch_end event goes out once, the hooks after
// the stuck one do not run, and nothing changes when it finally returns.
func TestStuckAfterHook(t *testing.T) {
	for _, how := range []string{"Cancel", "Close"} {
		t.Run(how, func(t *testing.T) {
			t.Cleanup(leak.Check(t)) // last: after the hook's release and Close
			rec := &testutil.Recorder{}
			tk := testutil.Kit(t, toolkit.WithCancelGrace(stuckGrace), toolkit.WithObserver(rec), toolkit.WithBatchEndEvents())
			var ran atomic.Int32
			testutil.Add(t, tk, countTool(t, "a", &ran))
			entered, release, returned := make(chan struct{}), releaseAtEnd(t), make(chan struct{})
			var next atomic.Bool
			_ = tk.Use(toolkit.Interceptor{Name: "deaf", AfterBatch: func(_ context.Context, _ *toolkit.Batch, _ []toolkit.Result) {
				defer close(returned)
				close(entered)
				<-release
			}})
			_ = tk.Use(toolkit.Interceptor{Name: "next", AfterBatch: func(context.Context, *toolkit.Batch, []toolkit.Result) { next.Store(true) }})
			b := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("1", "a", `{}`)})
			testutil.WaitFor(t, entered, "the After hook to start")
			switch how {
			case "Cancel":
				b.Cancel()
			case "Close":
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				defer cancel()
				go tk.Close(ctx)
			}
			got := make(chan []toolkit.Result, 1)
			go func() { got <- b.Wait() }()
			rs := results(t, got, "a deaf After hook, then "+how)
			if rs[0].State != events.StateSuccess || rs[0].Text() != "a ran" {
				t.Errorf("call 1: %s %q; the cancellation came after it was final", rs[0].State, rs[0].Text())
			}
			if next.Load() {
				t.Error("the hook after the abandoned one ran")
			}
			close(release)
			testutil.WaitFor(t, returned, "the hook to return once released")
			if again := b.Wait(); again[0].State != rs[0].State || again[0].Text() != rs[0].Text() {
				t.Errorf("the result changed once the hook returned: %s %q", again[0].State, again[0].Text())
			}
			if ends := len(rec.OfType(events.TypeBatchEnd)); ends != 1 {
				t.Errorf("%d batch_end events, want 1", ends)
			}
			if n := ran.Load(); n != 1 {
				t.Errorf("the tool ran %d times", n)
			}
			_ = tk.Close(context.Background())
		})
	}
}

// TestAfterHookOutlivesTheCaller: an After hook's context does not end with
// the caller's: the results are final, and a hook that records them is not
// cut short by a caller that left.
func TestAfterHookOutlivesTheCaller(t *testing.T) {
	tk := testutil.Kit(t, toolkit.WithCancelGrace(stuckGrace))
	var ran atomic.Int32
	testutil.Add(t, tk, countTool(t, "a", &ran))
	entered, cancelled := make(chan struct{}), make(chan struct{})
	var errAtEnd atomic.Value
	_ = tk.Use(toolkit.Interceptor{Name: "slow", AfterBatch: func(ctx context.Context, _ *toolkit.Batch, _ []toolkit.Result) {
		close(entered)
		<-cancelled
		time.Sleep(5 * stuckGrace) // past the grace period a cancellation would give
		errAtEnd.Store(fmt.Sprint(ctx.Err()))
	}})
	ctx, cancel := context.WithCancel(context.Background())
	b := testutil.Session(t, tk, "s").Start(ctx, []toolkit.Call{testutil.Call("1", "a", `{}`)})
	testutil.WaitFor(t, entered, "the After hook to start")
	cancel()
	close(cancelled)
	rs := b.Wait()
	if got := errAtEnd.Load(); got != "<nil>" {
		t.Errorf("the After hook's context ended with the caller's: %v", got)
	}
	if rs[0].State != events.StateSuccess {
		t.Errorf("call 1: %s", rs[0].State)
	}
}
