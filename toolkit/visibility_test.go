package toolkit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/toolkit"
)

// hider is a Visibility that hides one tool and refuses its calls.
type hider struct {
	name   string
	closed []string // sessions it was told about
}

func (h *hider) Tools(_ context.Context, _ *toolkit.Session, tools []*toolkit.Tool) ([]*toolkit.Tool, error) {
	return slices.DeleteFunc(slices.Clone(tools), func(t *toolkit.Tool) bool { return t.Spec().Name == h.name }), nil
}

func (h *hider) Allow(_ context.Context, _ *toolkit.Session, t *toolkit.Tool) error {
	if t.Spec().Name == h.name {
		return fmt.Errorf("%s is hidden", h.name)
	}
	return nil
}

func (h *hider) SessionClosed(id string) { h.closed = append(h.closed, id) }

func toolNames(defs []toolkit.Definition) []string {
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	return names
}

// TestVisibilityChain: AddVisibility chains visibilities. A session sees the
// tools every one of them lets through, a call must be allowed by all (a
// refused call fails with ErrUnavailable and the refusal as its text, and no
// interceptor runs for it), an unknown tool's error lists what the session
// sees, and Session.Close reaches each of them.
func TestVisibilityChain(t *testing.T) {
	tk := newKit(t)
	for _, name := range []string{"a", "b", "c"} {
		mustAdd(t, tk, mustTool(t, toolkit.Spec{Name: name}, func(ctx context.Context, _ none) (string, error) { return name, nil }))
	}
	tr := &trace{}
	tk.Use(tracing("ic", tr))
	ha, hb := &hider{name: "a"}, &hider{name: "b"}
	tk.AddVisibility(ha)
	tk.AddVisibility(hb)
	s := session(t, tk, "s")

	defs, err := s.Definitions(context.Background())
	if err != nil || !slices.Equal(toolNames(defs), []string{"c"}) {
		t.Fatalf("session definitions %v, %v; want [c]", toolNames(defs), err)
	}
	if got := toolNames(tk.Definitions()); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("toolkit definitions %v, want every registered tool", got)
	}

	rs := s.Run(context.Background(), []toolkit.Call{call("1", "a", ``), call("2", "b", ``), call("3", "c", ``), call("4", "cc", ``)})
	for i, name := range []string{"a", "b"} {
		if r := rs[i]; !errors.Is(r.Err, toolkit.ErrUnavailable) || !strings.Contains(r.Text(), name+" is hidden") {
			t.Errorf("call of %s: %s %q (%v), want refused", name, r.State, r.Text(), r.Err)
		}
	}
	if rs[2].State != toolkit.StateSuccess || rs[2].Text() != "c" {
		t.Errorf("allowed call: %s %q", rs[2].State, rs[2].Text())
	}
	var ue *toolkit.UnknownToolError
	if !errors.As(rs[3].Err, &ue) || !slices.Equal(ue.Available, []string{"c"}) {
		t.Errorf("unknown tool: %v, want only the visible tools listed", rs[3].Err)
	}
	if got := tr.get(); !slices.Equal(got, []string{"ic>", "<ic"}) {
		t.Errorf("interceptor ran %v, want once (for the allowed call)", got)
	}

	s.Close()
	if !slices.Equal(ha.closed, []string{"s"}) || !slices.Equal(hb.closed, []string{"s"}) {
		t.Errorf("SessionClosed: %v %v", ha.closed, hb.closed)
	}

	tk.SetVisibility(nil)
	defs, _ = session(t, tk, "s2").Definitions(context.Background())
	if got := toolNames(defs); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("without a visibility the session sees %v", got)
	}
}
