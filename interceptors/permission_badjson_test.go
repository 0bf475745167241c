package interceptors_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// TestAskWithArgumentsThatAreNotJSON: an interceptor outside Permissions
// rewrites a call's arguments into text that is not JSON (the engine
// validates rewritten arguments only when the tool is about to run, inside
// Permissions). The approval request cannot be sent (its event body would
// not marshal), so nobody can be asked: the call must fail at once with an
// argument error that says so, not wait for its approval timeout and end
// "denied: nobody approved". Before, the call waited the whole 2s and ended
// denied (ErrNoDecision), with no approval event on NATS, while Pending
// listed a request no UI had seen.
func TestAskWithArgumentsThatAreNotJSON(t *testing.T) {
	const wait = 2 * time.Second
	f := newPermFixture(t, interceptors.WithApprovalTimeout(wait))
	f.tk.RemoveInterceptor("permissions")
	breaker := toolkit.Interceptor{Name: "template", Tools: []string{"write"},
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
			inv.Call.Args = json.RawMessage(`{"path": "notes/a.txt"`) // a template that lost its brace
			return next(ctx, inv)
		}}
	if err := f.tk.Use(breaker, f.perms.Interceptor()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := f.start("s", permCall("w", "write", `{"path":"notes/a.txt"}`)).Wait()[0]
	took := time.Since(start)
	if took >= wait || r.State != events.StateError || !isErr[*toolkit.ArgumentError](r.Err) ||
		!strings.Contains(r.Text(), "not valid JSON") || !strings.Contains(r.Text(), "nobody was asked") {
		t.Fatalf("after %v: %s, err %v, text %q", took.Round(time.Millisecond), r.State, r.Err, r.Text())
	}
	t.Logf("the model reads: %s", r.Text())
	if p := f.perms.Pending(""); len(p) != 0 {
		t.Fatalf("still pending: %+v", p)
	}
	if w := f.writes(); len(w) != 0 {
		t.Fatalf("the tool ran: %v", w)
	}
	select {
	case req := <-f.all:
		t.Fatalf("an approval event went out: %+v", req)
	default:
	}
}
