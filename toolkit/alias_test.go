package toolkit_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// groupGate refuses calls to the tools it names (Resolve), like an inactive
// tool group, and shows every other tool.
type groupGate struct{ closed map[string]bool }

func (g groupGate) Tools(_ context.Context, _ *toolkit.Session, tools []*toolkit.Tool) ([]*toolkit.Tool, error) {
	return tools, nil
}

func (g groupGate) Resolve(_ context.Context, _ *toolkit.Session, t *toolkit.Tool) (*toolkit.Tool, error) {
	if g.closed[t.Spec().Name] {
		return nil, errors.New("tool " + t.Spec().Name + " is in an inactive group")
	}
	return t, nil
}

// TestAliasedCallThroughVisibility: a call an Unknown interceptor points at
// a tool runs only as the session's Visibility lets a call to that tool run:
// refused with ErrUnavailable and the visibility's words when it is
// unavailable, refused when the visibility resolves it to a tool of another
// name (as a direct call is: TestResolveKeepsTheName), run when allowed.
func TestAliasedCallThroughVisibility(t *testing.T) {
	tk := testutil.Kit(t)
	var secretRan, otherRan, openRan atomic.Int32
	secret := countTool(t, "secret", &secretRan)
	other := countTool(t, "other", &otherRan)
	open := countTool(t, "open", &openRan)
	testutil.Add(t, tk, secret, other, open)
	if err := tk.Use(toolkit.Interceptor{Name: "alias", Unknown: true, Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		if inv.Unknown() {
			target := strings.TrimPrefix(inv.Call.Name, "old_")
			if tool, ok := tk.Tool(target); ok {
				inv.Tool = tool
			}
		}
		return next(ctx, inv)
	}}); err != nil {
		t.Fatal(err)
	}
	tk.SetVisibility(groupGate{closed: map[string]bool{"secret": true}})
	s := testutil.Session(t, tk, "s")
	rs := s.Run(context.Background(), []toolkit.Call{testutil.Call("1", "old_secret", `{}`), testutil.Call("2", "old_open", `{}`)})
	if r := rs[0]; r.State != events.StateError || !errors.Is(r.Err, toolkit.ErrUnavailable) || !strings.Contains(r.Text(), "inactive group") || secretRan.Load() != 0 {
		t.Errorf("an alias of an unavailable tool: %s %v %q; ran %d", r.State, r.Err, r.Text(), secretRan.Load())
	}
	if r := rs[1]; r.State != events.StateSuccess || openRan.Load() != 1 {
		t.Errorf("an alias of an available tool: %s %v", r.State, r.Err)
	}

	tk.SetVisibility(renamer{other: other})
	direct := s.Run(context.Background(), []toolkit.Call{testutil.Call("3", "open", `{}`)})[0]
	aliased := s.Run(context.Background(), []toolkit.Call{testutil.Call("4", "old_open", `{}`)})[0]
	if direct.State != events.StateError || aliased.State != events.StateError || otherRan.Load() != 0 || openRan.Load() != 1 {
		t.Errorf("a visibility that resolves open to other: direct %s %q, aliased %s %q; other ran %d, open %d",
			direct.State, direct.Text(), aliased.State, aliased.Text(), otherRan.Load(), openRan.Load())
	}
}
