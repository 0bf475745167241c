//go:build toolstream_testhooks

package toolkit_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/leak"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// Tests of the windows between a call's slot and its start: a deadline or a
// cancellation that comes while a runner takes the call. The runner hook
// (export_hooks_test.go, in builds with -tags toolstream_testhooks) holds
// the runner at the edge of the window until the clock or the cancellation
// has done its part; nothing sleeps.

// holdRunner makes runners about to take call id hold, before they take it
// from the queue (claimed false) or once they did (true), until until
// returns; the hook is cleared at the end of the test.
func holdRunner(t *testing.T, id string, claimed bool, until func(ctx context.Context)) {
	toolkit.SetRunnerHookForTest(func(ctx context.Context, c bool) {
		if info, _ := toolkit.CallInfoFrom(ctx); info.CallID == id && c == claimed {
			until(ctx)
		}
	})
	t.Cleanup(func() { toolkit.SetRunnerHookForTest(nil) })
}

// checkResolverTimeout checks the result of a call whose resolver used its
// time up: a timeout that names the resolver, with the events of any call
// that fails before running (a start, its message, its result), whichever
// goroutine found its deadline passed.
func checkResolverTimeout(t *testing.T, rec *testutil.Recorder, r toolkit.Result) {
	t.Helper()
	if r.State != events.StateTimeout || !errors.Is(r.Err, toolkit.ErrTimeout) || !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Errorf("ghost: %s %v", r.State, r.Err)
	}
	for _, want := range []string{`tool "ghost"`, "timed out after 30ms", "tool resolver", "did not return", "never ran"} {
		if !strings.Contains(r.Text(), want) {
			t.Errorf("ghost: the model reads %q, which does not say %q", r.Text(), want)
		}
	}
	if got := testutil.Types(rec.Of(r.Call.ID)); !slices.Equal(got, []events.Type{events.TypeStart, events.TypeDelta, events.TypeResult}) {
		t.Errorf("ghost's events: %v", got)
	}
	if got := events.ContentText(rec.Content(r.Call.ID)); got != r.Text() {
		t.Errorf("ghost: deltas %q, result %q", got, r.Text())
	}
}

// TestResolverTimeoutWhileQueued: a call whose ToolResolver did not return
// within the call's deadline and the grace period reaches its stage with its
// deadline passed. When the clock finds it before a runner takes it
// (stage.expire), it is reported with the resolver's message, not "timed
// out before it could start", with a start like when a runner takes it in
// time, and the batch goes on with the next call.
func TestResolverTimeoutWhileQueued(t *testing.T) {
	for _, run := range []bool{false, true} {
		t.Run(map[bool]string{false: "Start", true: "Run"}[run], func(t *testing.T) {
			t.Cleanup(leak.Check(t))
			var ran atomic.Int32
			r := newStuckResolver(nil)
			obs, seen := resultSeen("1")
			rec := &testutil.Recorder{}
			tk := testutil.Kit(t, toolkit.WithDefaultTimeout(30*time.Millisecond), toolkit.WithCancelGrace(stuckGrace),
				toolkit.WithToolResolver(r.resolve), toolkit.WithInlineObserver(obs), toolkit.WithObserver(rec))
			r.free(t)
			testutil.Add(t, tk, countTool(t, "a", &ran))
			// The runner waits until the clock reported the call.
			holdRunner(t, "1", false, func(context.Context) { await(t, seen, "the call's timeout in the queue") })
			rs := results(t, start(testutil.Session(t, tk, "s"), context.Background(), run, testutil.Call("1", "ghost", `{}`), testutil.Call("2", "a", `{}`)), "a deaf resolver")
			checkResolverTimeout(t, rec, rs[0])
			if rs[1].State != events.StateSuccess || ran.Load() != 1 {
				t.Errorf("the call after it: %s %v", rs[1].State, rs[1].Err)
			}
			rec.Check(t)
		})
	}
}

// TestResolverTimeoutAsItStarts: the same call taken by a runner just as
// the clock ends its context (call.begin sees it over) is reported the same
// way: the resolver's timeout, with a start.
func TestResolverTimeoutAsItStarts(t *testing.T) {
	t.Cleanup(leak.Check(t))
	r := newStuckResolver(nil)
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithDefaultTimeout(30*time.Millisecond), toolkit.WithCancelGrace(stuckGrace),
		toolkit.WithToolResolver(r.resolve), toolkit.WithObserver(rec))
	r.free(t)
	holdRunner(t, "1", true, func(ctx context.Context) { await(t, ctx.Done(), "the call's deadline") })
	rs := results(t, start(testutil.Session(t, tk, "s"), context.Background(), false, testutil.Call("1", "ghost", `{}`)), "a deaf resolver")
	checkResolverTimeout(t, rec, rs[0])
	rec.Check(t)
}

// TestDeadlineBetweenSlotAndStart: a call whose deadline passes after a
// runner took it but before it started never starts: its handler does not
// run, no start event goes out, and it is a timeout "before it could
// start".
func TestDeadlineBetweenSlotAndStart(t *testing.T) {
	var ran atomic.Int32
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithObserver(rec))
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "slow", Timeout: 20 * time.Millisecond}, func(context.Context, none) (string, error) {
		ran.Add(1)
		return "ran", nil
	}))
	holdRunner(t, "1", true, func(ctx context.Context) { await(t, ctx.Done(), "the call's deadline") })
	rs := testutil.Run(t, tk, "s", testutil.Call("1", "slow", `{}`))
	r := rs[0]
	if r.State != events.StateTimeout || !errors.Is(r.Err, toolkit.ErrTimeout) || !errors.Is(r.Err, context.DeadlineExceeded) ||
		r.Text() != `Error: tool "slow" timed out after 20ms before it could start` {
		t.Errorf("%s %v %q", r.State, r.Err, r.Text())
	}
	if ran.Load() != 0 || !r.Started.IsZero() {
		t.Errorf("the handler ran %d times; started %v", ran.Load(), r.Started)
	}
	checkNeverStarted(t, rec, "1")
	rec.Check(t)
}

// TestCancelBetweenSlotAndStart: a batch cancelled after a runner took a
// call but before it started: the call never starts and is interrupted
// with the cancellation as its cause; the calls after it never run.
func TestCancelBetweenSlotAndStart(t *testing.T) {
	var ran atomic.Int32
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithObserver(rec))
	testutil.Add(t, tk, countTool(t, "a", &ran))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	holdRunner(t, "1", true, func(c context.Context) {
		cancel()
		await(t, c.Done(), "the batch's interruption")
	})
	rs := testutil.Session(t, tk, "s").Run(ctx, []toolkit.Call{testutil.Call("1", "a", `{}`), testutil.Call("2", "a", `{}`)})
	for _, r := range rs {
		if r.State != events.StateInterrupted || !errors.Is(r.Err, toolkit.ErrInterrupted) || !errors.Is(r.Err, context.Canceled) ||
			!strings.Contains(r.Text(), "cancelled before the call started") || !r.Started.IsZero() {
			t.Errorf("call %s: %s %v %q", r.Call.ID, r.State, r.Err, r.Text())
		}
		checkNeverStarted(t, rec, r.Call.ID)
	}
	if ran.Load() != 0 {
		t.Errorf("%d calls ran", ran.Load())
	}
	rec.Check(t)
}

// TestDecidedCallPastItsDeadlineAtStart: the same when a runner took the
// decided call just as its deadline passed (call.begin finds its context
// over): it ends with its decision, a start and its result, not as a
// timeout "before it could start".
func TestDecidedCallPastItsDeadlineAtStart(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithObserver(rec))
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "write", Timeout: 20 * time.Millisecond}, func(context.Context, none) (string, error) {
		return "written", nil
	}))
	holdRunner(t, "1", true, func(ctx context.Context) { await(t, ctx.Done(), "the call's deadline") })
	denied := errors.New("a person said no")
	rs := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("1", "write", `{}`)},
		toolkit.WithOutcome(0, toolkit.Failure(events.StateDenied, denied)))
	if r := rs[0]; r.State != events.StateDenied || !errors.Is(r.Err, denied) || r.Text() != "Error: "+denied.Error() {
		t.Errorf("%s %v %q", r.State, r.Err, r.Text())
	}
	if got := testutil.Types(rec.Of("1")); !slices.Equal(got, []events.Type{events.TypeStart, events.TypeDelta, events.TypeResult}) {
		t.Errorf("events: %v", got)
	}
	rec.Check(t)
}
