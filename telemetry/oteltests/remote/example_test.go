package remote_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/telemetry"
	"github.com/toolstream/toolstream/toolkit"
)

// A traced agent's remote call carries its span across NATS: the worker's
// tool runs under the caller's trace, so one trace shows both processes.
func Example_traceAcrossTheWire() {
	ctx := context.Background()
	bus, _ := natsbus.Open(ctx) // no URL: an embedded server, in process
	defer bus.Close(ctx)

	// The worker reads the trace context the call brought.
	parent := make(chan string, 1)
	wtk := toolkit.New()
	defer wtk.Close(ctx)
	wtk.Add(toolkit.MustTool(toolkit.Spec{Name: "ping"}, func(ctx context.Context, _ struct{}) (string, error) {
		tr, _ := remote.TraceContext(ctx)
		parent <- tr.Parent
		return "pong", nil
	}))
	wnc, _ := nats.Connect("", nats.InProcessServer(bus.Server()))
	defer wnc.Close()
	w, _ := remote.Serve(wnc, wtk)
	defer w.Stop(ctx)

	// The agent's toolkit is traced with the OpenTelemetry SDK.
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(ctx)
	tel, _ := telemetry.New(telemetry.WithTracerProvider(tp))
	anc, _ := nats.Connect("", nats.InProcessServer(bus.Server()))
	defer anc.Close()
	client := remote.NewClient(anc)
	defer client.Close()
	tools, _ := client.Discover(ctx)
	tk := toolkit.New(toolkit.WithTracer(tel))
	defer tk.Close(ctx)
	tk.Add(tools...)
	sess, _ := tk.Session("conversation-1")
	r := sess.Run(ctx, []toolkit.Call{{ID: "c1", Name: "ping"}})[0]

	var call sdktrace.ReadOnlySpan
	for _, sp := range spans.GetSpans().Snapshots() {
		if sp.Name() == "execute_tool ping" {
			call = sp
		}
	}
	sc := call.SpanContext()
	fmt.Println(r.Text(), strings.HasPrefix(<-parent, "00-"+sc.TraceID().String()+"-"+sc.SpanID().String()+"-"))
	// Output: pong true
}
