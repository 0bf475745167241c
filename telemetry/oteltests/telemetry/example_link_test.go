package telemetry_test

import (
	"context"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/telemetry"
	"github.com/toolstream/toolstream/toolkit"
)

// A subscriber of the events on NATS (a UI, another process) links its own
// span to the span of the call each event tells of: the trace context
// travels in the messages' traceparent and tracestate headers.
func ExampleLink() {
	ctx := context.Background()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(ctx)
	bus, err := natsbus.Open(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer bus.Close(ctx)
	tel, _ := telemetry.New(telemetry.WithTracerProvider(tp))
	tk := toolkit.New(toolkit.WithTracer(tel), toolkit.WithInlineObserver(bus.Publisher()))
	defer tk.Close(ctx)
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "now"}, func(context.Context, struct{}) (string, error) { return "noon", nil }))

	tracer := tp.Tracer("my-ui")
	rendered := make(chan struct{}, 1)
	subject := bus.Subjects().AllOfType(events.TypeResult)
	sub, err := bus.Subscribe(subject, func(ev *events.Event) {
		opts := []trace.SpanStartOption{}
		if l, ok := telemetry.Link(ev); ok {
			opts = append(opts, trace.WithLinks(l))
		}
		_, span := tracer.Start(ctx, "render "+string(ev.Type), opts...)
		fmt.Println("rendering the result of", ev.Call) // the UI's work, under its span
		span.End()
		rendered <- struct{}{}
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sub.Unsubscribe()
	if err := bus.Conn().Flush(); err != nil { // the subscription is in place
		fmt.Println(err)
		return
	}

	sess, _ := tk.Session("conversation-1")
	sess.Run(ctx, []toolkit.Call{{ID: "call_1", Name: "now", Args: []byte(`{}`)}})
	<-rendered

	name := map[trace.SpanID]string{}
	for _, s := range exp.GetSpans() {
		name[s.SpanContext.SpanID()] = s.Name
	}
	for _, s := range exp.GetSpans() {
		for _, l := range s.Links {
			fmt.Println(s.Name, "is linked to", name[l.SpanContext.SpanID()])
		}
	}
	// Output:
	// rendering the result of call_1
	// render result is linked to execute_tool now
}
