package remote_test

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/telemetry"
	"github.com/toolstream/toolstream/toolkit"
)

// TestCallTraceCrossesTheWire: an agent whose toolkit is traced (package
// telemetry) sends each remote call with the call's own trace context
// (toolkit.TraceOf, the call's span), as docs/observability.md says, so
// that the worker's spans join the caller's trace under the call's span,
// without a ClientOptions.Inject. Before, only WithTraceContext's values
// were sent: a traced agent's calls reached the worker with no
// traceparent at all.
func TestCallTraceCrossesTheWire(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tel, err := telemetry.New(telemetry.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	bus := natstest.Bus(t)
	s := &seen{}
	serve(t, bus, workerKit(t, s), remote.WithTools("count"))
	c := remote.NewClient(conn(t, bus))
	agent := testutil.Kit(t, toolkit.WithTracer(tel))
	testutil.Add(t, agent, discover(t, c, 1)...)
	r := testutil.Run(t, agent, "s", testutil.Call("c1", "count", `{"words":["x"]}`))[0]
	if r.State != toolkit.StateSuccess {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	var call sdktrace.ReadOnlySpan
	for _, sp := range exp.GetSpans().Snapshots() {
		if sp.Name() == "execute_tool count" {
			call = sp
		}
	}
	if call == nil {
		t.Fatal("no span of the call")
	}
	s.mu.Lock()
	got := s.trace[len(s.trace)-1]
	s.mu.Unlock()
	want := "00-" + call.SpanContext().TraceID().String() + "-" + call.SpanContext().SpanID().String() + "-"
	if !strings.HasPrefix(got.Parent, want) {
		t.Fatalf("the worker's tool saw traceparent %q, want the call span's %s..", got.Parent, want)
	}
}
