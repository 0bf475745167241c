package telemetry_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/tracehook"
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
// bare toolkit and on one with telemetry, in rounds of 200 calls taken in
// turn so that machine noise hits both alike:
//
//   - "unset", telemetry without providers (the budget: 50 ns and no
//     allocation more than bare). Both sides allocate the same (checked
//     first), so each pair of rounds starts after a collection and none
//     falls inside one (testutil.AlternateCollected): extra-ns/call is the
//     trimmed mean of the pairs' differences, median-extra-ns/call their
//     median.
//   - "control", a second bare toolkit the same way: the harness's reading
//     of zero.
//   - "sdk", traced and measured by the SDK into an in-memory exporter and a
//     manual reader. It allocates more, and its collections are its cost:
//     plain turns (testutil.Alternate), medians.
func BenchmarkTelemetryOverhead(b *testing.B) {
	for _, name := range []string{"unset", "control", "sdk"} {
		b.Run(name, func(b *testing.B) {
			bare, unset, sdk, reset := kits(b)
			other := unset
			switch name {
			case "sdk":
				other = sdk
			case "control":
				other, _, _, _ = kits(b) // bare against bare: the harness's zero
			}
			ctx := context.Background()
			run := func(s *toolkit.Session) func() {
				return func() {
					if r := s.Run(ctx, oneCall)[0]; r.State != events.StateSuccess {
						b.Fatal(r.Err)
					}
				}
			}
			ab := testing.AllocsPerRun(100, run(bare))
			ao := testing.AllocsPerRun(100, run(other))
			reset()
			b.ReportMetric(ao-ab, "extra-allocs/call")
			x := func() float64 { return testutil.NsPer(200, run(bare)) }
			y := func() float64 {
				ns := testutil.NsPer(200, run(other))
				reset() // the exporter's spans, untimed
				return ns
			}
			var xs, ys []float64
			if name != "sdk" {
				if ao != ab {
					b.Fatalf("%s allocates %v times a call, bare %v: the collected comparison would be unfair", name, ao, ab)
				}
				xs, ys = testutil.AlternateCollected(b, x, y)
				d := testutil.Diffs(xs, ys)
				b.ReportMetric(testutil.Median(d), "median-extra-ns/call")
				b.ReportMetric(testutil.TrimmedMean(d), "extra-ns/call")
			} else {
				xs, ys = testutil.Alternate(b, x, y)
				b.ReportMetric(testutil.Median(ys)-testutil.Median(xs), "extra-ns/call")
			}
			bx, by := testutil.Median(xs), testutil.Median(ys)
			b.ReportMetric(bx, "bare-ns/call")
			b.ReportMetric(by, name+"-ns/call")
			b.ReportMetric(by/bx, name+"/bare")
		})
	}
}

// switchTracer hands batches to the telemetry when on and returns at once
// when off, so that one toolkit and one session time both: the difference
// is telemetry's own cost with none of the spread two toolkits' memory
// layouts add (the engine's hook is BenchmarkTracerHook's, in toolkit).
type switchTracer struct {
	on  bool
	tel tracehook.Tracer[*toolkit.Batch, toolkit.CallInfo, *toolkit.Tool] // a Telemetry's
}

func (s *switchTracer) Tracehook() tracehook.Tracer[*toolkit.Batch, toolkit.CallInfo, *toolkit.Tool] {
	return s
}

func (s *switchTracer) StartBatch(ctx context.Context, b *toolkit.Batch, calls int) (context.Context, tracehook.BatchTrace) {
	if !s.on {
		return ctx, nil
	}
	return s.tel.StartBatch(ctx, b, calls)
}

func (s *switchTracer) StartCall(ctx context.Context, b tracehook.BatchTrace, c toolkit.CallInfo, t *toolkit.Tool) (context.Context, tracehook.CallTrace) {
	return s.tel.StartCall(ctx, b, c, t)
}

func (s *switchTracer) TraceContext(ctx context.Context) events.Trace { return s.tel.TraceContext(ctx) }

func (s *switchTracer) StartOp(ctx context.Context, name string) (context.Context, tracehook.OpTrace) {
	return s.tel.StartOp(ctx, name)
}

// BenchmarkTelemetryShare times one-call batches on one toolkit whose
// tracer is switched between telemetry without providers and nothing, in
// alternating rounds (the benchmark is the only goroutine that runs
// batches, so the switch needs no lock), each pair after a collection as
// in BenchmarkTelemetryOverhead/unset. It reports the difference per call
// (trimmed mean and median): the part of the +50 ns budget telemetry spends, measured
// without the layout spread of two toolkits. "control" switches between
// nothing and nothing: the harness's own reading of zero.
func BenchmarkTelemetryShare(b *testing.B) {
	for _, name := range []string{"unset", "control"} {
		b.Run(name, func(b *testing.B) {
			tel, err := telemetry.New()
			if err != nil {
				b.Fatal(err)
			}
			sw := &switchTracer{tel: tel.Tracehook()}
			tk := testutil.Kit(b, toolkit.WithTracer(sw))
			testutil.Add(b, tk, testutil.Tool(b, toolkit.Spec{Name: "noop", ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (string, error) {
				return "", nil
			}))
			sess := testutil.Session(b, tk, "bench")
			ctx := context.Background()
			run := func() {
				if r := sess.Run(ctx, oneCall)[0]; r.State != events.StateSuccess {
					b.Fatal(r.Err)
				}
			}
			round := func(on bool) func() float64 {
				return func() float64 {
					sw.on = on && name == "unset"
					return testutil.NsPer(200, run)
				}
			}
			sw.on = name == "unset"
			on := testing.AllocsPerRun(100, func() { sess.Run(ctx, oneCall) })
			sw.on = false
			off := testing.AllocsPerRun(100, func() { sess.Run(ctx, oneCall) })
			b.ReportMetric(on-off, "extra-allocs/call")
			if on != off {
				b.Fatalf("telemetry without providers allocates %v times a call, none %v: the collected comparison would be unfair", on, off)
			}
			d := testutil.Diffs(testutil.AlternateCollected(b, round(false), round(true)))
			b.ReportMetric(testutil.Median(d), "median-extra-ns/call")
			b.ReportMetric(testutil.TrimmedMean(d), "extra-ns/call")
		})
	}
}
