package toolkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/tracehook"
	"github.com/toolstream/toolstream/toolkit"
)

// TestBeforeHooksStopAtCancel: a Before hook that cancels its batch keeps
// the Before hooks after it from running (an After-only hook among them is
// skipped), every call is interrupted without running, and the After hooks
// still see the results.
func TestBeforeHooksStopAtCancel(t *testing.T) {
	tk := testutil.Kit(t)
	var ran atomic.Int32
	testutil.Add(t, tk, countTool(t, "a", &ran))
	var mu sync.Mutex
	var seen []string
	note := func(s string) {
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
	}
	if err := tk.Use(
		toolkit.Interceptor{Name: "record", AfterBatch: func(_ context.Context, _ *toolkit.Batch, rs []toolkit.Result) {
			for _, r := range rs {
				note("after " + r.Call.ID + " " + string(r.State))
			}
		}},
		toolkit.Interceptor{Name: "stop", BeforeBatch: func(_ context.Context, p *toolkit.BatchPlan) {
			note("stop")
			p.Batch().Cancel()
		}},
		toolkit.Interceptor{Name: "later", BeforeBatch: func(context.Context, *toolkit.BatchPlan) { note("later") }},
	); err != nil {
		t.Fatal(err)
	}
	rs := testutil.Run(t, tk, "s", testutil.Call("1", "a", `{}`), testutil.Call("2", "a", `{}`))
	for _, r := range rs {
		if r.State != events.StateInterrupted || !errors.Is(r.Err, context.Canceled) {
			t.Errorf("call %s: %s %v", r.Call.ID, r.State, r.Err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"stop", "after 1 interrupted", "after 2 interrupted"}; !slices.Equal(seen, want) || ran.Load() != 0 {
		t.Errorf("hooks ran %q (want %q); the tool ran %d times", seen, want, ran.Load())
	}
}

// TestBatchHookReplaceAndRemove: a hook replaced under its name
// (ReplaceInterceptor) keeps its place; RemoveInterceptor removes one hook
// by name and reports false for a name nobody used.
func TestBatchHookReplaceAndRemove(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "a"}, func(context.Context, none) (string, error) { return "a", nil }))
	var mu sync.Mutex
	var order []string
	hook := func(name string) toolkit.Interceptor {
		return toolkit.Interceptor{Name: strings.Fields(name)[0], BeforeBatch: func(context.Context, *toolkit.BatchPlan) {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
		}}
	}
	run := func() []string {
		mu.Lock()
		order = nil
		mu.Unlock()
		testutil.Run(t, tk, "s", testutil.Call("1", "a", `{}`))
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(order)
	}
	if err := tk.Use(hook("one"), hook("two")); err != nil {
		t.Fatal(err)
	}
	if err := tk.ReplaceInterceptor(hook("one again")); err != nil {
		t.Fatal(err)
	}
	if got := run(); !slices.Equal(got, []string{"one again", "two"}) {
		t.Errorf("hooks ran %q", got)
	}
	if tk.RemoveInterceptor("three") {
		t.Error("removed a hook nobody added")
	}
	if !tk.RemoveInterceptor("one") {
		t.Error("did not remove hook one")
	}
	if got := run(); !slices.Equal(got, []string{"two"}) {
		t.Errorf("after removing one, hooks ran %q", got)
	}
	if !tk.RemoveInterceptor("two") || tk.RemoveInterceptor("two") {
		t.Error("removing the last hook, then again")
	}
	if got := run(); len(got) != 0 {
		t.Errorf("with no hooks, %q ran", got)
	}
}

// TestBatchPlanSeesAndAsks: a Before hook reads the plan (its session, the
// tool each call runs, nil for an unknown one), asks the loop to stop
// (Batch.Stop reports it, without a call) and emits a session-level event
// observers get; with batch_end events on, the event tells each failed
// call's error and the stop.
func TestBatchPlanSeesAndAsks(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(rec), toolkit.WithBatchEndEvents())
	a := testutil.Tool(t, toolkit.Spec{Name: "a"}, func(context.Context, none) (string, error) { return "a", nil })
	testutil.Add(t, tk, a)
	s := testutil.Session(t, tk, "s")
	var sawSession, sawTools bool
	var emitErr, badEmit error
	if err := tk.Use(toolkit.Interceptor{Name: "review", BeforeBatch: func(_ context.Context, p *toolkit.BatchPlan) {
		sawSession = p.Batch().Session() == s
		sawTools = p.Tool(0) == a && p.Tool(1) == nil && p.Tool(2) == nil
		p.StopLoop("review", "a person must look first")
		emitErr = p.Emit("review_request", map[string]int{"calls": p.Len()})
		badEmit = p.Emit(events.TypeResult, nil)
	}}); err != nil {
		t.Fatal(err)
	}
	b := s.Start(context.Background(), []toolkit.Call{testutil.Call("1", "a", `{}`), testutil.Call("2", "nope", `{}`)})
	b.Wait()
	if !sawSession || !sawTools {
		t.Errorf("the plan showed the session %v, the tools %v", sawSession, sawTools)
	}
	if emitErr != nil || badEmit == nil || !strings.Contains(badEmit.Error(), "lifecycle") {
		t.Errorf("Emit: %v; a lifecycle type: %v", emitErr, badEmit)
	}
	if st, ok := b.Stop(); !ok || st.Reason != "review" || st.Detail != "a person must look first" || st.Call != "" {
		t.Errorf("Stop() = %+v, %v", st, ok)
	}
	reqs := rec.OfType("review_request")
	if len(reqs) != 1 || string(reqs[0].Data) != `{"calls":2}` || reqs[0].Session != "s" {
		t.Fatalf("review_request events: %v", reqs)
	}
	ends := rec.OfType(events.TypeBatchEnd)
	if len(ends) != 1 {
		t.Fatalf("%d batch_end events", len(ends))
	}
	var end events.BatchEnd
	if err := json.Unmarshal(ends[0].Data, &end); err != nil {
		t.Fatal(err)
	}
	if len(end.Calls) != 2 || end.Calls[0].Error != "" || !strings.Contains(end.Calls[1].Error, `unknown tool "nope"`) ||
		end.Stop == nil || end.Stop.Reason != "review" {
		t.Errorf("batch_end: %+v", end)
	}
	rec.Check(t)
}

// TestResolverErrorAfterDeadline: a resolver that gives up with an error
// of its own once its deadline passed costs its call a timeout whose
// message quotes the resolver; the result's error matches both the
// deadline and the resolver's error.
func TestResolverErrorAfterDeadline(t *testing.T) {
	unreachable := errors.New("the registry is unreachable")
	tk := testutil.Kit(t, toolkit.WithDefaultTimeout(20*time.Millisecond), toolkit.WithToolResolver(func(ctx context.Context, _ *toolkit.Session, _ toolkit.Call) (*toolkit.Tool, error) {
		<-ctx.Done()
		return nil, unreachable
	}))
	r := testutil.Run(t, tk, "s", testutil.Call("1", "ghost", `{}`))[0]
	if r.State != events.StateTimeout || !errors.Is(r.Err, toolkit.ErrTimeout) || !errors.Is(r.Err, context.DeadlineExceeded) || !errors.Is(r.Err, unreachable) {
		t.Errorf("%s %v", r.State, r.Err)
	}
	for _, want := range []string{`tool "ghost" timed out after 20ms`, "tool resolver", unreachable.Error(), "never ran"} {
		if !strings.Contains(r.Text(), want) {
			t.Errorf("the model reads %q, which does not say %q", r.Text(), want)
		}
	}
}

// TestInvocationScratchAndAbort: interceptors' locals live as long as
// promised (batch locals shared by a batch's calls, session locals by the
// session's batches and dropped by Session.Close); AbortBatch interrupts
// the calls after the one that asked with its cause, while that call ends
// with its own outcome.
func TestInvocationScratchAndAbort(t *testing.T) {
	tk := testutil.Kit(t)
	var ran atomic.Int32
	testutil.Add(t, tk, countTool(t, "a", &ran))
	batchCount := toolkit.NewBatchLocal[*atomic.Int32]()
	sessCount := toolkit.NewSessionLocal[*atomic.Int32]()
	fatal := errors.New("a fatal failure")
	var mu sync.Mutex
	var batchN, sessN []int
	if err := tk.Use(toolkit.Interceptor{Name: "count", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		bn := batchCount.LoadOrInit(inv, func() *atomic.Int32 { return new(atomic.Int32) })
		sn := sessCount.LoadOrInit(inv, func() *atomic.Int32 { return new(atomic.Int32) })
		mu.Lock()
		batchN = append(batchN, int(bn.Add(1)))
		sessN = append(sessN, int(sn.Add(1)))
		mu.Unlock()
		if inv.Logger() == nil || inv.Waiting() != "" {
			t.Error("a logger, and no wait")
		}
		if inv.Call.ID == "abort" {
			inv.AbortBatch(fatal)
			return toolkit.Failure(events.StateError, fatal)
		}
		out := next(ctx, inv)
		if v, ok := inv.MetaValue("nothing"); ok {
			t.Errorf("meta nobody set: %v", v)
		}
		return out
	}}); err != nil {
		t.Fatal(err)
	}
	s := testutil.Session(t, tk, "s")
	s.Run(context.Background(), []toolkit.Call{testutil.Call("1", "a", `{}`), testutil.Call("2", "a", `{}`)})
	rs := s.Run(context.Background(), []toolkit.Call{testutil.Call("abort", "a", `{}`), testutil.Call("3", "a", `{}`)})
	if r := rs[0]; r.State != events.StateError || !errors.Is(r.Err, fatal) {
		t.Errorf("the aborting call: %s %v", r.State, r.Err)
	}
	if r := rs[1]; r.State != events.StateInterrupted || !errors.Is(r.Err, fatal) || !strings.Contains(r.Text(), fatal.Error()) {
		t.Errorf("the call after it: %s %v %q", r.State, r.Err, r.Text())
	}
	s.Close()
	s2 := testutil.Session(t, tk, "s")
	s2.Run(context.Background(), []toolkit.Call{testutil.Call("4", "a", `{}`)})
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(batchN, []int{1, 2, 1, 1}) || !slices.Equal(sessN, []int{1, 2, 3, 1}) {
		t.Errorf("batch counts %v, session counts %v", batchN, sessN)
	}
	if ran.Load() != 3 {
		t.Errorf("the tool ran %d times", ran.Load())
	}
}

// TestSessionsAndSuspendedListing: Toolkit.Sessions lists the open
// sessions sorted, Session.Suspended the waiting calls sorted by id.
func TestSessionsAndSuspendedListing(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, externalTool(t, toolkit.Spec{Name: "ask", ConcurrencySafe: true}))
	for _, id := range []string{"b", "c", "a"} {
		testutil.Session(t, tk, id)
	}
	testutil.Session(t, tk, "c").Close()
	if got := tk.Sessions(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Sessions() = %v", got)
	}
	s := testutil.Session(t, tk, "a")
	b := s.Start(context.Background(), []toolkit.Call{
		testutil.Call("z", "ask", `{"question":"1"}`), testutil.Call("x", "ask", `{"question":"2"}`), testutil.Call("y", "ask", `{"question":"3"}`)})
	n := 0
	for r := range b.Results() {
		if r.State == events.StateSuspended {
			if n++; n == 3 {
				break
			}
		}
	}
	var ids []string
	for _, c := range s.Suspended() {
		ids = append(ids, c.ID)
	}
	if !slices.Equal(ids, []string{"x", "y", "z"}) {
		t.Errorf("Suspended() ids %v", ids)
	}
	b.Cancel()
	b.Wait()
}

// opTracer is recTracer with operations and a trace for contexts outside
// calls (Tracer.TraceContext).
type opTracer struct {
	recTracer
	ops []string
}

func (r *opTracer) Tracehook() tracehook.Tracer[*toolkit.Batch, toolkit.CallInfo, *toolkit.Tool] {
	return r
}

type opTrace struct {
	r    *opTracer
	name string
}

func (o *opTrace) SetAttr(key string, value any) {
	o.r.mu.Lock()
	o.r.ops = append(o.r.ops, o.name+" "+key)
	o.r.mu.Unlock()
}

func (o *opTrace) End(err error) {
	o.r.mu.Lock()
	o.r.ops = append(o.r.ops, o.name+" end")
	o.r.mu.Unlock()
}

func (r *opTracer) StartOp(ctx context.Context, name string) (context.Context, tracehook.OpTrace) {
	return nil, &opTrace{r, name} // no context of its own: the caller's serves
}

type outsideTrace struct{}

func (outsideTrace) TraceParent() string { return "00-outside" }
func (outsideTrace) TraceState() string  { return "" }

func (r *opTracer) TraceContext(ctx context.Context) events.Trace {
	if ctx.Value(ctxKey{}) == "outside" {
		return outsideTrace{}
	}
	return nil
}

// TestTraceAcrossSuspension: a traced call that an interceptor suspended
// and resumed keeps its trace: the handler's resumed context carries the
// tracer's values, tracehook.Of gives the call's trace, StartOp records an
// operation (a tracer that gives no context of its own leaves the
// caller's), and Emit gives the session event the call's trace
// inside the call and the tracer's TraceContext outside it.
func TestTraceAcrossSuspension(t *testing.T) {
	r := &opTracer{recTracer: recTracer{starts: map[string]int{}, events: map[string][]events.Type{}}}
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithTracer(r), toolkit.WithInlineObserver(rec))
	s := testutil.Session(t, tk, "s")
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "look"}, func(ctx context.Context, _ none) (string, error) {
		if v := ctx.Value(ctxKey{}); v != "c1" {
			return "", errors.New("the tracer's value is lost after the resume")
		}
		if tr := tracehook.Of(ctx); tr == nil || tr.TraceParent() != "00-c1" {
			return "", errors.New("tracehook.Of lost the call's trace after the resume")
		}
		if info, ok := toolkit.CallInfoFrom(ctx); !ok || info.CallID != "c1" {
			return "", errors.New("CallInfoFrom lost the call after the resume")
		}
		octx, op := tracehook.StartOp(ctx, "lookup")
		if octx != ctx {
			return "", errors.New("StartOp changed the context though the tracer gave none")
		}
		op.Set("key", "v")
		op.End(nil)
		if err := s.Emit(ctx, "looked", map[string]bool{"ok": true}); err != nil {
			return "", err
		}
		return "seen", nil
	}))
	if err := tk.Use(toolkit.Interceptor{Name: "pause", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		wait, resume := inv.Suspend("a moment")
		if wait.Value(ctxKey{}) != "c1" || tracehook.Of(wait) == nil {
			t.Error("the wait's context lost the trace")
		}
		return next(resume(), inv)
	}}); err != nil {
		t.Fatal(err)
	}
	if r := testutil.Run(t, tk, "s", testutil.Call("c1", "look", `{}`))[0]; r.State != events.StateSuccess {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	if err := s.Emit(context.WithValue(context.Background(), ctxKey{}, "outside"), "later", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Emit(context.Background(), "untraced", nil); err != nil {
		t.Fatal(err)
	}
	var traces []string
	for _, typ := range []events.Type{"looked", "later", "untraced"} {
		evs := rec.OfType(typ)
		if len(evs) != 1 {
			t.Fatalf("%d %s events", len(evs), typ)
		}
		if evs[0].Trace == nil {
			traces = append(traces, "")
		} else {
			traces = append(traces, evs[0].Trace.TraceParent())
		}
	}
	if !slices.Equal(traces, []string{"00-c1", "00-outside", ""}) {
		t.Errorf("traces of the session events %q", traces)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Equal(r.ops, []string{"lookup key", "lookup end"}) {
		t.Errorf("operations %q", r.ops)
	}
}
