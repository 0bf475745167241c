package toolkit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/tracehook"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

type benchIn struct {
	Path    string   `json:"path" jsonschema:"folder to scan"`
	Pattern string   `json:"pattern,omitempty"`
	Limit   int      `json:"limit,omitempty" tool:"minimum=1"`
	Exts    []string `json:"exts,omitempty" tool:"enum=go|md|txt"`
	Deep    *bool    `json:"deep,omitempty"`
}

var benchArgs = json.RawMessage(`{"path":"/tmp","pattern":"*.go","limit":10,"exts":["go","md"]}`)

func benchKit(b *testing.B, opts ...toolkit.Option) (*toolkit.Session, *toolkit.Tool) {
	tk := testutil.Kit(b, opts...)
	noop := testutil.Tool(b, toolkit.Spec{Name: "noop", ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (string, error) {
		return "", nil
	})
	scan := testutil.Tool(b, toolkit.Spec{Name: "scan", ConcurrencySafe: true}, func(ctx context.Context, in benchIn) (string, error) {
		return "ok", nil
	})
	testutil.Add(b, tk, noop, scan)
	return testutil.Session(b, tk, "bench"), scan
}

// BenchmarkRun measures whole batches of no-op tools, start to ordered
// results. Compare with eino's ToolsNode in bench/.
func BenchmarkRun(b *testing.B) {
	for _, n := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("noop-%d", n), func(b *testing.B) {
			s, _ := benchKit(b) // the defaults: 2-minute timeout, 10 calls in parallel
			calls := make([]toolkit.Call, n)
			for i := range calls {
				calls[i] = toolkit.Call{ID: fmt.Sprintf("c%d", i), Name: "noop", Args: json.RawMessage(`{}`)}
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				rs := s.Run(ctx, calls)
				if rs[n-1].State != events.StateSuccess {
					b.Fatal(rs[n-1].Err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/call")
		})
	}
}

// BenchmarkValidate is argument validation alone: parse, normalise, check.
func BenchmarkValidate(b *testing.B) {
	_, scan := benchKit(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := scan.PrepareArgs(benchArgs); err != nil {
			b.Fatal(err)
		}
	}
}

type passThrough struct{ n int }

func (p *passThrough) Observe(ev *events.Event) { p.n++ }

func observers(inline bool) []toolkit.Option {
	with := toolkit.WithObserver
	if inline {
		with = toolkit.WithInlineObserver
	}
	return []toolkit.Option{with(&passThrough{}), with(&passThrough{}), with(&passThrough{})}
}

// BenchmarkCallWithObservers is one validated call with three pass-through
// observers, attached inline and asynchronously: the full path a real call
// takes.
func BenchmarkCallWithObservers(b *testing.B) {
	for _, inline := range []bool{true, false} {
		name := map[bool]string{true: "inline", false: "async"}[inline]
		b.Run(name, func(b *testing.B) {
			s, _ := benchKit(b, observers(inline)...)
			calls := []toolkit.Call{{ID: "c", Name: "scan", Args: benchArgs}}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if r := s.Run(ctx, calls)[0]; r.State != events.StateSuccess {
					b.Fatal(r.Err)
				}
			}
		})
	}
}

// BenchmarkEngineOverhead measures the engine's own cost per call: the full
// path (one validated call, three observers) minus validation alone, both
// timed in the same benchmark, interleaved, so that machine noise hits both
// alike. It reports medians of the samples.
func BenchmarkEngineOverhead(b *testing.B) {
	for _, inline := range []bool{true, false} {
		name := map[bool]string{true: "inline-observers", false: "async-observers"}[inline]
		b.Run(name, func(b *testing.B) {
			s, scan := benchKit(b, observers(inline)...)
			calls := []toolkit.Call{{ID: "c", Name: "scan", Args: benchArgs}}
			ctx := context.Background()
			v, f := interleaved(b, func() {
				if _, err := scan.PrepareArgs(benchArgs); err != nil {
					b.Fatal(err)
				}
			}, func() {
				if r := s.Run(ctx, calls)[0]; r.State != events.StateSuccess {
					b.Fatal(r.Err)
				}
			})
			b.ReportMetric(f, "full-ns/call")
			b.ReportMetric(v, "validate-ns/call")
			b.ReportMetric(f-v, "engine-ns/call")
			allocsFull := testing.AllocsPerRun(200, func() { s.Run(ctx, calls) })
			allocsValid := testing.AllocsPerRun(200, func() { _, _ = scan.PrepareArgs(benchArgs) })
			b.ReportMetric(allocsFull-allocsValid, "engine-allocs/call")
		})
	}
}

// interleaved times blocks of 200 runs of x and of y in turn, each first
// every other time, so that machine noise hits both alike, and returns the
// median time per run of each, in ns.
func interleaved(b *testing.B, x, y func()) (nsX, nsY float64) {
	xs, ys := testutil.Alternate(b,
		func() float64 { return testutil.NsPer(200, x) },
		func() float64 { return testutil.NsPer(200, y) })
	return testutil.Median(xs), testutil.Median(ys)
}

// BenchmarkProgressNoListener is the cost of a progress report nobody
// observes, as a tool pays it: looking the emitter up in the context each
// time (From+Progress), or once before a loop (Progress).
func BenchmarkProgressNoListener(b *testing.B) {
	tk := testutil.Kit(b)
	ctx := make(chan context.Context, 1)
	release := make(chan struct{})
	testutil.Add(b, tk, testutil.Tool(b, toolkit.Spec{Name: "grab"}, func(c context.Context, _ struct{}) (string, error) {
		ctx <- c
		<-release
		return "", nil
	}))
	run := testutil.Session(b, tk, "s").Start(context.Background(), []toolkit.Call{{ID: "1", Name: "grab"}})
	callCtx := <-ctx
	b.Run("From+Progress", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			stream.From(callCtx).Progress("scanning", 0.5)
		}
	})
	b.Run("Progress", func(b *testing.B) {
		em := stream.From(callCtx)
		b.ReportAllocs()
		for b.Loop() {
			em.Progress("scanning", 0.5)
		}
	})
	close(release)
	run.Wait()
}

// BenchmarkInterceptorChain is the cost of a chain of five pass-through
// interceptors: one validated call with and without the chain, timed in the
// same benchmark, interleaved. The target is at most 1 µs more per call.
func BenchmarkInterceptorChain(b *testing.B) {
	plain, _ := benchKit(b, toolkit.WithInlineObserver(&passThrough{}))
	wrapped, _ := benchKit(b, toolkit.WithInlineObserver(&passThrough{}))
	for i := range 5 {
		if err := wrapped.Toolkit().Use(toolkit.Interceptor{
			Name: fmt.Sprintf("pass-%d", i),
			Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
				return next(ctx, inv)
			},
		}); err != nil {
			b.Fatal(err)
		}
	}
	calls := []toolkit.Call{{ID: "c", Name: "scan", Args: benchArgs}}
	ctx := context.Background()
	wo, w := interleaved(b, func() { plain.Run(ctx, calls) }, func() {
		if r := wrapped.Run(ctx, calls)[0]; r.State != events.StateSuccess {
			b.Fatal(r.Err)
		}
	})
	b.ReportMetric(wo, "none-ns/call")
	b.ReportMetric(w, "chain5-ns/call")
	b.ReportMetric(w-wo, "extra-ns/call")
	b.ReportMetric(testing.AllocsPerRun(200, func() { wrapped.Run(ctx, calls) })-
		testing.AllocsPerRun(200, func() { plain.Run(ctx, calls) }), "extra-allocs/call")
}

// BenchmarkValidateFreshGoroutine is argument preparation on a goroutine of
// its own each time, as a handler may run: it pays for whatever stack the
// argument path needs beyond a new goroutine's.
func BenchmarkValidateFreshGoroutine(b *testing.B) {
	_, scan := benchKit(b)
	done := make(chan error)
	b.ReportAllocs()
	for b.Loop() {
		go func() {
			_, err := scan.PrepareArgs(benchArgs)
			done <- err
		}()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunArgs is BenchmarkRun with real arguments: batches of calls to
// a typed tool with a 5-field input, so the argument path's share of a
// batch shows.
func BenchmarkRunArgs(b *testing.B) {
	for _, n := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("scan-%d", n), func(b *testing.B) {
			s, _ := benchKit(b) // the defaults: 2-minute timeout, 10 calls in parallel
			calls := make([]toolkit.Call, n)
			for i := range calls {
				calls[i] = toolkit.Call{ID: fmt.Sprintf("c%d", i), Name: "scan", Args: benchArgs}
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if rs := s.Run(ctx, calls); rs[n-1].State != events.StateSuccess {
					b.Fatal(rs[n-1].Err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/call")
		})
	}
}

type benchOut struct {
	Path  string   `json:"path"`
	Files int      `json:"files" tool:"minimum=0"`
	Exts  []string `json:"exts,omitempty"`
}

// BenchmarkOutputSchema is one call of a typed tool whose struct output is
// checked against its inferred output schema, beside the same value
// returned as an any (no output schema, not checked).
func BenchmarkOutputSchema(b *testing.B) {
	out := benchOut{Path: "/tmp", Files: 12, Exts: []string{"go", "md"}}
	tk := testutil.Kit(b)
	testutil.Add(b, tk,
		testutil.Tool(b, toolkit.Spec{Name: "checked"}, func(context.Context, struct{}) (benchOut, error) { return out, nil }),
		testutil.Tool(b, toolkit.Spec{Name: "unchecked"}, func(context.Context, struct{}) (any, error) { return out, nil }))
	s := testutil.Session(b, tk, "bench")
	for _, name := range []string{"checked", "unchecked"} {
		b.Run(name, func(b *testing.B) {
			calls := []toolkit.Call{{ID: "c", Name: name, Args: json.RawMessage(`{}`)}}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if r := s.Run(ctx, calls)[0]; r.State != events.StateSuccess {
					b.Fatal(r.Err)
				}
			}
		})
	}
}

// BenchmarkTracerHookOneKit is BenchmarkTracerHook on one toolkit whose
// tracer is swapped between rounds (none, then a tracer with nothing to
// record), so that no difference in where two toolkits' memory lies passes
// for a cost: the engine's own share of what a tracer costs a call. Both
// allocate the same, so each pair of rounds starts after a collection
// (testutil.AlternateCollected). "control" swaps nothing for nothing.
func BenchmarkTracerHookOneKit(b *testing.B) {
	for _, name := range []string{"nil-tracer", "control"} {
		b.Run(name, func(b *testing.B) {
			tk := testutil.Kit(b)
			testutil.Add(b, tk, testutil.Tool(b, toolkit.Spec{Name: "noop", ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (string, error) {
				return "", nil
			}))
			sess := testutil.Session(b, tk, "bench")
			calls := []toolkit.Call{{ID: "c", Name: "noop", Args: json.RawMessage(`{}`)}}
			ctx := context.Background()
			round := func(traced bool) func() float64 {
				return func() float64 {
					var tr tracehook.Tracer[*toolkit.Batch, toolkit.CallInfo, *toolkit.Tool]
					if traced && name == "nil-tracer" {
						tr = nilTracer{}
					}
					toolkit.SetTracerForTest(tk, tr)
					return testutil.NsPer(200, func() { sess.Run(ctx, calls) })
				}
			}
			toolkit.SetTracerForTest(tk, nilTracer{})
			on := testing.AllocsPerRun(100, func() { sess.Run(ctx, calls) })
			toolkit.SetTracerForTest(tk, nil)
			if off := testing.AllocsPerRun(100, func() { sess.Run(ctx, calls) }); on != off {
				b.Fatalf("a call allocates %v times with a tracer, %v without: the collected comparison would be unfair", on, off)
			}
			d := testutil.Diffs(testutil.AlternateCollected(b, round(false), round(true)))
			b.ReportMetric(testutil.Median(d), "median-extra-ns/call")
			b.ReportMetric(testutil.TrimmedMean(d), "extra-ns/call")
			toolkit.SetTracerForTest(tk, nil)
		})
	}
}

// nilTracer is a Tracer with nothing to record: what a tracer costs the
// engine itself (telemetry without providers decides the same way).
type nilTracer struct{}

func (t nilTracer) Tracehook() tracehook.Tracer[*toolkit.Batch, toolkit.CallInfo, *toolkit.Tool] {
	return t
}

func (nilTracer) StartBatch(ctx context.Context, _ *toolkit.Batch, _ int) (context.Context, tracehook.BatchTrace) {
	return ctx, nil
}
func (nilTracer) StartCall(ctx context.Context, _ tracehook.BatchTrace, _ toolkit.CallInfo, _ *toolkit.Tool) (context.Context, tracehook.CallTrace) {
	return ctx, nil
}
func (nilTracer) TraceContext(context.Context) events.Trace { return nil }

func (nilTracer) StartOp(ctx context.Context, _ string) (context.Context, tracehook.OpTrace) {
	return ctx, nil
}

// BenchmarkTracerHook is the engine's cost of a tracer that records
// nothing: one-call batches on a toolkit with nilTracer against a bare one,
// interleaved ("nil-tracer"), beside two bare toolkits compared the same
// way ("control": the noise floor of comparing two toolkits).
func BenchmarkTracerHook(b *testing.B) {
	for _, name := range []string{"nil-tracer", "control"} {
		b.Run(name, func(b *testing.B) {
			bare, _ := benchKit(b)
			var opts []toolkit.Option
			if name == "nil-tracer" {
				opts = append(opts, toolkit.WithTracer(nilTracer{}))
			}
			other, _ := benchKit(b, opts...)
			calls := []toolkit.Call{{ID: "c", Name: "noop", Args: json.RawMessage(`{}`)}}
			ctx := context.Background()
			x, y := interleaved(b, func() { bare.Run(ctx, calls) }, func() { other.Run(ctx, calls) })
			b.ReportMetric(y-x, "extra-ns/call")
			b.ReportMetric(y/x, "ratio")
			b.ReportMetric(testing.AllocsPerRun(100, func() { other.Run(ctx, calls) })-
				testing.AllocsPerRun(100, func() { bare.Run(ctx, calls) }), "extra-allocs/call")
		})
	}
}
