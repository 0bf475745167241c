package toolkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
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

func (h *hider) Resolve(_ context.Context, _ *toolkit.Session, t *toolkit.Tool) (*toolkit.Tool, error) {
	if t.Spec().Name == h.name {
		return nil, fmt.Errorf("%s is hidden", h.name)
	}
	return t, nil
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
	tk := testutil.Kit(t)
	for _, name := range []string{"a", "b", "c"} {
		testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: name}, func(ctx context.Context, _ none) (string, error) { return name, nil }))
	}
	tr := &trace{}
	tk.Use(tracing("ic", tr))
	ha, hb := &hider{name: "a"}, &hider{name: "b"}
	tk.AddVisibility(ha)
	tk.AddVisibility(hb)
	s := testutil.Session(t, tk, "s")

	defs, err := s.Definitions(context.Background())
	if err != nil || !slices.Equal(toolNames(defs), []string{"c"}) {
		t.Fatalf("session definitions %v, %v; want [c]", toolNames(defs), err)
	}
	if got := toolNames(tk.Definitions()); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("toolkit definitions %v, want every registered tool", got)
	}

	rs := s.Run(context.Background(), []toolkit.Call{testutil.Call("1", "a", ``), testutil.Call("2", "b", ``), testutil.Call("3", "c", ``), testutil.Call("4", "cc", ``)})
	for i, name := range []string{"a", "b"} {
		if r := rs[i]; !errors.Is(r.Err, toolkit.ErrUnavailable) || !strings.Contains(r.Text(), name+" is hidden") {
			t.Errorf("call of %s: %s %q (%v), want refused", name, r.State, r.Text(), r.Err)
		}
	}
	if rs[2].State != events.StateSuccess || rs[2].Text() != "c" {
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
	defs, _ = testutil.Session(t, tk, "s2").Definitions(context.Background())
	if got := toolNames(defs); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("without a visibility the session sees %v", got)
	}
}

// picker is a Visibility that shows each session a variant of the tool
// "pick" whose schema allows only the session's own choices.
type picker struct {
	base     *toolkit.Tool
	variants map[string]*toolkit.Tool // by session
}

func (p *picker) Tools(_ context.Context, s *toolkit.Session, tools []*toolkit.Tool) ([]*toolkit.Tool, error) {
	out := slices.Clone(tools)
	for i, t := range out {
		if t.Name() == "pick" {
			out[i] = p.variants[s.ID()]
		}
	}
	return out, nil
}

func (p *picker) Resolve(_ context.Context, s *toolkit.Session, t *toolkit.Tool) (*toolkit.Tool, error) {
	if t.Name() == "pick" {
		return p.variants[s.ID()], nil
	}
	return t, nil
}

// TestVisibilityResolvesVariants: a session is shown a variant of a tool
// (Tool.Variant) and its calls are checked against the variant's schema,
// not the registered one's: the handler only ever gets what the model was
// shown it may send, and the refusal names the allowed values.
func TestVisibilityResolvesVariants(t *testing.T) {
	tk := testutil.Kit(t)
	var got []string
	base, err := toolkit.NewRawTool(toolkit.Spec{Name: "pick", Description: "Pick one."}, []byte(`{"type":"object"}`),
		func(_ context.Context, args json.RawMessage) ([]events.Part, error) {
			got = append(got, string(args))
			return []events.Part{events.Text("picked")}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Add(t, tk, base)
	variant := func(choices string) *toolkit.Tool {
		v, err := base.Variant("Pick one of "+choices+".", []byte(`{"type":"object","properties":{"choice":{"enum":[`+choices+`]}},"required":["choice"],"additionalProperties":false}`))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tk.SetVisibility(&picker{base: base, variants: map[string]*toolkit.Tool{"s1": variant(`"red","blue"`), "s2": variant(`"green"`)}})

	defs, err := testutil.Session(t, tk, "s1").Definitions(context.Background())
	if err != nil || len(defs) != 1 || !strings.Contains(string(defs[0].Parameters), `"blue"`) || defs[0].Description != `Pick one of "red","blue".` {
		t.Fatalf("s1 sees %+v, %v", defs, err)
	}
	rs := testutil.Session(t, tk, "s1").Run(context.Background(), []toolkit.Call{
		testutil.Call("1", "pick", `{"choice":"blue"}`), testutil.Call("2", "pick", `{"choice":"green"}`), testutil.Call("3", "pick", `{"choice":"blue","x":1}`)})
	if rs[0].State != events.StateSuccess {
		t.Errorf("allowed choice: %s %q", rs[0].State, rs[0].Text())
	}
	for _, r := range rs[1:] {
		if !isErr[*toolkit.ArgumentError](r.Err) {
			t.Errorf("call %s: %s %q, want refused by the variant's schema", r.Call.ID, r.State, r.Text())
		}
	}
	if !strings.Contains(rs[1].Text(), "red") || !strings.Contains(rs[1].Text(), "blue") {
		t.Errorf("the refusal does not name the allowed choices: %q", rs[1].Text())
	}
	if r := testutil.Session(t, tk, "s2").Run(context.Background(), []toolkit.Call{testutil.Call("4", "pick", `{"choice":"green"}`)})[0]; r.State != events.StateSuccess {
		t.Errorf("s2's own choice: %s %q", r.State, r.Text())
	}
	if !slices.Equal(got, []string{`{"choice":"blue"}`, `{"choice":"green"}`}) {
		t.Errorf("the handler got %q", got)
	}

	typed := testutil.Tool(t, toolkit.Spec{Name: "typed"}, func(ctx context.Context, _ none) (string, error) { return "", nil })
	if _, err := typed.Variant("x", []byte(`{"type":"object"}`)); err == nil {
		t.Error("a typed tool made a variant")
	}
}

// renamer resolves every call to a tool of another name.
type renamer struct{ other *toolkit.Tool }

func (r renamer) Tools(_ context.Context, _ *toolkit.Session, tools []*toolkit.Tool) ([]*toolkit.Tool, error) {
	return tools, nil
}
func (r renamer) Resolve(context.Context, *toolkit.Session, *toolkit.Tool) (*toolkit.Tool, error) {
	return r.other, nil
}

// TestResolveKeepsTheName: a visibility cannot make a call run another tool
// than the one the model named.
func TestResolveKeepsTheName(t *testing.T) {
	tk := testutil.Kit(t)
	ran := ""
	a := testutil.Tool(t, toolkit.Spec{Name: "a"}, func(ctx context.Context, _ none) (string, error) { ran = "a"; return "", nil })
	b := testutil.Tool(t, toolkit.Spec{Name: "b"}, func(ctx context.Context, _ none) (string, error) { ran = "b"; return "", nil })
	testutil.Add(t, tk, a)
	tk.SetVisibility(renamer{other: b})
	r := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("1", "a", `{}`)})[0]
	if r.State != events.StateError || ran != "" {
		t.Errorf("state %s, ran %q: want refused, nothing run", r.State, ran)
	}
}
