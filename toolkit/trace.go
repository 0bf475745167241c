package toolkit

import (
	"context"

	"github.com/toolstream/toolstream/events"
)

// A Tracer traces a toolkit's batches and calls: package telemetry
// implements it with OpenTelemetry, and the engine knows nothing of how
// (it imports no tracing library). Install one with [WithTracer].
//
// The engine tells it when a batch and each of its calls start, gives it
// the context they run with from then on (so a span it puts there is the
// parent of whatever the handler traces), and shows each traced call its
// own events, inline. Every event of a traced call or batch carries its
// trace context (events.Event.Trace), which publishers put in their
// message headers.
//
// A toolkit without a tracer pays a nil check per batch and per call. A
// tracer that returns a nil BatchTrace (nothing to record right now: no
// tracer or meter provider set) costs its StartBatch and no allocation in
// the engine.
type Tracer interface {
	// StartBatch is called when a batch is set up, on the goroutine that
	// called Session.Start or Run, with their context and the calls as
	// the model made them. The context it returns becomes the batch's:
	// its hooks, resolver, interceptors and handlers see its values (its
	// cancellation must be ctx's). The BatchTrace sees the session-level
	// events of the batch (BatchPlan.Emit, batch_end) and is ended once
	// every call is final, after the batch hooks' After. A nil BatchTrace
	// leaves the batch and all its calls untraced: StartCall is not called
	// for them, so that a tracer with nothing to record decides once per
	// batch.
	StartBatch(ctx context.Context, b *Batch, calls []Call) (context.Context, BatchTrace)
	// StartCall is called once per call: when it starts, before its start
	// event, on the goroutine that runs it; or, for a call that never
	// started (its deadline passed in the queue, the batch was
	// cancelled), just before its result event; only for a batch that
	// StartBatch traced. ctx is the batch's context, b its trace; t is the
	// tool called, nil when none is registered under the name. The context
	// it returns carries the values the call's interceptors and handler see
	// beside the engine's own (derive it from ctx). A nil CallTrace leaves
	// the call untraced.
	StartCall(ctx context.Context, b BatchTrace, c CallInfo, t *Tool) (context.Context, CallTrace)
	// StartOp is called by [StartOp]: an operation of a package built on
	// the engine inside a traced call (reset_tools switching groups, a
	// skill load). ctx is the context StartOp was given. It returns the
	// context the operation runs with and its trace, or nil.
	StartOp(ctx context.Context, name string) (context.Context, OpTrace)
	// TraceContext reads the trace context ctx carries outside any call
	// (the span of the caller's own work, such as an agent loop's run),
	// for the session-level events Session.Emit sends with it; nil when
	// ctx carries none.
	TraceContext(ctx context.Context) events.Trace
}

// A CallTrace is a tracer's record of one call.
type CallTrace interface {
	// The call's events carry it (events.Event.Trace).
	events.Trace
	// Observe sees each event of the call as it is emitted (start,
	// suspend, reset deltas and call-level events such as approvals,
	// result; the deltas and progress only when the batch has observers
	// that take them), inline, under the call's lock, like an inline
	// observer: it must be quick and must not call back into the call. The
	// result event is the last.
	Observe(ev *events.Event)
	// Attempt is told that the tool starts its n-th attempt for the call
	// (1, then 2 and more when an interceptor such as a retry runs it
	// again).
	Attempt(n int)
}

// A BatchTrace is a tracer's record of one batch.
type BatchTrace interface {
	// The batch's session-level events carry it.
	events.Trace
	// Observe sees the session-level events of the batch: those its Before
	// hooks emit (BatchPlan.Emit: a batch's approval request) and
	// batch_end.
	Observe(ev *events.Event)
	// End is called once, when every call is final, after the batch hooks'
	// After and the batch_end event, with the results in call order.
	End(results []Result)
}

// An OpTrace is a tracer's record of one operation (see [StartOp]).
type OpTrace interface {
	// SetAttr records an attribute of the operation: value is a string, a
	// []string, a bool or an int.
	SetAttr(key string, value any)
	// End ends the operation; err is why it failed, or nil.
	End(err error)
}

// Op is an operation traced inside a call, for packages built on the
// engine that must not depend on a tracing library (groups' reset_tools,
// skills' loads). The zero Op records nothing.
type Op struct{ t OpTrace }

// StartOp starts an operation named name inside the call running with ctx,
// when the toolkit has a tracer: use the context it returns for the work,
// record what it did with Set and end it with End. Outside a call, or
// without a tracer, it returns ctx and an Op that records nothing, at the
// cost of a context lookup.
func StartOp(ctx context.Context, name string) (context.Context, Op) {
	c, ok := ctx.Value(callKey{}).(*call)
	if !ok || c.batch.tracer == nil || c.trace() == nil {
		return ctx, Op{}
	}
	octx, t := c.batch.tracer.StartOp(ctx, name)
	if octx == nil {
		octx = ctx
	}
	return octx, Op{t}
}

// Set records an attribute of the operation (a string, a []string, a bool
// or an int).
func (o Op) Set(key string, value any) {
	if o.t != nil {
		o.t.SetAttr(key, value)
	}
}

// End ends the operation; err is why it failed, or nil.
func (o Op) End(err error) {
	if o.t != nil {
		o.t.End(err)
	}
}

// TraceOf returns the trace context of the call running with ctx, or nil
// when the call is not traced: what a request that leaves the process on
// the call's behalf (a remote worker's) carries in its headers, so that
// the other side's spans join the call's trace.
func TraceOf(ctx context.Context) events.Trace {
	c, ok := ctx.Value(callKey{}).(*call)
	if !ok {
		return nil
	}
	return c.trace()
}

// trace returns the call's trace, or nil.
func (c *call) trace() CallTrace {
	if c.side == nil {
		return nil
	}
	return c.side.t
}

// startTrace asks the tracer, if any, to trace the call: from begin when it
// starts, from complete when it never did (c.started zero). c.mu must be
// held.
func (c *call) startTrace() {
	bt := c.batch.trace
	if bt == nil {
		return
	}
	info := CallInfo{Session: c.batch.sess.id, CallID: c.call.ID, Tool: c.call.Name, Agent: c.batch.agent}
	ctx, t := c.batch.tracer.StartCall(c.batch.parent, bt, info, c.tool)
	if t == nil {
		return
	}
	if ctx == nil {
		ctx = c.batch.parent
	}
	if c.side == nil {
		c.side = &aside{}
	}
	c.side.t, c.side.ctx = t, ctx
}

// startBatchTrace asks the tracer, if any, to trace the batch; it runs
// before anything derives from the batch's context.
func (b *Batch) startBatchTrace(calls []Call) {
	if b.tracer == nil {
		return
	}
	ctx, t := b.tracer.StartBatch(b.parent, b, calls)
	if ctx != nil {
		b.parent = ctx
	}
	b.trace = t
}
