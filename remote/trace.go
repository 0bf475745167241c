package remote

import (
	"context"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/toolkit"
)

// Trace is W3C trace context as it travels with a call: the traceparent and
// tracestate headers, untouched.
type Trace struct {
	Parent string // traceparent
	State  string // tracestate
}

type traceKey struct{}

// WithTraceContext returns a context whose remote calls carry traceparent
// and tracestate, when no ClientOptions.Inject is set. Without it they
// carry the call's own trace context when the agent's toolkit is traced
// (toolkit.TraceOf: the call's span). An OpenTelemetry propagator plugs in
// through ClientOptions.Inject and WorkerOptions.Extract instead.
func WithTraceContext(ctx context.Context, traceparent, tracestate string) context.Context {
	return withTrace(ctx, traceparent, tracestate)
}

func withTrace(ctx context.Context, parent, state string) context.Context {
	if parent == "" && state == "" {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, Trace{Parent: parent, State: state})
}

// TraceContext returns the trace context a call came with: on a worker,
// the request's traceparent and tracestate; on the agent, what
// WithTraceContext set.
func TraceContext(ctx context.Context) (Trace, bool) {
	t, ok := ctx.Value(traceKey{}).(Trace)
	return t, ok
}

// injectTrace is the default Inject: the trace context WithTraceContext
// set on ctx, or else that of the call (toolkit.TraceOf: the call's span,
// when the agent's toolkit is traced), if any.
func injectTrace(ctx context.Context, h nats.Header) {
	t, ok := TraceContext(ctx)
	if !ok {
		tr := toolkit.TraceOf(ctx)
		if tr == nil {
			return
		}
		t = Trace{Parent: tr.TraceParent(), State: tr.TraceState()}
	}
	if t.Parent != "" {
		h.Set(HeaderTraceParent, t.Parent)
	}
	if t.State != "" {
		h.Set(HeaderTraceState, t.State)
	}
}
