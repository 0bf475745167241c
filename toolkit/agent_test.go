package toolkit_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

func TestAgentInContextAndEvents(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(rec))
	var mu sync.Mutex
	seen := map[string]string{} // call -> what the handler, the interceptor and CallInfo saw
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "who", ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (string, error) {
		info, _ := toolkit.CallInfoFrom(ctx)
		mu.Lock()
		seen[info.CallID] += "handler=" + toolkit.Agent(ctx) + " info=" + info.Agent + " user=" + toolkit.User(ctx)
		mu.Unlock()
		return "ok", nil
	}))
	if err := tk.Use(toolkit.Interceptor{Name: "spy", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		mu.Lock()
		seen[inv.Call.ID] += "ic=" + toolkit.Agent(ctx) + "/" + toolkit.Agent(ctx) + " "
		mu.Unlock()
		return next(ctx, inv)
	}}); err != nil {
		t.Fatal(err)
	}
	sess := testutil.Session(t, tk, "s")
	ctx := toolkit.WithUser(toolkit.WithAgent(context.Background(), "researcher"), "ana")
	sess.Run(ctx, []toolkit.Call{testutil.Call("a1", "who", `{}`), testutil.Call("a2", "who", `{}`)})
	sess.Run(context.Background(), []toolkit.Call{testutil.Call("p1", "who", `{}`)}) // the parent agent says nothing

	want := map[string]string{
		"a1": "ic=researcher/researcher handler=researcher info=researcher user=ana",
		"a2": "ic=researcher/researcher handler=researcher info=researcher user=ana",
		"p1": "ic=/ handler= info= user=",
	}
	for id, w := range want {
		if seen[id] != w {
			t.Errorf("%s saw %q, want %q", id, seen[id], w)
		}
		evs := rec.Of(id)
		if len(evs) < 3 {
			t.Fatalf("%s: %d events", id, len(evs))
		}
		for _, ev := range evs {
			if wantAgent := map[bool]string{true: "researcher", false: ""}[id != "p1"]; ev.Agent != wantAgent {
				t.Errorf("%s: %s event has agent %q, want %q", id, ev.Type, ev.Agent, wantAgent)
			}
		}
	}
}

func TestAgentInvalidID(t *testing.T) {
	tk := testutil.Kit(t)
	ran := false
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "x"}, func(context.Context, struct{}) (string, error) {
		ran = true
		return "", nil
	}))
	sess := testutil.Session(t, tk, "s")
	for _, bad := range []string{"line\nbreak", strings.Repeat("a", 300), "\xff"} {
		r := sess.Run(toolkit.WithAgent(context.Background(), bad), []toolkit.Call{testutil.Call("c", "x", `{}`)})[0]
		if r.State != events.StateError || !errors.Is(r.Err, toolkit.ErrInvalidCall) || !strings.Contains(r.Text(), "invalid agent id") || ran {
			t.Errorf("agent %q: %s %q (ran %v)", bad, r.State, r.Text(), ran)
		}
	}
}
