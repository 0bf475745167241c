package toolkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

func TestRegistry(t *testing.T) {
	tk := testutil.Kit(t)
	mk := func(name, out string) *toolkit.Tool {
		return testutil.Tool(t, toolkit.Spec{Name: name, Description: "says " + out}, func(ctx context.Context, _ none) (string, error) { return out, nil })
	}
	testutil.Add(t, tk, mk("b", "b1"), mk("a", "a1"))
	if err := tk.Add(mk("b", "b2")); !errors.Is(err, toolkit.ErrDuplicate) {
		t.Fatalf("duplicate: %v", err)
	}
	if err := tk.Add(mk("c", "c1"), mk("a", "a2")); !errors.Is(err, toolkit.ErrDuplicate) {
		t.Fatalf("duplicate in batch: %v", err)
	}
	if _, ok := tk.Tool("c"); ok {
		t.Fatal("a failed Register left a tool behind")
	}
	if err := tk.Replace(mk("b", "b2")); err != nil {
		t.Fatal(err)
	}
	names := func() string {
		var n []string
		for _, tool := range tk.Tools() {
			n = append(n, tool.Name())
		}
		return strings.Join(n, ",")
	}
	if got := names(); got != "b,a" {
		t.Fatalf("order %s (a replaced tool keeps its place)", got)
	}
	s := testutil.Session(t, tk, "s")
	if r := s.Run(context.Background(), []toolkit.Call{testutil.Call("1", "b", ``)})[0]; r.Text() != "b2" {
		t.Fatalf("replaced tool answered %q", r.Text())
	}
	if n := tk.Remove("b", "zzz"); n != 1 || names() != "a" {
		t.Fatalf("Remove: %d, left %s", n, names())
	}
	if r := s.Run(context.Background(), []toolkit.Call{testutil.Call("2", "b", ``)})[0]; !isErr[*toolkit.UnknownToolError](r.Err) {
		t.Fatalf("removed tool: %v", r.Err)
	}
}

func TestToolNames(t *testing.T) {
	fn := func(ctx context.Context, _ none) (string, error) { return "", nil }
	for _, good := range []string{"a", "A-b_9", strings.Repeat("x", 64)} {
		if _, err := toolkit.NewTool(toolkit.Spec{Name: good}, fn); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
	for _, bad := range []string{"", "has space", "dot.name", strings.Repeat("x", 65), "ünï", "semi;colon"} {
		if _, err := toolkit.NewTool(toolkit.Spec{Name: bad}, fn); !errors.Is(err, toolkit.ErrInvalidName) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestDefinitions(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "scan", Description: "Scan a folder."}, func(ctx context.Context, in scanIn) (string, error) { return "", nil }))
	defs := tk.Definitions()
	if len(defs) != 1 {
		t.Fatalf("%d definitions", len(defs))
	}
	b, err := json.Marshal(defs[0])
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Parameters  struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
			Additional *bool                      `json:"additionalProperties"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	p := got.Parameters
	if got.Name != "scan" || got.Description != "Scan a folder." || p.Type != "object" || len(p.Required) != 1 || p.Required[0] != "path" || p.Additional == nil || *p.Additional {
		t.Fatalf("definition %s", b)
	}
	if d := string(p.Properties["path"]); !strings.Contains(d, `"description":"folder to scan"`) {
		t.Fatalf("path property %s", d)
	}
	if d := string(p.Properties["mode"]); !strings.Contains(d, `"enum":["fast","thorough"]`) {
		t.Fatalf("mode property %s", d)
	}
	if d := string(p.Properties["pattern"]); !strings.Contains(d, `"default":"*"`) {
		t.Fatalf("pattern property %s", d)
	}
	// Properties keep the struct's field order: models read them in order.
	if i, j := strings.Index(string(b), `"path"`), strings.Index(string(b), `"deep"`); i < 0 || j < i {
		t.Fatalf("property order lost: %s", b)
	}
}
