package interceptors_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// limitStates runs calls of the named tools as one batch and returns "ok"
// or "limit" per call.
func limitStates(t *testing.T, s *toolkit.Session, names ...string) []string {
	t.Helper()
	calls := make([]toolkit.Call, len(names))
	for i, n := range names {
		calls[i] = testutil.Call(fmt.Sprintf("c%d", i), n, `{}`)
	}
	var out []string
	for _, r := range s.Run(context.Background(), calls) {
		switch {
		case r.State == events.StateSuccess:
			out = append(out, "ok")
		case r.State == events.StateError && errors.Is(r.Err, interceptors.ErrLimit):
			out = append(out, "limit")
		default:
			out = append(out, fmt.Sprintf("%s(%v)", r.State, r.Err))
		}
	}
	return out
}

func limitTools(t testing.TB, tk *toolkit.Toolkit, names ...string) map[string]*icCounter {
	ran := map[string]*icCounter{}
	for _, n := range names {
		c := &icCounter{}
		ran[n] = c
		testutil.Add(t, tk, icTool(t, toolkit.Spec{Name: n}, func(ctx context.Context) (string, error) {
			c.inc()
			return "ok", nil
		}))
	}
	return ran
}

func TestCallLimitsPerTurnResets(t *testing.T) {
	tk := icKit(t, nil, interceptors.CallLimits(interceptors.PerTurn(2, "search")))
	ran := limitTools(t, tk, "search", "other")
	s := testutil.Session(t, tk, "s")
	for range 2 {
		if got := fmt.Sprint(limitStates(t, s, "search", "search", "search", "other", "other", "other")); got != "[ok ok limit ok ok ok]" {
			t.Fatalf("per turn: %s", got)
		}
	}
	if ran["search"].get() != 4 {
		t.Fatalf("search ran %d times, want 2 per turn", ran["search"].get())
	}
	r := s.Run(context.Background(), []toolkit.Call{testutil.Call("1", "search", `{}`), testutil.Call("2", "search", `{}`), testutil.Call("3", "search", `{}`)})[2]
	want := `Error: call limit reached: "search" may run 2 times per turn and already has; call it again in a later turn if you still need to`
	var le *interceptors.LimitError
	if r.Text() != want || !errors.As(r.Err, &le) || le.Scope != "turn" {
		t.Fatalf("model reads %q (cause %#v),\nwant %q", r.Text(), r.Err, want)
	}
}

func TestCallLimitsPerSession(t *testing.T) {
	tk := icKit(t, nil, interceptors.CallLimits(interceptors.PerSession(3, "search")))
	limitTools(t, tk, "search")
	a, b := testutil.Session(t, tk, "a"), testutil.Session(t, tk, "b")
	if got := fmt.Sprint(limitStates(t, a, "search", "search")); got != "[ok ok]" {
		t.Fatalf("first run: %s", got)
	}
	if got := fmt.Sprint(limitStates(t, a, "search", "search")); got != "[ok limit]" {
		t.Fatalf("second run of the session: %s", got)
	}
	if got := fmt.Sprint(limitStates(t, b, "search", "search", "search")); got != "[ok ok ok]" {
		t.Fatalf("another session: %s", got)
	}
	r := icRun(t, a, testutil.Call("x", "search", `{}`))
	want := `Error: call limit reached: "search" may run 3 times per session and already has; stop calling it and answer with what you have`
	if r.Text() != want {
		t.Fatalf("model reads %q,\nwant %q", r.Text(), want)
	}
	var le *interceptors.LimitError
	if !errors.As(r.Err, &le) || le.Tool != "search" || le.Scope != "session" || le.Limit != 3 {
		t.Fatalf("cause %#v", r.Err)
	}
}

func TestCallLimitsOverall(t *testing.T) {
	tk := icKit(t, nil, interceptors.CallLimits(interceptors.PerTurn(2), interceptors.PerSession(3)))
	limitTools(t, tk, "a", "b")
	s := testutil.Session(t, tk, "s")
	if got := fmt.Sprint(limitStates(t, s, "a", "b", "a")); got != "[ok ok limit]" {
		t.Fatalf("per turn: %s", got)
	}
	r := s.Run(context.Background(), []toolkit.Call{testutil.Call("1", "a", `{}`), testutil.Call("2", "b", `{}`)})
	want := "Error: call limit reached: tools may run 3 times per session in total and already have; stop calling tools and answer with what you have"
	if r[0].State != events.StateSuccess || r[1].Text() != want {
		t.Fatalf("second run: %s, %q", r[0].State, r[1].Text())
	}
}

func TestCallLimitsRefusedCallsDoNotCount(t *testing.T) {
	deny := toolkit.Interceptor{Name: "deny", Tools: []string{"denied"},
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
			return toolkit.Failure(events.StateDenied, errors.New("not allowed"))
		}}
	tk := icKit(t, nil, interceptors.CallLimits(interceptors.PerTurn(2), interceptors.PerTurn(1, "a")), deny)
	ran := limitTools(t, tk, "a", "b", "c", "denied")
	s := testutil.Session(t, tk, "s")
	// The second "a" is refused by its own limit and does not use up the
	// overall one; the denied calls never ran and do not count either.
	got := fmt.Sprint(limitStates(t, s, "a", "a", "denied", "denied", "b", "c"))
	if want := "[ok limit denied(not allowed) denied(not allowed) ok limit]"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if ran["a"].get() != 1 || ran["b"].get() != 1 || ran["c"].get() != 0 {
		t.Fatalf("ran a %d, b %d, c %d", ran["a"].get(), ran["b"].get(), ran["c"].get())
	}
}

func TestCallLimitsParallelBatchNeverOvershoots(t *testing.T) {
	const limit, calls = 3, 12
	tk := icKit(t, []toolkit.Option{toolkit.WithMaxParallel(calls)}, interceptors.CallLimits(interceptors.PerTurn(limit)))
	var running, peak, total atomic.Int64
	testutil.Add(t, tk, icTool(t, toolkit.Spec{Name: "search", ConcurrencySafe: true}, func(ctx context.Context) (string, error) {
		n := running.Add(1)
		defer running.Add(-1)
		total.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond) // let the calls overlap
		return "ok", nil
	}))
	names := make([]string, calls)
	for i := range names {
		names[i] = "search"
	}
	for range 5 {
		total.Store(0)
		ok := 0
		for _, st := range limitStates(t, testutil.Session(t, tk, "s"), names...) {
			if st == "ok" {
				ok++
			}
		}
		if ok != limit || total.Load() != limit {
			t.Fatalf("%d calls succeeded, the tool ran %d times; want %d", ok, total.Load(), limit)
		}
	}
	if peak.Load() > limit {
		t.Fatalf("%d calls ran at once, limit %d", peak.Load(), limit)
	}
}

func TestCallLimitsRetriedCallCountsOnce(t *testing.T) {
	sl := &retrySleeps{}
	// Limits inside Retry see every attempt; the call still counts once.
	tk := icKit(t, nil, interceptors.Retry(interceptors.RetrySleep(sl.sleep)), interceptors.CallLimits(interceptors.PerTurn(1)))
	var ran icCounter
	testutil.Add(t, tk, flakyTool(t, "flaky", 2, &ran))
	s := testutil.Session(t, tk, "s")
	r := s.Run(context.Background(), []toolkit.Call{testutil.Call("1", "flaky", `{}`), testutil.Call("2", "flaky", `{}`)})
	if r[0].State != events.StateSuccess || !errors.Is(r[1].Err, interceptors.ErrLimit) || ran.get() != 2 {
		t.Fatalf("got %s %v / %s %v, ran %d", r[0].State, r[0].Err, r[1].State, r[1].Err, ran.get())
	}
}

func TestCallLimitsZeroAndNegative(t *testing.T) {
	tk := icKit(t, nil, interceptors.CallLimits(interceptors.PerTurn(0, "off"), interceptors.PerTurn(1, "free"), interceptors.PerTurn(-1, "free")))
	ran := limitTools(t, tk, "off", "free")
	got := fmt.Sprint(limitStates(t, testutil.Session(t, tk, "s"), "off", "free", "free"))
	if got != "[limit ok ok]" || ran["off"].get() != 0 {
		t.Fatalf("got %s", got)
	}
	r := icRun(t, testutil.Session(t, tk, "s"), testutil.Call("x", "off", `{}`))
	if want := `Error: call limit reached: "off" may not run in this turn; stop calling it and answer with what you have`; r.Text() != want {
		t.Fatalf("model reads %q", r.Text())
	}
}

// CallLimits tells the model to stop once a tool has had its share.
func ExampleCallLimits() {
	tk := toolkit.New()
	defer tk.Close(context.Background())
	tk.Use(interceptors.CallLimits(interceptors.PerSession(1, "search")))
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "search"}, func(ctx context.Context, _ struct{}) (string, error) {
		return "3 hits", nil
	}))
	sess, _ := tk.Session("s")
	for _, id := range []string{"1", "2"} {
		r := sess.Run(context.Background(), []toolkit.Call{{ID: id, Name: "search"}})[0]
		fmt.Println(r.Text())
	}
	// Output:
	// 3 hits
	// Error: call limit reached: "search" may run 1 time per session and already has; stop calling it and answer with what you have
}
