package interceptors_test

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/time/rate"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// A rate of 0 allows the first burst and nothing after it, ever. A call
// past it has no turn to wait for: it is refused as RateLimitNoWait
// refuses (state error, "it cannot run now", the burst it had), not as a
// timeout whose "next turn comes after this call's deadline" (which a
// Retry outside would run again for nothing).
func TestRateLimitZeroRate(t *testing.T) {
	for _, noWait := range []bool{false, true} {
		var opts []interceptors.RateLimitOption
		if noWait {
			opts = append(opts, interceptors.RateLimitNoWait())
		}
		tk := icKit(t, nil, interceptors.RateLimit(map[string]rate.Limit{"once": 0}, 2, opts...))
		var ran icCounter
		testutil.Add(t, tk, rateTool(t, "once", &ran))
		s := testutil.Session(t, tk, "s")
		for i := range 2 {
			if r := icRun(t, s, testutil.Call("c"+string(rune('0'+i)), "once", `{}`)); r.State != events.StateSuccess {
				t.Fatalf("noWait %v: call %d within the burst: %s %q", noWait, i, r.State, r.Text())
			}
		}
		r := icRun(t, s, testutil.Call("c9", "once", `{}`))
		if r.State != events.StateError || !errors.Is(r.Err, interceptors.ErrRateLimited) || errors.Is(r.Err, toolkit.ErrTimeout) {
			t.Errorf("noWait %v: past the burst: %s %v, want state error, ErrRateLimited, no timeout", noWait, r.State, r.Err)
		}
		if txt := r.Text(); !strings.Contains(txt, "only within its first burst") || !strings.Contains(txt, "bursts of 2") || !strings.Contains(txt, "cannot run now") {
			t.Errorf("noWait %v: %q", noWait, txt)
		}
		if ran.get() != 2 {
			t.Errorf("noWait %v: ran %d times, want 2", noWait, ran.get())
		}
	}
}

// rate.Inf is no limit, in either mode, for any number of calls.
func TestRateLimitInfinite(t *testing.T) {
	for _, noWait := range []bool{false, true} {
		var opts []interceptors.RateLimitOption
		if noWait {
			opts = append(opts, interceptors.RateLimitNoWait())
		}
		tk := icKit(t, nil, interceptors.RateLimit(map[string]rate.Limit{"free": rate.Inf}, 1, opts...))
		var ran icCounter
		testutil.Add(t, tk, rateTool(t, "free", &ran))
		s := testutil.Session(t, tk, "s")
		for i := range 5 {
			if r := icRun(t, s, testutil.Call("c"+string(rune('0'+i)), "free", `{}`)); r.State != events.StateSuccess {
				t.Fatalf("noWait %v: call %d: %s %q", noWait, i, r.State, r.Text())
			}
		}
	}
}
