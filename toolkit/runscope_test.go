package toolkit_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// TestRunLocalSpansTheRunsBatches: a run local is shared by every batch
// started with a run's context, its calls running at once included; a
// batch outside a run is a run of its own; another session's batches on
// the same context, and a run nested in it, have values of their own; a
// batch of the session under another session's run nested in its own
// still finds its run; end drops the values.
func TestRunLocalSpansTheRunsBatches(t *testing.T) {
	ctx := context.Background()
	tk := testutil.Kit(t, toolkit.WithMaxParallel(4))
	testutil.Add(t, tk, echoTool(t))
	count := toolkit.NewRunLocal[*atomic.Int64]()
	var planSaw atomic.Int64
	if err := tk.Use(toolkit.Interceptor{Name: "count",
		BeforeBatch: func(ctx context.Context, p *toolkit.BatchPlan) {
			c, _ := count.Get(p)
			planSaw.Store(-1)
			if c != nil {
				planSaw.Store(c.Load())
			}
		},
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
			inv.Meta("run_calls", count.LoadOrInit(inv, func() *atomic.Int64 { return new(atomic.Int64) }).Add(1))
			return next(ctx, inv)
		}}); err != nil {
		t.Fatal(err)
	}
	a, b := testutil.Session(t, tk, "a"), testutil.Session(t, tk, "b")
	counts := func(s *toolkit.Session, ctx context.Context, n int) string {
		var got []int64
		for _, r := range s.Run(ctx, localCalls(n)) {
			got = append(got, r.Meta["run_calls"].(int64))
		}
		slices.Sort(got)
		return fmt.Sprint(got)
	}
	run, end := a.BeginRun(ctx)
	if got := counts(a, run, 4); got != "[1 2 3 4]" {
		t.Fatalf("first batch of the run: %s", got)
	}
	if got := counts(a, run, 2); got != "[5 6]" || planSaw.Load() != 4 {
		t.Fatalf("second batch of the run: %s, its Before hook saw %d", got, planSaw.Load())
	}
	for range 2 {
		if got := counts(a, ctx, 2); got != "[1 2]" {
			t.Fatalf("a batch outside the run: %s", got)
		}
	}
	if got := counts(b, run, 1); got != "[1]" {
		t.Fatalf("another session's batch on the run's context: %s", got)
	}
	nested, endNested := a.BeginRun(run)
	if got := counts(a, nested, 1); got != "[1]" {
		t.Fatalf("a run nested in the run: %s", got)
	}
	endNested()
	other, endOther := b.BeginRun(run)
	defer endOther()
	if got := counts(a, other, 1); got != "[7]" {
		t.Fatalf("the session's batch under another session's run: %s", got)
	}
	end()
	end() // twice is fine
	if got := counts(a, run, 1); got != "[1]" {
		t.Fatalf("after the run ended: %s", got)
	}
}

// A nil context opens no run: its batches say what is wrong, as without
// BeginRun.
func TestBeginRunNilContext(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, echoTool(t))
	s := testutil.Session(t, tk, "a")
	//nolint:staticcheck // a caller's mistake, on purpose
	ctx, end := s.BeginRun(nil)
	defer end()
	if r := s.Run(ctx, localCalls(1))[0]; r.State != "error" {
		t.Fatalf("a batch on a nil context: %s %v", r.State, r.Err)
	}
}
