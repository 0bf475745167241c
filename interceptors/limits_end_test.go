package interceptors_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// TestCallLimitsEndRun: with EndRun, the call over a limit is refused as
// before, the batch's other calls run, and the batch tells the loop to stop
// (StopCallLimit, a message for the user); without it the loop goes on.
func TestCallLimitsEndRun(t *testing.T) {
	for _, end := range []bool{false, true} {
		opts := []interceptors.LimitOption{interceptors.PerSession(2, "search")}
		if end {
			opts = append(opts, interceptors.EndRun())
		}
		tk := icKit(t, nil, interceptors.CallLimits(opts...))
		ran := limitTools(t, tk, "search", "other")
		s := testutil.Session(t, tk, "s")
		run := func(names ...string) ([]string, toolkit.Stop, bool) {
			calls := make([]toolkit.Call, len(names))
			for i, n := range names {
				calls[i] = testutil.Call(fmt.Sprintf("c%d", i), n, `{}`)
			}
			b := s.Start(context.Background(), calls)
			var states []string
			for _, r := range b.Wait() {
				states = append(states, string(r.State))
			}
			stop, ok := b.Stop()
			return states, stop, ok
		}
		if states, _, ok := run("search", "other"); ok || fmt.Sprint(states) != "[success success]" {
			t.Fatalf("end %v: under the limit: %v, stop %v", end, states, ok)
		}
		states, stop, ok := run("search", "search", "other")
		if fmt.Sprint(states) != "[success error success]" {
			t.Fatalf("end %v: over the limit: %v", end, states)
		}
		if ok != end {
			t.Fatalf("end %v: Stop() reports %v (%+v)", end, ok, stop)
		}
		if end && (stop.Reason != toolkit.StopCallLimit || stop.Call != "c1" ||
			stop.Detail != `the run was stopped: calls of "search" are limited to 2 per session`) {
			t.Fatalf("stop: %+v", stop)
		}
		if ran["search"].get() != 2 || ran["other"].get() != 2 {
			t.Fatalf("end %v: ran search %d, other %d times", end, ran["search"].get(), ran["other"].get())
		}
	}
}
