package telemetry_test

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/telemetry"
)

// A subscriber links its own span to the span of the call an event tells
// of: the event carries the call span's trace context (on NATS, in the
// traceparent header). Examples with the SDK, spans and links recorded,
// are in telemetry/oteltests/telemetry.
func ExampleLink() {
	ev := &events.Event{Type: events.TypeResult, Call: "call_1",
		Trace: events.TraceContext{Parent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	if l, ok := telemetry.Link(ev); ok {
		fmt.Println("trace", l.SpanContext.TraceID(), "span", l.SpanContext.SpanID())
	}
	_, ok := telemetry.Link(&events.Event{Type: events.TypeResult, Call: "call_2"})
	fmt.Println("an event with no trace context links:", ok)
	// Output:
	// trace 4bf92f3577b34da6a3ce929d0e0e4736 span 00f067aa0ba902b7
	// an event with no trace context links: false
}

// A worker continues the caller's trace: spans it starts with this context
// are children of the caller's span.
func ExampleContextWithTrace() {
	ctx := telemetry.ContextWithTrace(context.Background(),
		events.TraceContext{Parent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
	parent := trace.SpanContextFromContext(ctx)
	fmt.Println(parent.TraceID(), parent.SpanID(), parent.IsRemote())
	// Output:
	// 4bf92f3577b34da6a3ce929d0e0e4736 00f067aa0ba902b7 true
}
