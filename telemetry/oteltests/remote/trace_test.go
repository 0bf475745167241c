package remote_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/leak"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/telemetry"
	"github.com/toolstream/toolstream/toolkit"
)

func TestMain(m *testing.M) { leak.VerifyTestMain(m) }

// TestCallTraceCrossesTheWire: an agent whose toolkit is traced (package
// telemetry) sends each remote call with the call's own trace context
// (the call's span), as docs/observability.md says, so
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
	conn := func() *nats.Conn {
		nc, err := nats.Connect("", nats.InProcessServer(bus.Server()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}

	seen := make(chan events.TraceContext, 1)
	worker := testutil.Kit(t)
	testutil.Add(t, worker, toolkit.MustTool(toolkit.Spec{Name: "count"},
		func(ctx context.Context, in struct {
			Words []string `json:"words"`
		}) (int, error) {
			tr, _ := remote.TraceContext(ctx)
			seen <- tr
			return len(in.Words), nil
		}))
	w, err := remote.Serve(conn(), worker)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.Stop(ctx)
	})

	c := remote.NewClient(conn())
	tools, err := c.Discover(t.Context())
	if err != nil || len(tools) != 1 {
		t.Fatalf("discovered %d tools (%v), want 1", len(tools), err)
	}
	agent := testutil.Kit(t, toolkit.WithTracer(tel))
	testutil.Add(t, agent, tools...)
	r := testutil.Run(t, agent, "s", testutil.Call("c1", "count", `{"words":["x"]}`))[0]
	if r.State != events.StateSuccess {
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
	got := <-seen
	want := "00-" + call.SpanContext().TraceID().String() + "-" + call.SpanContext().SpanID().String() + "-"
	if !strings.HasPrefix(got.Parent, want) {
		t.Fatalf("the worker's tool saw traceparent %q, want the call span's %s..", got.Parent, want)
	}
}
