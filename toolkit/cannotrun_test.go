package toolkit_test

import (
	"context"
	"sync"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// TestCannotRun: Invocation.CannotRun is true only in the innermost
// interceptor with Unknown set of a call that is unknown: an outer one may
// still see an inner one alias it, and a known call may run. The mark is
// the call's own: a context carried into another call (a sub-agent's
// batch) does not make that call look unrunnable.
func TestCannotRun(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	record := func(name string) toolkit.Interceptor {
		return toolkit.Interceptor{Name: name, Unknown: true, Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
			mu.Lock()
			seen[name+"/"+inv.Call.Name] = inv.CannotRun(ctx)
			mu.Unlock()
			return next(ctx, inv)
		}}
	}
	tk := testutil.Kit(t)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "known"}, func(context.Context, none) (string, error) { return "ok", nil }))
	var sub toolkit.Result
	inner := record("inner")
	inner.Intercept = func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		mu.Lock()
		seen["inner/"+inv.Call.Name] = inv.CannotRun(ctx)
		mu.Unlock()
		if inv.Call.Name == "outer_call" {
			// Another call made under this context.
			s := testutil.Session(t, tk, "sub")
			sub = s.Run(ctx, []toolkit.Call{testutil.Call("sub", "nested", `{}`)})[0]
		}
		return next(ctx, inv)
	}
	if err := tk.Use(record("outer"), inner); err != nil {
		t.Fatal(err)
	}
	s := testutil.Session(t, tk, "s")
	s.Run(context.Background(), []toolkit.Call{testutil.Call("a", "missing", `{}`), testutil.Call("b", "known", `{}`)})
	s.Run(context.Background(), []toolkit.Call{testutil.Call("c", "outer_call", `{}`)})
	want := map[string]bool{"outer/missing": false, "inner/missing": true, "outer/known": false, "inner/known": false,
		"outer/outer_call": false, "inner/outer_call": true, "outer/nested": false, "inner/nested": true}
	mu.Lock()
	defer mu.Unlock()
	for k, v := range want {
		if got, ok := seen[k]; !ok || got != v {
			t.Errorf("CannotRun in %s = %v (seen %v), want %v", k, got, ok, v)
		}
	}
	if sub.State != events.StateError {
		t.Errorf("nested call: %s", sub.State)
	}
}
