package toolkit

import (
	"context"

	"github.com/toolstream/toolstream/internal/tracehook"
)

// tracer is the engine's tracing hook (internal/tracehook): package
// telemetry implements it, and the engine imports no tracing library.
// Every event of a traced call or batch carries its trace context
// (events.Event.Trace), which publishers put in their message headers.
type tracer = tracehook.Tracer[*Batch, CallInfo, *Tool]

type (
	callTrace  = tracehook.CallTrace
	batchTrace = tracehook.BatchTrace
)

// The packages built on the engine find a call's tracer and trace here
// (tracehook.StartOp, tracehook.Of).
func init() { tracehook.Lookup = lookupTrace }

// lookupTrace returns the tracer and trace of the traced call running with
// ctx, or nils.
func lookupTrace(ctx context.Context) (tracehook.OpStarter, tracehook.CallTrace) {
	c, ok := ctx.Value(callKey{}).(*call)
	if !ok || c.batch.tracer == nil {
		return nil, nil
	}
	t := c.trace()
	if t == nil {
		return nil, nil
	}
	return c.batch.tracer, t
}

// trace returns the call's trace, or nil.
func (c *call) trace() callTrace {
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
	ctx, t := b.tracer.StartBatch(b.parent, b, len(calls))
	if ctx != nil {
		b.parent = ctx
	}
	b.trace = t
}
