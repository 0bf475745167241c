package remote

import (
	"context"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/tracehook"
	"github.com/toolstream/toolstream/internal/wire"
)

type traceKey struct{}

// WithTraceContext returns a context whose remote calls carry traceparent
// and tracestate, when no [WithInject] is given. Without it they
// carry the call's own trace context (its span) when the agent's toolkit
// is traced. An OpenTelemetry propagator plugs in through [WithInject]
// and [WithExtract] instead.
func WithTraceContext(ctx context.Context, traceparent, tracestate string) context.Context {
	return withTrace(ctx, traceparent, tracestate)
}

func withTrace(ctx context.Context, parent, state string) context.Context {
	if parent == "" && state == "" {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, events.TraceContext{Parent: parent, State: state})
}

// TraceContext returns the trace context a call came with: on a worker,
// the request's traceparent and tracestate; on the agent, what
// WithTraceContext set.
func TraceContext(ctx context.Context) (events.TraceContext, bool) {
	t, ok := ctx.Value(traceKey{}).(events.TraceContext)
	return t, ok
}

// injectTrace is the default WithInject: the trace context WithTraceContext
// set on ctx, or else that of the call (the call's span,
// when the agent's toolkit is traced), if any.
func injectTrace(ctx context.Context, h nats.Header) {
	t, ok := TraceContext(ctx)
	if !ok {
		tr := tracehook.Of(ctx)
		if tr == nil {
			return
		}
		t = events.TraceContext{Parent: tr.TraceParent(), State: tr.TraceState()}
	}
	if t.Parent != "" {
		h.Set(wire.HeaderTraceParent, t.Parent)
	}
	if t.State != "" {
		h.Set(wire.HeaderTraceState, t.State)
	}
}
