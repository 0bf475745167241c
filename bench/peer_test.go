// Package bench compares toolstream with peer libraries. It is a separate
// module so that the peers never enter the library's dependency graph.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// sizes are the numbers of calls in one batch.
var sizes = []int{1, 8, 64}

// scanIn is the tools' input on both sides: five fields of the usual kinds.
// toolstream infers its schema and validates every call against it; eino
// decodes the arguments into it (with sonic) and validates nothing.
type scanIn struct {
	Path    string   `json:"path" jsonschema:"folder to scan"`
	Pattern string   `json:"pattern,omitempty"`
	Limit   int      `json:"limit,omitempty" tool:"minimum=1"`
	Exts    []string `json:"exts,omitempty" tool:"enum=go|md|txt"`
	Deep    *bool    `json:"deep,omitempty"`
}

// scanArgs are every call's arguments, as a model would send them.
const scanArgs = `{"path":"/tmp","pattern":"*.go","limit":10,"exts":["go","md"]}`

// scan is the tool on both sides. It checks that its input arrived whole,
// so that neither side can skip decoding, and returns a short text.
func scan(ctx context.Context, in scanIn) (string, error) {
	if in.Path != "/tmp" || in.Limit != 10 || len(in.Exts) != 2 || in.Exts[1] != "md" {
		return "", fmt.Errorf("input arrived wrong: %+v", in)
	}
	return "ok", nil
}

// batchFunc runs one batch of calls, start to all results in call order,
// and reports an error if the batch did not produce what it should.
type batchFunc func() error

// newToolstream returns a batch of n calls run by one toolstream Session
// (the toolkit with its default options: timeout, parallelism), and the
// Results of the last batch it ran.
func newToolstream(tb testing.TB, n int) (batchFunc, func() []toolkit.Result) {
	tb.Helper()
	sess := newSession(tb, "bench")
	calls := toolstreamCalls(n)
	ctx := context.Background()
	var last []toolkit.Result
	run := func() error {
		rs := sess.Run(ctx, calls)
		last = rs
		return checkToolstream(rs, n)
	}
	return run, func() []toolkit.Result { return last }
}

// newToolkit returns a toolkit with its default options and the scan tool.
func newToolkit(tb testing.TB) *toolkit.Toolkit {
	tb.Helper()
	tk := toolkit.New()
	tb.Cleanup(func() { tk.Close(context.Background()) })
	tool, err := toolkit.NewTool(toolkit.Spec{Name: "scan", Description: "Scans a folder.", ConcurrencySafe: true}, scan)
	if err != nil {
		tb.Fatal(err)
	}
	if err := tk.Add(tool); err != nil {
		tb.Fatal(err)
	}
	return tk
}

func newSession(tb testing.TB, id string) *toolkit.Session {
	tb.Helper()
	sess, err := newToolkit(tb).Session(id)
	if err != nil {
		tb.Fatal(err)
	}
	return sess
}

func toolstreamCalls(n int) []toolkit.Call {
	calls := make([]toolkit.Call, n)
	for i := range calls {
		calls[i] = toolkit.Call{ID: fmt.Sprintf("c%d", i), Name: "scan", Args: json.RawMessage(scanArgs)}
	}
	return calls
}

func checkToolstream(rs []toolkit.Result, n int) error {
	if len(rs) != n {
		return fmt.Errorf("toolstream: %d results for %d calls", len(rs), n)
	}
	for _, r := range rs {
		if r.State != events.StateSuccess {
			return fmt.Errorf("toolstream: call %s %s: %v", r.Call.ID, r.State, r.Err)
		}
	}
	return nil
}

// newEino returns a batch of n calls run by an eino ToolsNode (default
// configuration), and the messages of the last batch it ran.
func newEino(tb testing.TB, n int) (batchFunc, func() []*schema.Message) {
	tb.Helper()
	node := newEinoNode(tb)
	msg := einoMessage(n)
	ctx := context.Background()
	var last []*schema.Message
	run := func() error {
		out, err := node.Invoke(ctx, msg)
		last = out
		return checkEino(out, err, n)
	}
	return run, func() []*schema.Message { return last }
}

func newEinoNode(tb testing.TB) *compose.ToolsNode {
	tb.Helper()
	ctx := context.Background()
	scanTool, err := utils.InferTool("scan", "Scans a folder.", scan)
	if err != nil {
		tb.Fatal(err)
	}
	node, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{Tools: []tool.BaseTool{scanTool}})
	if err != nil {
		tb.Fatal(err)
	}
	return node
}

func einoMessage(n int) *schema.Message {
	toolCalls := make([]schema.ToolCall, n)
	for i := range toolCalls {
		toolCalls[i] = schema.ToolCall{
			ID:       fmt.Sprintf("c%d", i),
			Type:     "function",
			Function: schema.FunctionCall{Name: "scan", Arguments: scanArgs},
		}
	}
	return schema.AssistantMessage("", toolCalls)
}

func checkEino(out []*schema.Message, err error, n int) error {
	if err != nil {
		return fmt.Errorf("eino: %w", err)
	}
	if len(out) != n {
		return fmt.Errorf("eino: %d messages for %d calls", len(out), n)
	}
	return nil
}

// TestPeersAgree checks that both implementations really run every call,
// decode its input whole, and answer in call order, so that the benchmarks
// cannot silently measure an error path.
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
					if r := rs[i]; r.Call.ID != id || r.State != events.StateSuccess || r.Text() != "ok" {
						t.Errorf("toolstream result %d: id %q state %s text %q err %v", i, r.Call.ID, r.State, r.Text(), r.Err)
					}
					if m := ms[i]; m == nil || m.Role != schema.Tool || m.ToolCallID != id || !strings.Contains(m.Content, "ok") {
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

// sessions and perSession shape BenchmarkConcurrentSessions: sessions
// goroutines, each one conversation running perSession batches of four
// calls, all at once.
const (
	sessions   = 10_000
	perSession = 5
	batchOf    = 4
)

// BenchmarkConcurrentSessions: 10k conversations at once, each on its own
// goroutine running batches of 4 calls, on one toolkit (toolstream, one
// Session per conversation) and on one ToolsNode (eino). Each iteration
// runs the whole load on both sides, alternating which goes first, and the
// benchmark reports the median calls/s of each and their ratio
// (toolstream / eino: higher is better).
func BenchmarkConcurrentSessions(b *testing.B) {
	tk := newToolkit(b)
	sessList := make([]*toolkit.Session, sessions)
	for i := range sessList {
		s, err := tk.Session(fmt.Sprintf("conv-%d", i))
		if err != nil {
			b.Fatal(err)
		}
		sessList[i] = s
	}
	calls := toolstreamCalls(batchOf)
	node := newEinoNode(b)
	msg := einoMessage(batchOf)
	ctx := context.Background()

	load := func(one func(i int) error) float64 {
		var failed atomic.Value
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range sessions {
			wg.Go(func() {
				<-start
				for range perSession {
					if err := one(i); err != nil {
						failed.Store(err)
						return
					}
				}
			})
		}
		t0 := time.Now()
		close(start)
		wg.Wait()
		elapsed := time.Since(t0)
		if err, _ := failed.Load().(error); err != nil {
			b.Fatal(err)
		}
		return float64(sessions*perSession*batchOf) / elapsed.Seconds()
	}
	ts := func() float64 {
		return load(func(i int) error { return checkToolstream(sessList[i].Run(ctx, calls), batchOf) })
	}
	ei := func() float64 {
		return load(func(int) error {
			out, err := node.Invoke(ctx, msg)
			return checkEino(out, err, batchOf)
		})
	}
	var tsRate, eiRate []float64
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			tsRate = append(tsRate, ts())
			eiRate = append(eiRate, ei())
		} else {
			eiRate = append(eiRate, ei())
			tsRate = append(tsRate, ts())
		}
	}
	t, e := median(tsRate), median(eiRate)
	b.ReportMetric(t, "toolstream-calls/s")
	b.ReportMetric(e, "eino-calls/s")
	b.ReportMetric(t/e, "ratio")
}
