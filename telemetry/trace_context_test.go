package telemetry

import (
	"context"
	"testing"

	"github.com/toolstream/toolstream/events"
	"go.opentelemetry.io/otel/trace"
)

// TestTraceContextOfEachSpan: TraceContext keeps the headers it built last,
// and never gives one span's headers for another (spans in turn, a state
// that differs, no span at all); asked again for the same span it builds
// nothing.
func TestTraceContextOfEachSpan(t *testing.T) {
	tel, err := New()
	if err != nil {
		t.Fatal(err)
	}
	span := func(id byte, state string) context.Context {
		ts, err := trace.ParseTraceState(state)
		if err != nil {
			t.Fatal(err)
		}
		sc := trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{id}, TraceFlags: trace.FlagsSampled, TraceState: ts,
		})
		return trace.ContextWithSpanContext(context.Background(), sc)
	}
	a, b, a2 := span(0xa, ""), span(0xb, ""), span(0xa, "k=v")
	want := map[context.Context]events.TraceContext{
		a:  {Parent: "00-01020300000000000000000000000000-0a00000000000000-01"},
		b:  {Parent: "00-01020300000000000000000000000000-0b00000000000000-01"},
		a2: {Parent: "00-01020300000000000000000000000000-0a00000000000000-01", State: "k=v"},
	}
	for _, ctx := range []context.Context{a, a, b, a, a2, a2, b, a} {
		if got := tel.Tracehook().TraceContext(ctx); got != want[ctx] {
			t.Fatalf("TraceContext = %#v, want %#v", got, want[ctx])
		}
	}
	if got := tel.Tracehook().TraceContext(context.Background()); got != nil {
		t.Fatalf("no span: TraceContext = %#v, want nil", got)
	}
	if n := testing.AllocsPerRun(100, func() { tel.Tracehook().TraceContext(b) }); n != 0 {
		t.Errorf("the same span again: %v allocations, want 0", n)
	}
}
