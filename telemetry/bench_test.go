package telemetry_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/telemetry"
	"github.com/toolstream/toolstream/toolkit"
)

// kits returns three sessions on toolkits with the same no-op tool: bare
// (no tracer), unset (telemetry with the global providers, which nothing
// in this test binary sets) and sdk (telemetry on the SDK with an
// in-memory exporter and a manual reader). reset empties the exporter.
func kits(tb testing.TB) (bare, unset, sdk *toolkit.Session, reset func()) {
	tb.Helper()
	noop := func() *toolkit.Tool {
		return testutil.Tool(tb, toolkit.Spec{Name: "noop", ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (string, error) {
			return "", nil
		})
	}
	session := func(opts ...toolkit.Option) *toolkit.Session {
		tk := testutil.Kit(tb, opts...)
		testutil.Add(tb, tk, noop())
		return testutil.Session(tb, tk, "bench")
	}
	off, err := telemetry.New()
	if err != nil {
		tb.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tb.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	on, err := telemetry.New(telemetry.WithTracerProvider(tp), telemetry.WithMeterProvider(mp))
	if err != nil {
		tb.Fatal(err)
	}
	return session(), session(toolkit.WithTracer(off)), session(toolkit.WithTracer(on)), exp.Reset
}

var oneCall = []toolkit.Call{{ID: "c", Name: "noop", Args: []byte(`{}`)}}

// TestUnsetProvidersAllocateNothing: with telemetry installed but no tracer
// or meter provider set, a call allocates exactly what it does without
// telemetry.
func TestUnsetProvidersAllocateNothing(t *testing.T) {
	bare, unset, sdk, _ := kits(t)
	ctx := context.Background()
	a := testing.AllocsPerRun(200, func() { bare.Run(ctx, oneCall) })
	b := testing.AllocsPerRun(200, func() { unset.Run(ctx, oneCall) })
	if b != a {
		t.Errorf("a call allocates %v times with telemetry and no provider set, %v without telemetry", b, a)
	}
	// The SDK costs allocations: the check above would see them.
	if c := testing.AllocsPerRun(50, func() { sdk.Run(ctx, oneCall) }); c <= a {
		t.Errorf("a traced call allocates %v times, an untraced one %v: the comparison shows nothing", c, a)
	}
}

// BenchmarkTelemetryOverhead times one-call batches of a no-op tool on a
// bare toolkit and on one with telemetry, in turn so that machine noise hits
// both alike, and reports medians per call: "unset", telemetry without
// providers (the budget: 50 ns and no allocation more than bare), and
// "sdk", traced and measured by the SDK into an in-memory exporter and a
// manual reader.
func BenchmarkTelemetryOverhead(b *testing.B) {
	for _, name := range []string{"unset", "sdk"} {
		b.Run(name, func(b *testing.B) {
			bare, unset, sdk, reset := kits(b)
			other := unset
			if name == "sdk" {
				other = sdk
			}
			ctx := context.Background()
			run := func(s *toolkit.Session) func() {
				return func() {
					if r := s.Run(ctx, oneCall)[0]; r.State != toolkit.StateSuccess {
						b.Fatal(r.Err)
					}
				}
			}
			xs, ys := testutil.Alternate(b,
				func() float64 { return testutil.NsPer(200, run(bare)) },
				func() float64 {
					ns := testutil.NsPer(200, run(other))
					reset() // the exporter's spans, untimed
					return ns
				})
			x, y := testutil.Median(xs), testutil.Median(ys)
			b.ReportMetric(x, "bare-ns/call")
			b.ReportMetric(y, name+"-ns/call")
			b.ReportMetric(y-x, "extra-ns/call")
			b.ReportMetric(y/x, name+"/bare")
			// The fastest rounds, least disturbed by other processes.
			b.ReportMetric(testutil.Quantile(ys, 0.1)-testutil.Quantile(xs, 0.1), "p10-extra-ns/call")
			ab := testing.AllocsPerRun(100, run(bare))
			ao := testing.AllocsPerRun(100, run(other))
			reset()
			b.ReportMetric(ao-ab, "extra-allocs/call")
		})
	}
}

// switchTracer hands batches to the telemetry when on and returns at once
// when off, so that one toolkit and one session time both: the difference
// is telemetry's own cost with none of the spread two toolkits' memory
// layouts add (the engine's hook is BenchmarkTracerHook's, in toolkit).
type switchTracer struct {
	on  bool
	tel *telemetry.Telemetry
}

func (s *switchTracer) StartBatch(ctx context.Context, b *toolkit.Batch, calls []toolkit.Call) (context.Context, toolkit.BatchTrace) {
	if !s.on {
		return ctx, nil
	}
	return s.tel.StartBatch(ctx, b, calls)
}

func (s *switchTracer) StartCall(ctx context.Context, b toolkit.BatchTrace, c toolkit.CallInfo, t *toolkit.Tool) (context.Context, toolkit.CallTrace) {
	return s.tel.StartCall(ctx, b, c, t)
}

func (s *switchTracer) StartOp(ctx context.Context, name string) (context.Context, toolkit.OpTrace) {
	return s.tel.StartOp(ctx, name)
}

// BenchmarkTelemetryShare times one-call batches on one toolkit whose
// tracer is switched between telemetry without providers and nothing, in
// alternating rounds (the benchmark is the only goroutine that runs
// batches, so the switch needs no lock). It reports the median difference
// per call: the part of the +50 ns budget telemetry spends, measured
// without the layout spread of two toolkits. "control" switches between
// nothing and nothing: the harness's own reading of zero.
func BenchmarkTelemetryShare(b *testing.B) {
	for _, name := range []string{"unset", "control"} {
		b.Run(name, func(b *testing.B) {
			tel, err := telemetry.New()
			if err != nil {
				b.Fatal(err)
			}
			sw := &switchTracer{tel: tel}
			tk := testutil.Kit(b, toolkit.WithTracer(sw))
			testutil.Add(b, tk, testutil.Tool(b, toolkit.Spec{Name: "noop", ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (string, error) {
				return "", nil
			}))
			sess := testutil.Session(b, tk, "bench")
			ctx := context.Background()
			run := func() {
				if r := sess.Run(ctx, oneCall)[0]; r.State != toolkit.StateSuccess {
					b.Fatal(r.Err)
				}
			}
			round := func(on bool) func() float64 {
				return func() float64 {
					sw.on = on && name == "unset"
					return testutil.NsPer(200, run)
				}
			}
			xs, ys := testutil.Alternate(b, round(false), round(true))
			b.ReportMetric(testutil.Median(ys)-testutil.Median(xs), "extra-ns/call")
			b.ReportMetric(testutil.Quantile(ys, 0.1)-testutil.Quantile(xs, 0.1), "p10-extra-ns/call")
			sw.on = name == "unset"
			on := testing.AllocsPerRun(100, func() { sess.Run(ctx, oneCall) })
			sw.on = false
			off := testing.AllocsPerRun(100, func() { sess.Run(ctx, oneCall) })
			b.ReportMetric(on-off, "extra-allocs/call")
		})
	}
}
