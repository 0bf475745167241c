package toolkit_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// TestInterceptorPanicsBecomeErrorResults: an interceptor that panics,
// before or after calling next, costs its call a result with a *PanicError, not
// the process; the other calls of the batch are untouched.
func TestInterceptorPanicsBecomeErrorResults(t *testing.T) {
	for _, when := range []string{"before", "after"} {
		t.Run(when, func(t *testing.T) {
			rec := &testutil.Recorder{}
			tk := testutil.Kit(t, toolkit.WithObserver(rec))
			testutil.Add(t, tk, echoTool(t))
			err := tk.Use(toolkit.Interceptor{Name: "bomb", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
				if inv.Call.ID != "c-boom" {
					return next(ctx, inv)
				}
				if when == "before" {
					panic("interceptor bug")
				}
				next(ctx, inv)
				panic("interceptor bug")
			}})
			if err != nil {
				t.Fatal(err)
			}
			rs := testutil.Run(t, tk, "s", testutil.Call("c-ok", "echo", `{"s":"a"}`), testutil.Call("c-boom", "echo", `{"s":"b"}`))
			if rs[0].State != events.StateSuccess || rs[0].Text() != "echo:a" {
				t.Fatalf("other call: %s %q", rs[0].State, rs[0].Text())
			}
			var pe *toolkit.PanicError
			if rs[1].State != events.StateError || !isErr[*toolkit.PanicError](rs[1].Err) || !errors.As(rs[1].Err, &pe) {
				t.Fatalf("panicking interceptor: %s %v", rs[1].State, rs[1].Err)
			}
			if pe.In != "an interceptor" || !strings.Contains(rs[1].Text(), "interceptor bug") {
				t.Fatalf("text %q", rs[1].Text())
			}
			testutil.CheckDeltasAddUp(t, rec, rs[1])
		})
	}
}

// panickyVisibility panics when asked about a call to the tool "echo".
type panickyVisibility struct{}

func (panickyVisibility) Tools(_ context.Context, _ *toolkit.Session, registered []*toolkit.Tool) ([]*toolkit.Tool, error) {
	return registered, nil
}

func (panickyVisibility) Resolve(_ context.Context, _ *toolkit.Session, t *toolkit.Tool) (*toolkit.Tool, error) {
	if t.Spec().Name == "echo" {
		panic("visibility bug")
	}
	return t, nil
}

// TestVisibilityAndUnknownInterceptorPanics: a Visibility whose Resolve
// panics refuses the call with a *PanicError, and so does an interceptor of
// unknown calls that panics; neither takes the process down.
func TestVisibilityAndUnknownInterceptorPanics(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, echoTool(t))
	tk.SetVisibility(panickyVisibility{})
	err := tk.Use(toolkit.Interceptor{Name: "alias", Unknown: true, Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		if inv.Unknown() && inv.Call.Name == "boom" {
			panic("unknown interceptor bug")
		}
		return next(ctx, inv)
	}})
	if err != nil {
		t.Fatal(err)
	}
	rs := testutil.Run(t, tk, "s", testutil.Call("c-1", "echo", `{}`), testutil.Call("c-2", "boom", `{}`))
	for i, want := range []string{"visibility bug", "unknown interceptor bug"} {
		if rs[i].State != events.StateError || !isErr[*toolkit.PanicError](rs[i].Err) || !strings.Contains(rs[i].Text(), want) {
			t.Fatalf("call %d: %s %v %q", i, rs[i].State, rs[i].Err, rs[i].Text())
		}
	}
}

// TestNilContext: a nil context is a caller's mistake that gets a precise
// error on every call (Run and Start alike), and Toolkit.Close(nil) closes
// without a bound; never a panic.
func TestNilContext(t *testing.T) {
	tk := toolkit.New()
	testutil.Add(t, tk, echoTool(t))
	s := testutil.Session(t, tk, "s")
	calls := []toolkit.Call{testutil.Call("c-1", "echo", `{}`), testutil.Call("c-2", "echo", `{}`)}
	//lint:ignore SA1012 the nil context is the point of the test
	for _, rs := range [][]toolkit.Result{s.Run(nil, calls), s.Start(nil, calls).Wait()} { //nolint:staticcheck
		for _, r := range rs {
			if r.State != events.StateError || !errors.Is(r.Err, toolkit.ErrInvalidCall) || !strings.Contains(r.Text(), "nil context") {
				t.Fatalf("nil context: %s %v %q", r.State, r.Err, r.Text())
			}
		}
	}
	if err := tk.Close(nil); err != nil { //nolint:staticcheck
		t.Fatalf("Close(nil): %v", err)
	}
}

// TestSessionCloseEndsSuspendWaits: Session.Close interrupts every call
// suspended in the session, those an interceptor suspended
// (Invocation.Suspend) as well as external ones: their wait has no
// deadline, so nothing else would end it.
func TestSessionCloseEndsSuspendWaits(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, echoTool(t))
	tk.Use(toolkit.Interceptor{Name: "gate", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		wait, _ := inv.Suspend("approval")
		<-wait.Done()
		return inv.ContextFailure(wait)
	}})
	s := testutil.Session(t, tk, "s")
	run := s.Start(context.Background(), []toolkit.Call{testutil.Call("1", "echo", `{}`)})
	for r := range run.Results() {
		if r.State == events.StateSuspended {
			s.Close()
			break
		}
	}
	select {
	case <-run.Done():
	case <-time.After(5 * time.Second):
		run.Cancel()
		t.Fatal("Session.Close left a suspended call waiting")
	}
	if r := run.Wait()[0]; r.State != events.StateInterrupted || !errors.Is(r.Err, toolkit.ErrClosed) || !strings.Contains(r.Text(), "session") {
		t.Fatalf("%s %v %q", r.State, r.Err, r.Text())
	}
}

// TestResumeAfterCancelGetsGrace: an interceptor that resumes its call after
// the batch was cancelled, into a handler that ignores its context, gets the
// call its final result at once (the handler is not started: the resumed
// context is already over).
func TestResumeAfterCancelGetsGrace(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	tk := testutil.Kit(t, toolkit.WithCancelGrace(20*time.Millisecond))
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "stubborn"}, func(ctx context.Context, _ none) (string, error) {
		<-release // ignores ctx
		return "late", nil
	}))
	tk.Use(toolkit.Interceptor{Name: "gate", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		wait, resume := inv.Suspend("approval")
		<-wait.Done()              // the batch was cancelled
		return next(resume(), inv) // goes on regardless
	}})
	run := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("1", "stubborn", `{}`)})
	for r := range run.Results() {
		if r.State == events.StateSuspended {
			run.Cancel()
			break
		}
	}
	select {
	case <-run.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("no result 5 s after the cancellation (grace 20 ms)")
	}
	if r := run.Wait()[0]; r.State != events.StateInterrupted || !errors.Is(r.Err, context.Canceled) {
		t.Fatalf("%s %v", r.State, r.Err)
	}
}

// TestCancelAfterDeadlineKeepsGraceEnd: a batch cancelled after a call's
// deadline passed, while its handler (which ignores its context) is in its
// grace period, does not push the end of the grace period later: the call
// is reported at its deadline plus the grace at the latest.
func TestCancelAfterDeadlineKeepsGraceEnd(t *testing.T) {
	const timeout, grace = 20 * time.Millisecond, 400 * time.Millisecond
	release, late := make(chan struct{}), make(chan struct{})
	defer close(release)
	tk := testutil.Kit(t, toolkit.WithCancelGrace(grace))
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "stubborn", Timeout: timeout}, func(ctx context.Context, _ none) (string, error) {
		<-ctx.Done()
		close(late)
		<-release // ignores the end of its context
		return "late", nil
	}))
	run := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("1", "stubborn", `{}`)})
	<-late
	time.Sleep(grace * 5 / 8) // well inside the grace period (not a race window: a point in time)
	run.Cancel()
	r := run.Wait()[0]
	if r.State != events.StateTimeout {
		t.Fatalf("%s %v", r.State, r.Err)
	}
	// Cancelling postponed the end to cancel+grace >= timeout+grace*13/8.
	if limit := timeout + grace + grace/2; r.Duration > limit {
		t.Fatalf("reported after %v, want by %v (deadline %v + grace %v)", r.Duration, limit, timeout, grace)
	}
}

// TestHugeUnknownNameStaysShort: a model that calls a tool by a name of a
// megabyte reads back an error of a few hundred bytes (the name cut short),
// whether the call fails as unknown or is interrupted before it starts;
// UnknownToolError.Name keeps the whole name for code.
func TestHugeUnknownNameStaysShort(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, echoTool(t))
	huge := strings.Repeat("n", 1<<20)
	s := testutil.Session(t, tk, "s")
	r := s.Run(context.Background(), []toolkit.Call{testutil.Call("1", huge, `{}`)})[0]
	var ue *toolkit.UnknownToolError
	if !errors.As(r.Err, &ue) || ue.Name != huge {
		t.Fatalf("%s %v", r.State, r.Err)
	}
	if n := len(r.Text()); n > 1024 {
		t.Fatalf("unknown tool: the model reads %d bytes", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r = s.Run(ctx, []toolkit.Call{testutil.Call("1", huge, `{}`)})[0]
	if r.State != events.StateInterrupted || len(r.Text()) > 1024 {
		t.Fatalf("interrupted: %s, the model reads %d bytes", r.State, len(r.Text()))
	}
}

// TestStartDuringClose: batches started while the toolkit (or its parent)
// closes, and after, end with every call final, and do not start pool
// goroutines behind Close's back (under -race, the pool's WaitGroup was
// added to while Close waited on it).
func TestStartDuringClose(t *testing.T) {
	for range 100 {
		tk := toolkit.New()
		testutil.Add(t, tk, echoTool(t))
		s := testutil.Session(t, tk, "s")
		ks := testutil.Session(t, tk.Derive(), "k")
		var wg sync.WaitGroup
		var bs [4]*toolkit.Batch
		two := []toolkit.Call{testutil.Call("1", "echo", `{}`), testutil.Call("2", "echo", `{}`)}
		wg.Add(3)
		go func() { defer wg.Done(); bs[0] = s.Start(context.Background(), two) }()
		go func() { defer wg.Done(); bs[1] = ks.Start(context.Background(), two) }()
		go func() { defer wg.Done(); tk.Close(context.Background()) }()
		wg.Wait()
		bs[2], bs[3] = s.Start(context.Background(), two), ks.Start(context.Background(), two)
		for i, b := range bs {
			for _, r := range b.Wait() {
				if r.State != events.StateSuccess && !(r.State == events.StateInterrupted && errors.Is(r.Err, toolkit.ErrClosed)) {
					t.Fatalf("batch %d: %s %v", i, r.State, r.Err)
				}
			}
		}
		if i := 2; bs[i].Wait()[0].State != events.StateInterrupted {
			t.Fatalf("a batch started after Close ran")
		}
	}
}

// stuckVisibility blocks Resolve for call "1" until release is closed,
// ignoring the call's context, then refuses the call.
type stuckVisibility struct {
	entered chan struct{}
	release chan struct{}
}

func (v stuckVisibility) Tools(_ context.Context, _ *toolkit.Session, registered []*toolkit.Tool) ([]*toolkit.Tool, error) {
	return registered, nil
}

func (v stuckVisibility) Resolve(ctx context.Context, _ *toolkit.Session, t *toolkit.Tool) (*toolkit.Tool, error) {
	if info, _ := toolkit.CallInfoFrom(ctx); info.CallID == "1" {
		close(v.entered)
		<-v.release
		return nil, errors.New("refused, too late")
	}
	return t, nil
}

// TestStuckVisibilityOnDriver: a Visibility.Resolve that outlives the call's
// deadline and grace on the batch's driver is abandoned like a handler: a
// pool worker drives on, and when Resolve finally returns (with an error),
// the old driver leaves the batch alone instead of driving it a second
// time (which ended the batch twice: a panic).
func TestStuckVisibilityOnDriver(t *testing.T) {
	tk := toolkit.New(toolkit.WithCancelGrace(10 * time.Millisecond))
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "slow", Timeout: 20 * time.Millisecond}, func(ctx context.Context, _ none) (string, error) {
		return "ran", nil
	}))
	v := stuckVisibility{entered: make(chan struct{}), release: make(chan struct{})}
	tk.SetVisibility(v)
	s := testutil.Session(t, tk, "s")
	b := s.Start(context.Background(), []toolkit.Call{testutil.Call("1", "slow", `{}`), testutil.Call("2", "slow", `{}`)})
	<-v.entered
	rs := b.Wait()
	if rs[0].State != events.StateTimeout || rs[1].State != events.StateSuccess {
		t.Fatalf("results %s %s", rs[0].State, rs[1].State)
	}
	close(v.release) // the stuck driver comes back
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tk.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if rs := b.Wait(); rs[0].State != events.StateTimeout || rs[1].State != events.StateSuccess {
		t.Fatalf("results changed: %s %s", rs[0].State, rs[1].State)
	}
}

// TestAbandonedInInterceptor: an interceptor that ignores its context and
// holds the call past its deadline and grace gets the call abandoned like a
// stuck handler: a timeout on time, and (under -race) no data race between
// the set-up of the call's chain and the abandonment that reads it.
func TestAbandonedInInterceptor(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	tk := testutil.Kit(t, toolkit.WithCancelGrace(10*time.Millisecond))
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "t", Timeout: 10 * time.Millisecond}, func(ctx context.Context, _ none) (string, error) {
		return "ran", nil
	}))
	tk.Use(toolkit.Interceptor{Name: "deaf", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		<-release // ignores ctx, never touches the call
		return next(ctx, inv)
	}})
	b := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("1", "t", `{}`)})
	select {
	case <-b.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("no result 5 s after a 10 ms deadline")
	}
	if r := b.Wait()[0]; r.State != events.StateTimeout {
		t.Fatalf("%s %v", r.State, r.Err)
	}
}

// bombFilter is a stream filter that panics at one step: on the delta
// holding "secret" (Filter), when flushed, or when reset (an interceptor
// replaced the result).
type bombFilter struct{ at string }

func (b *bombFilter) Filter(p events.Part) []events.Part {
	if b.at == "filter" && strings.Contains(p.Text, "secret") {
		panic("filter bug")
	}
	return []events.Part{p}
}

func (b *bombFilter) Flush() []events.Part {
	if b.at == "flush" {
		panic("filter bug")
	}
	return nil
}

func (b *bombFilter) Reset() {
	if b.at == "reset" {
		panic("filter bug")
	}
}

// TestStreamFilterPanics: a stream filter that panics (on a delta, when
// flushed, when the content is reset) fails its call with a *PanicError and
// never crashes the process; fail closed: no output of the call reaches
// the model or an observer after the filter broke, and the error message
// does not go through the broken filter again. Other calls are untouched.
func TestStreamFilterPanics(t *testing.T) {
	for _, at := range []string{"filter", "flush", "reset"} {
		t.Run(at, func(t *testing.T) {
			rec := &testutil.Recorder{}
			tk := testutil.Kit(t, toolkit.WithObserver(rec))
			testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "leaky"}, func(ctx context.Context, _ none) (string, error) {
				em := stream.From(ctx)
				_ = em.Text("public ")
				_ = em.Text("secret ")
				return "", nil
			}))
			testutil.Add(t, tk, echoTool(t))
			err := tk.Use(toolkit.Interceptor{Name: "filters", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
				if inv.Call.Name != "leaky" {
					return next(ctx, inv)
				}
				inv.FilterStream(&bombFilter{at: at})
				out := next(ctx, inv)
				if at == "reset" {
					return toolkit.Success(events.Text("replaced")) // the content starts over
				}
				return out
			}})
			if err != nil {
				t.Fatal(err)
			}
			rs := testutil.Run(t, tk, "s", testutil.Call("c-ok", "echo", `{"s":"a"}`), testutil.Call("c-leak", "leaky", `{}`))
			if rs[0].State != events.StateSuccess || rs[0].Text() != "echo:a" {
				t.Fatalf("other call: %s %q", rs[0].State, rs[0].Text())
			}
			r := rs[1]
			var pe *toolkit.PanicError
			if r.State != events.StateError || !errors.As(r.Err, &pe) || pe.In != "a stream filter" {
				t.Fatalf("call with a panicking filter: %s %v: %q", r.State, r.Err, r.Text())
			}
			if strings.Contains(r.Text(), "secret") || !strings.Contains(r.Text(), "withheld") {
				t.Fatalf("the model reads %q", r.Text())
			}
			if at == "filter" { // the other two let it through on purpose
				for _, d := range rec.DeltaTexts("c-leak") {
					if strings.Contains(d, "secret") {
						t.Fatalf("an observer saw %q", d)
					}
				}
			}
			testutil.CheckDeltasAddUp(t, rec, r)
		})
	}
}
