package interceptors_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

func rateTool(t *testing.T, name string, ran *icCounter, spec ...toolkit.Spec) *toolkit.Tool {
	s := toolkit.Spec{Name: name, ConcurrencySafe: true}
	if len(spec) > 0 {
		s = spec[0]
	}
	return icTool(t, s, func(ctx context.Context) (string, error) {
		ran.inc()
		return "ok", nil
	})
}

func TestRateLimitNoWait(t *testing.T) {
	tk := icKit(t, nil, interceptors.RateLimit(map[string]rate.Limit{"search": rate.Every(time.Hour)}, 1, interceptors.RateLimitNoWait()))
	var ran, other icCounter
	testutil.Add(t, tk, rateTool(t, "search", &ran), rateTool(t, "other", &other))
	s := testutil.Session(t, tk, "s")
	if r := icRun(t, s, testutil.Call("c1", "search", `{}`)); r.State != events.StateSuccess {
		t.Fatalf("first call: %s %v", r.State, r.Err)
	}
	start := time.Now()
	r := icRun(t, s, testutil.Call("c2", "search", `{}`))
	if r.State != events.StateError || !errors.Is(r.Err, interceptors.ErrRateLimited) {
		t.Fatalf("second call: %s %v, want a rate-limit error", r.State, r.Err)
	}
	if time.Since(start) > time.Second || !strings.Contains(r.Text(), `"search"`) || !strings.Contains(r.Text(), "try again in") {
		t.Fatalf("want an immediate, clear refusal; got %q", r.Text())
	}
	if ran.get() != 1 {
		t.Fatalf("tool ran %d times, want 1", ran.get())
	}
	// The bucket is the tool's, across sessions.
	if r := icRun(t, testutil.Session(t, tk, "other"), testutil.Call("c3", "search", `{}`)); !errors.Is(r.Err, interceptors.ErrRateLimited) || ran.get() != 1 {
		t.Fatalf("another session: %s %v, ran %d; want refused by the same bucket", r.State, r.Err, ran.get())
	}
	// Tools without an entry are not limited.
	for i := range 3 {
		if r := icRun(t, s, testutil.Call("o"+string(rune('0'+i)), "other", `{}`)); r.State != events.StateSuccess {
			t.Fatalf("unlimited tool: %s", r.State)
		}
	}
}

func TestRateLimitWaitsWithinTheDeadline(t *testing.T) {
	t.Run("turn after the deadline", func(t *testing.T) {
		var ran icCounter
		tk := icKit(t, nil, interceptors.RateLimit(map[string]rate.Limit{"search": rate.Every(time.Hour)}, 1))
		testutil.Add(t, tk, rateTool(t, "search", &ran)) // default deadline: 2 minutes
		s := testutil.Session(t, tk, "s")
		icRun(t, s, testutil.Call("c1", "search", `{}`))
		start := time.Now()
		r := icRun(t, s, testutil.Call("c2", "search", `{}`))
		if r.State != events.StateTimeout || !errors.Is(r.Err, interceptors.ErrRateLimited) || !errors.Is(r.Err, toolkit.ErrTimeout) {
			t.Fatalf("got %s %v, want a timeout caused by the rate limit", r.State, r.Err)
		}
		if time.Since(start) > time.Second {
			t.Fatal("a wait that cannot end before the deadline must fail at once")
		}
		if ran.get() != 1 {
			t.Fatalf("ran %d times, want 1", ran.get())
		}
	})
	t.Run("waiting calls all run", func(t *testing.T) {
		lim := map[string]rate.Limit{"search": rate.Every(20 * time.Millisecond)}
		var ran icCounter
		tk := icKit(t, nil, interceptors.RateLimit(lim, 1))
		testutil.Add(t, tk, rateTool(t, "search", &ran))
		calls := []toolkit.Call{testutil.Call("a", "search", `{}`), testutil.Call("b", "search", `{}`), testutil.Call("c", "search", `{}`)}
		for _, r := range testutil.Session(t, tk, "s").Run(context.Background(), calls) {
			if r.State != events.StateSuccess {
				t.Fatalf("%s: %s %v", r.Call.ID, r.State, r.Err)
			}
		}
		// A batch that does not wait: one token, one call.
		lim = map[string]rate.Limit{"search": rate.Every(time.Hour)}
		tk2 := icKit(t, nil, interceptors.RateLimit(lim, 1, interceptors.RateLimitNoWait()))
		testutil.Add(t, tk2, rateTool(t, "search", &ran))
		ok, limited := 0, 0
		for _, r := range testutil.Session(t, tk2, "s").Run(context.Background(), calls) {
			switch {
			case r.State == events.StateSuccess:
				ok++
			case errors.Is(r.Err, interceptors.ErrRateLimited):
				limited++
			}
		}
		if ok != 1 || limited != 2 {
			t.Fatalf("%d ran, %d limited; want 1 and 2", ok, limited)
		}
	})
}

func TestRateLimitWaitEndsOnCancellation(t *testing.T) {
	tk := icKit(t, nil, interceptors.RateLimit(map[string]rate.Limit{"search": rate.Every(time.Hour)}, 1))
	var ran icCounter
	testutil.Add(t, tk, rateTool(t, "search", &ran, toolkit.Spec{Name: "search", Timeout: -1}))
	s := testutil.Session(t, tk, "s")
	icRun(t, s, testutil.Call("c1", "search", `{}`))
	ctx, cancel := context.WithCancel(context.Background())
	run := s.Start(ctx, []toolkit.Call{testutil.Call("c2", "search", `{}`)})
	select {
	case <-run.Done():
		t.Fatal("the second call did not wait for its turn")
	case <-time.After(30 * time.Millisecond):
	}
	cancel()
	testutil.WaitFor(t, run.Done(), "the waiting call to end")
	if r := run.Wait()[0]; r.State != events.StateInterrupted || ran.get() != 1 {
		t.Fatalf("got %s, ran %d; want interrupted without running", r.State, ran.get())
	}
}

func TestRateLimitAll(t *testing.T) {
	tk := icKit(t, nil, interceptors.RateLimit(map[string]rate.Limit{
		interceptors.RateLimitAll: rate.Every(time.Hour),
		"free":                    rate.Inf,
	}, 1, interceptors.RateLimitNoWait()))
	var a, b, free icCounter
	testutil.Add(t, tk, rateTool(t, "a", &a), rateTool(t, "b", &b), rateTool(t, "free", &free))
	s := testutil.Session(t, tk, "s")
	for i, name := range []string{"a", "b", "a", "b", "free", "free"} {
		icRun(t, s, testutil.Call(string(rune('0'+i)), name, `{}`))
	}
	if a.get() != 1 || b.get() != 1 || free.get() != 2 {
		t.Fatalf("a ran %d, b %d, free %d; want 1, 1 (a limiter each) and 2", a.get(), b.get(), free.get())
	}
}
