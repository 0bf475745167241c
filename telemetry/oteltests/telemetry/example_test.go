package telemetry_test

import (
	"context"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolstream/toolstream/telemetry"
	"github.com/toolstream/toolstream/telemetry/internal/semconv"
	"github.com/toolstream/toolstream/toolkit"
)

// A toolkit traced into an in-memory exporter: one span for the batch,
// one per call, named and attributed by the GenAI conventions.
func Example() {
	ctx := context.Background()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(ctx)

	tel, _ := telemetry.New(telemetry.WithTracerProvider(tp))
	tk := toolkit.New(toolkit.WithTracer(tel))
	defer tk.Close(ctx)
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "greet", Description: "Says hello."},
		func(ctx context.Context, in struct {
			Name string `json:"name"`
		}) (string, error) {
			return "hello " + in.Name, nil
		}))

	sess, _ := tk.Session("conversation-1")
	sess.Run(ctx, []toolkit.Call{{ID: "call-1", Name: "greet", Args: []byte(`{"name":"Ada"}`)}})

	for _, s := range exp.GetSpans() {
		fmt.Println(s.Name)
		for _, a := range s.Attributes {
			if a.Key == semconv.ToolCallID || a.Key == semconv.ConversationID {
				fmt.Printf("  %s = %s\n", a.Key, a.Value.AsString())
			}
		}
	}
	// Output:
	// execute_tool greet
	//   gen_ai.tool.call.id = call-1
	//   gen_ai.conversation.id = conversation-1
	// toolstream.batch
	//   gen_ai.conversation.id = conversation-1
}
