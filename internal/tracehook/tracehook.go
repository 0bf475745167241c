// Package tracehook is how a tracer sees the engine's batches and calls and
// the operations inside them, without the engine importing a tracing
// library. Package telemetry implements it with OpenTelemetry and is its
// one implementation: users install it with toolkit.WithTracer, and the
// packages built on the engine (groups, skills, remote) reach it through
// StartOp and Of. Keeping it internal keeps the family out of toolkit's
// public face (issue 28).
package tracehook

import (
	"context"

	"github.com/toolstream/toolstream/events"
)

// A Tracer traces a toolkit's batches and calls. B is the engine's batch
// (*toolkit.Batch), I its description of a call (toolkit.CallInfo) and T
// its tool (*toolkit.Tool): the engine's types, which this package cannot
// import.
//
// A toolkit without a tracer pays a nil check per batch and per call. A
// tracer that returns a nil BatchTrace (nothing to record right now: no
// tracer or meter provider set) costs its StartBatch and no allocation in
// the engine.
type Tracer[B, I, T any] interface {
	// StartBatch is called when a batch is set up, on the goroutine that
	// called Session.Start or Run, with their context and the number of
	// calls the model made. The context it returns becomes the batch's:
	// its hooks, resolver, interceptors and handlers see its values (its
	// cancellation must be ctx's). The BatchTrace sees the session-level
	// events of the batch (BatchPlan.Emit, batch_end) and is ended once
	// every call is final, after the batch hooks' After. A nil BatchTrace
	// leaves the batch and all its calls untraced: StartCall is not called
	// for them, so that a tracer with nothing to record decides once per
	// batch.
	StartBatch(ctx context.Context, b B, calls int) (context.Context, BatchTrace)
	// StartCall is called once per call: when it starts, before its start
	// event, on the goroutine that runs it; or, for a call that never
	// started (its deadline passed in the queue, the batch was
	// cancelled), just before its result event; only for a batch that
	// StartBatch traced. ctx is the batch's context, b its trace; t is the
	// tool called, nil when none is registered under the name. The context
	// it returns carries the values the call's interceptors and handler see
	// beside the engine's own (derive it from ctx). A nil CallTrace leaves
	// the call untraced.
	StartCall(ctx context.Context, b BatchTrace, c I, t T) (context.Context, CallTrace)
	OpStarter
	// TraceContext reads the trace context ctx carries outside any call
	// (the span of the caller's own work, such as an agent loop's run),
	// for the session-level events Session.Emit sends with it; nil when
	// ctx carries none.
	TraceContext(ctx context.Context) events.Trace
}

// A Source hands a toolkit its tracer: toolkit.WithTracer takes one, and
// package telemetry's Telemetry is one. The tracer's own methods stay off
// the Source's public face.
type Source[B, I, T any] interface {
	// Tracehook returns the tracer the engine calls.
	Tracehook() Tracer[B, I, T]
}

// An OpStarter starts operations inside a traced call (see StartOp).
type OpStarter interface {
	// StartOp is called by StartOp: ctx is the context StartOp was given.
	// It returns the context the operation runs with and its trace, or
	// nil.
	StartOp(ctx context.Context, name string) (context.Context, OpTrace)
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
	// After and the batch_end event, with the number of calls whose
	// result is an error.
	End(failed int)
}

// An OpTrace is a tracer's record of one operation (see StartOp).
type OpTrace interface {
	// SetAttr records an attribute of the operation: value is a string, a
	// []string, a bool or an int.
	SetAttr(key string, value any)
	// End ends the operation; err is why it failed, or nil.
	End(err error)
}

// Lookup returns the tracer and the trace of the traced call running with
// ctx, or nils. Package toolkit sets it when it loads: the call lives in
// ctx under a key of its own.
var Lookup func(ctx context.Context) (OpStarter, CallTrace)

// Op is an operation traced inside a call, for packages built on the
// engine that must not depend on a tracing library (groups' reset_tools,
// skills' loads). The zero Op records nothing.
type Op struct{ t OpTrace }

// StartOp starts an operation named name inside the call running with ctx,
// when the toolkit has a tracer: use the context it returns for the work,
// record what it did with Set and end it with End. Outside a traced call
// it returns ctx and an Op that records nothing, at the cost of a context
// lookup.
func StartOp(ctx context.Context, name string) (context.Context, Op) {
	if Lookup == nil {
		return ctx, Op{}
	}
	tr, ct := Lookup(ctx)
	if tr == nil || ct == nil {
		return ctx, Op{}
	}
	octx, t := tr.StartOp(ctx, name)
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

// Of returns the trace context of the call running with ctx, or nil when
// the call is not traced: what a request that leaves the process on the
// call's behalf (a remote worker's) carries in its headers, so that the
// other side's spans join the call's trace.
func Of(ctx context.Context) events.Trace {
	if Lookup == nil {
		return nil
	}
	if _, ct := Lookup(ctx); ct != nil {
		return ct
	}
	return nil
}
