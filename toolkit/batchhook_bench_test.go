package toolkit_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// BenchmarkRunBatchHook is BenchmarkRun/noop-1 with a batch hook installed
// (Before and After that do nothing) and without one, side by side: what a
// batch hook costs when there is one (nothing is paid without one:
// BenchmarkRun). "cancellable" gives Run a context that can be cancelled
// (the engine then watches it: one context.AfterFunc per batch).
func BenchmarkRunBatchHook(b *testing.B) {
	for _, v := range []struct {
		name               string
		hooked, cancelable bool
	}{{"none", false, false}, {"before-after", true, false}, {"none-cancellable", false, true}, {"before-after-cancellable", true, true}} {
		hooked := v.hooked
		b.Run(v.name, func(b *testing.B) {
			s, _ := benchKit(b)
			if hooked {
				err := s.Toolkit().Use(toolkit.Interceptor{Name: "nop",
					BeforeBatch: func(context.Context, *toolkit.BatchPlan) {},
					AfterBatch:  func(context.Context, *toolkit.Batch, []toolkit.Result) {}})
				if err != nil {
					b.Fatal(err)
				}
			}
			calls := []toolkit.Call{{ID: "c0", Name: "noop", Args: json.RawMessage(`{}`)}}
			ctx := context.Background()
			if v.cancelable {
				c, cancel := context.WithCancel(ctx)
				defer cancel()
				ctx = c
			}
			b.ReportAllocs()
			for b.Loop() {
				if rs := s.Run(ctx, calls); rs[0].State != events.StateSuccess {
					b.Fatal(rs[0].Err)
				}
			}
		})
	}
}
