package toolkit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/tracehook"
	"github.com/toolstream/toolstream/toolkit"
)

// recTracer records what the engine tells a tracer.
type recTracer struct {
	mu      sync.Mutex
	starts  map[string]int // call id -> StartCall count
	events  map[string][]events.Type
	foreign []string // events whose Trace was not their call's
	ended   int
}

func (r *recTracer) Tracehook() tracehook.Tracer[*toolkit.Batch, toolkit.CallInfo, *toolkit.Tool] {
	return r
}

type ctxKey struct{}

type recCall struct {
	r  *recTracer
	id string
}

func (c *recCall) TraceParent() string { return "00-" + c.id }
func (c *recCall) TraceState() string  { return "" }
func (c *recCall) Attempt(n int)       {}
func (c *recCall) Observe(ev *events.Event) {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	c.r.events[c.id] = append(c.r.events[c.id], ev.Type)
	if ev.Trace != events.Trace(c) {
		c.r.foreign = append(c.r.foreign, c.id+"/"+string(ev.Type))
	}
}

type recBatch struct{ r *recTracer }

func (b *recBatch) TraceParent() string      { return "00-batch" }
func (b *recBatch) TraceState() string       { return "" }
func (b *recBatch) Observe(ev *events.Event) {}
func (b *recBatch) End(failed int) {
	b.r.mu.Lock()
	b.r.ended++
	b.r.mu.Unlock()
}

func (r *recTracer) StartBatch(ctx context.Context, b *toolkit.Batch, calls int) (context.Context, tracehook.BatchTrace) {
	return ctx, &recBatch{r}
}

func (r *recTracer) StartCall(ctx context.Context, b tracehook.BatchTrace, c toolkit.CallInfo, t *toolkit.Tool) (context.Context, tracehook.CallTrace) {
	r.mu.Lock()
	r.starts[c.CallID]++
	r.mu.Unlock()
	return context.WithValue(ctx, ctxKey{}, c.CallID), &recCall{r, c.CallID}
}

func (r *recTracer) TraceContext(context.Context) events.Trace { return nil }

func (r *recTracer) StartOp(ctx context.Context, name string) (context.Context, tracehook.OpTrace) {
	return ctx, nil
}

// TestTracerSeesEveryCallOnce: a traced batch's every call is traced
// exactly once (also a call that never started and an unknown tool), its
// events carry its own trace and reach it even without observers, the
// handler's context carries the tracer's values, and the batch is ended.
func TestTracerSeesEveryCallOnce(t *testing.T) {
	r := &recTracer{starts: map[string]int{}, events: map[string][]events.Type{}}
	tk := testutil.Kit(t, toolkit.WithTracer(r))
	var seen any
	running := make(chan struct{})
	testutil.Add(t, tk,
		testutil.Tool(t, toolkit.Spec{Name: "look"}, func(ctx context.Context, _ struct{}) (string, error) {
			seen = ctx.Value(ctxKey{})
			if tr := tracehook.Of(ctx); tr == nil || tr.TraceParent() != "00-c1" {
				t.Errorf("tracehook.Of in the handler: %v", tr)
			}
			return "ok", nil
		}),
		testutil.Tool(t, toolkit.Spec{Name: "slow", Timeout: time.Minute}, func(ctx context.Context, _ struct{}) (string, error) {
			close(running)
			<-ctx.Done()
			return "", ctx.Err()
		}))
	sess := testutil.Session(t, tk, "s")
	ctx, cancel := context.WithCancel(context.Background())
	b := sess.Start(ctx, []toolkit.Call{
		testutil.Call("c1", "look", `{}`),
		testutil.Call("c2", "nope", `{}`),
		testutil.Call("c3", "slow", `{}`),
		testutil.Call("c4", "look", `{}`), // never starts: the batch is cancelled while c3 runs
	})
	testutil.WaitFor(t, running, "the slow call")
	cancel()
	b.Wait()
	if seen != "c1" {
		t.Errorf("the handler's context gave %v for the tracer's key", seen)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range []string{"c1", "c2", "c3", "c4"} {
		if r.starts[id] != 1 {
			t.Errorf("%s: StartCall %d times", id, r.starts[id])
		}
		evs := r.events[id]
		if len(evs) == 0 || evs[len(evs)-1] != events.TypeResult {
			t.Errorf("%s: events %v, want the result last", id, evs)
		}
	}
	if got := r.events["c4"]; len(got) != 1 {
		t.Errorf("the call that never started: %v, want only its result", got)
	}
	if len(r.foreign) > 0 {
		t.Errorf("events carrying another trace: %v", r.foreign)
	}
	if r.ended != 1 {
		t.Errorf("batch traces ended: %d", r.ended)
	}
}

// TestUntracedBatchAsksNothing: a tracer that returns no BatchTrace is not
// asked about the calls, and their events carry no trace.
func TestUntracedBatchAsksNothing(t *testing.T) {
	r := &nilBatchTracer{}
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithTracer(r), toolkit.WithInlineObserver(rec))
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "look"}, func(ctx context.Context, _ struct{}) (string, error) {
		if tracehook.Of(ctx) != nil {
			t.Error("tracehook.Of in an untraced call")
		}
		return "ok", nil
	}))
	testutil.Run(t, tk, "s", testutil.Call("c1", "look", `{}`))
	if r.calls != 0 {
		t.Errorf("StartCall asked %d times for an untraced batch", r.calls)
	}
	for _, ev := range rec.All() {
		if ev.Trace != nil {
			t.Errorf("%s event carries a trace", ev.Type)
		}
	}
}

type nilBatchTracer struct{ calls int }

func (n *nilBatchTracer) Tracehook() tracehook.Tracer[*toolkit.Batch, toolkit.CallInfo, *toolkit.Tool] {
	return n
}

func (n *nilBatchTracer) StartBatch(ctx context.Context, b *toolkit.Batch, calls int) (context.Context, tracehook.BatchTrace) {
	return ctx, nil
}
func (n *nilBatchTracer) StartCall(ctx context.Context, b tracehook.BatchTrace, c toolkit.CallInfo, t *toolkit.Tool) (context.Context, tracehook.CallTrace) {
	n.calls++
	return ctx, nil
}
func (n *nilBatchTracer) TraceContext(context.Context) events.Trace { return nil }

func (n *nilBatchTracer) StartOp(ctx context.Context, name string) (context.Context, tracehook.OpTrace) {
	return ctx, nil
}
