// Package bench compares toolstream with peer libraries. It is a separate
// module so that the peers never enter the library's dependency graph.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/toolstream/toolstream/toolkit"
)

// sizes are the numbers of calls in one batch.
var sizes = []int{1, 8, 64}

// batchFunc runs one batch of no-op calls, start to all results in call
// order, and reports an error if the batch did not produce what it should.
type batchFunc func() error

// newToolstream returns a batch of n no-op calls run by one toolstream
// Session, and the Results of the last batch it ran.
func newToolstream(tb testing.TB, n int) (batchFunc, func() []toolkit.Result) {
	tb.Helper()
	tk := toolkit.New(toolkit.WithMaxParallel(64))
	tb.Cleanup(func() { tk.Close(context.Background()) })
	noop, err := toolkit.NewTool(toolkit.Spec{Name: "noop", Description: "Does nothing.", ConcurrencySafe: true},
		func(ctx context.Context, _ struct{}) (string, error) { return "", nil })
	if err != nil {
		tb.Fatal(err)
	}
	if err := tk.Add(noop); err != nil {
		tb.Fatal(err)
	}
	sess, err := tk.Session("bench")
	if err != nil {
		tb.Fatal(err)
	}
	calls := make([]toolkit.Call, n)
	for i := range calls {
		calls[i] = toolkit.Call{ID: fmt.Sprintf("c%d", i), Name: "noop", Args: json.RawMessage(`{}`)}
	}
	ctx := context.Background()
	var last []toolkit.Result
	run := func() error {
		rs := sess.Run(ctx, calls)
		last = rs
		if len(rs) != n {
			return fmt.Errorf("toolstream: %d results for %d calls", len(rs), n)
		}
		if r := rs[n-1]; r.State != toolkit.StateSuccess {
			return fmt.Errorf("toolstream: last call %s: %v", r.State, r.Err)
		}
		return nil
	}
	return run, func() []toolkit.Result { return last }
}

// newEino returns a batch of n no-op calls run by an eino ToolsNode, and the
// messages of the last batch it ran.
func newEino(tb testing.TB, n int) (batchFunc, func() []*schema.Message) {
	tb.Helper()
	ctx := context.Background()
	noop, err := utils.InferTool("noop", "Does nothing.",
		func(ctx context.Context, _ struct{}) (string, error) { return "", nil })
	if err != nil {
		tb.Fatal(err)
	}
	node, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{Tools: []tool.BaseTool{noop}})
	if err != nil {
		tb.Fatal(err)
	}
	toolCalls := make([]schema.ToolCall, n)
	for i := range toolCalls {
		toolCalls[i] = schema.ToolCall{
			ID:       fmt.Sprintf("c%d", i),
			Type:     "function",
			Function: schema.FunctionCall{Name: "noop", Arguments: "{}"},
		}
	}
	msg := schema.AssistantMessage("", toolCalls)
	var last []*schema.Message
	run := func() error {
		out, err := node.Invoke(ctx, msg)
		last = out
		if err != nil {
			return fmt.Errorf("eino: %w", err)
		}
		if len(out) != n {
			return fmt.Errorf("eino: %d messages for %d calls", len(out), n)
		}
		return nil
	}
	return run, func() []*schema.Message { return last }
}

// TestPeersAgree checks that both implementations really run every call, in
// order and successfully, so that the benchmarks cannot silently measure an
// error path.
func TestPeersAgree(t *testing.T) {
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ts, tsLast := newToolstream(t, n)
			ei, eiLast := newEino(t, n)
			for range 3 {
				if err := ts(); err != nil {
					t.Fatal(err)
				}
				if err := ei(); err != nil {
					t.Fatal(err)
				}
				rs, ms := tsLast(), eiLast()
				if len(rs) != n || len(ms) != n {
					t.Fatalf("toolstream %d results, eino %d messages, want %d", len(rs), len(ms), n)
				}
				for i := range n {
					id := fmt.Sprintf("c%d", i)
					if r := rs[i]; r.Call.ID != id || r.State != toolkit.StateSuccess || r.Text() != "" {
						t.Errorf("toolstream result %d: id %q state %s text %q err %v", i, r.Call.ID, r.State, r.Text(), r.Err)
					}
					if m := ms[i]; m == nil || m.Role != schema.Tool || m.ToolCallID != id || m.Content != "" {
						t.Errorf("eino message %d: %+v", i, m)
					}
				}
			}
		})
	}
}

// BenchmarkBatchVsEino runs both implementations in the same loop so that
// machine noise hits both alike: each iteration times a block of toolstream
// batches and a block of eino batches (alternating which goes first). It
// reports the median time per batch of each, their ratio, and allocations
// per batch. Its ns/op is the time of one iteration (both blocks) and means
// little.
func BenchmarkBatchVsEino(b *testing.B) {
	const block = 50
	for _, n := range sizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			ts, _ := newToolstream(b, n)
			ei, _ := newEino(b, n)
			timeBlock := func(run batchFunc) float64 {
				t0 := time.Now()
				for range block {
					if err := run(); err != nil {
						b.Fatal(err)
					}
				}
				return float64(time.Since(t0).Nanoseconds()) / block
			}
			// Warm up both (and check them) before timing.
			timeBlock(ts)
			timeBlock(ei)
			var tsNs, eiNs []float64
			for i := 0; b.Loop(); i++ {
				if i%2 == 0 {
					tsNs = append(tsNs, timeBlock(ts))
					eiNs = append(eiNs, timeBlock(ei))
				} else {
					eiNs = append(eiNs, timeBlock(ei))
					tsNs = append(tsNs, timeBlock(ts))
				}
			}
			t, e := median(tsNs), median(eiNs)
			b.ReportMetric(t, "toolstream-ns/batch")
			b.ReportMetric(e, "eino-ns/batch")
			b.ReportMetric(t/e, "ratio")
			b.ReportMetric(testing.AllocsPerRun(100, func() { _ = ts() }), "toolstream-allocs/batch")
			b.ReportMetric(testing.AllocsPerRun(100, func() { _ = ei() }), "eino-allocs/batch")
		})
	}
}

// BenchmarkBatch runs each implementation on its own, for plain ns/op and
// allocs/op per batch.
func BenchmarkBatch(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("toolstream-%d", n), func(b *testing.B) {
			run, _ := newToolstream(b, n)
			benchBatch(b, run)
		})
		b.Run(fmt.Sprintf("eino-%d", n), func(b *testing.B) {
			run, _ := newEino(b, n)
			benchBatch(b, run)
		})
	}
}

func benchBatch(b *testing.B, run batchFunc) {
	if err := run(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := run(); err != nil {
			b.Fatal(err)
		}
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}
