package toolkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

func TestAnnotationsDefaultAsMCP(t *testing.T) {
	cases := []struct {
		name                               string
		spec                               toolkit.Spec
		destructive, idempotent, openWorld bool
	}{
		{"nothing declared", toolkit.Spec{}, true, false, true},
		{"read-only", toolkit.Spec{ReadOnly: true}, false, true, true},
		{"read-only wins over destructive", toolkit.Spec{ReadOnly: true, Destructive: new(true), Idempotent: new(false)}, false, true, true},
		{"additive", toolkit.Spec{Destructive: new(false)}, false, false, true},
		{"idempotent", toolkit.Spec{Idempotent: new(true)}, true, true, true},
		{"closed world", toolkit.Spec{OpenWorld: new(false)}, true, false, false},
	}
	for _, c := range cases {
		a, _ := c.spec.Annotations()
		if a.DestructiveHint != c.destructive {
			t.Errorf("%s: DestructiveHint = %v, want %v", c.name, a.DestructiveHint, c.destructive)
		}
		if a.IdempotentHint != c.idempotent {
			t.Errorf("%s: IdempotentHint = %v, want %v", c.name, a.IdempotentHint, c.idempotent)
		}
		if a.OpenWorldHint != c.openWorld {
			t.Errorf("%s: OpenWorldHint = %v, want %v", c.name, a.OpenWorldHint, c.openWorld)
		}
	}
}

func TestAnnotationsInDefinitions(t *testing.T) {
	tk := testutil.Kit(t)
	plain := testutil.Tool(t, toolkit.Spec{Name: "plain"}, func(context.Context, struct{}) (string, error) { return "", nil })
	idem := true
	annotated := testutil.Tool(t, toolkit.Spec{Name: "put", Title: "Put a file", Destructive: new(false), Idempotent: &idem, OpenWorld: new(false)},
		func(context.Context, struct{}) (string, error) { return "", nil })
	idem = false // the tool keeps its own copy
	testutil.Add(t, tk, plain, annotated)

	raw, err := json.Marshal(tk.Definitions())
	if err != nil {
		t.Fatal(err)
	}
	var defs []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &defs); err != nil {
		t.Fatal(err)
	}
	if _, ok := defs[0]["annotations"]; ok {
		t.Errorf("a tool that declares nothing has annotations: %s", raw)
	}
	want := `{"title":"Put a file","readOnlyHint":false,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false}`
	if got := string(defs[1]["annotations"]); got != want {
		t.Errorf("annotations = %s, want %s", got, want)
	}
	if a, _ := annotated.Spec().Annotations(); !a.IdempotentHint {
		t.Error("changing the caller's variable after NewTool changed the tool")
	}
}

type weather struct {
	City    string   `json:"city"`
	Celsius float64  `json:"celsius" tool:"minimum=-90,maximum=60"`
	Tags    []string `json:"tags,omitempty"`
}

func TestOutputSchemaTypedTool(t *testing.T) {
	tk := testutil.Kit(t)
	celsius := 21.5
	ok := testutil.Tool(t, toolkit.Spec{Name: "weather"}, func(context.Context, struct{}) (*weather, error) {
		return &weather{City: "Oslo", Celsius: celsius}, nil
	})
	text := testutil.Tool(t, toolkit.Spec{Name: "text"}, func(context.Context, struct{}) (string, error) { return "hi", nil })
	testutil.Add(t, tk, ok, text)

	var s struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(ok.Definition().OutputSchema, &s); err != nil {
		t.Fatalf("output schema %s: %v", ok.Definition().OutputSchema, err)
	}
	if s.Type != "object" || len(s.Properties) != 3 || strings.Join(s.Required, ",") != "city,celsius" {
		t.Fatalf("output schema = %s", ok.Definition().OutputSchema)
	}
	if text.Definition().OutputSchema != nil {
		t.Errorf("a text tool has an output schema: %s", text.Definition().OutputSchema)
	}
	defs := tk.Definitions()
	if string(defs[0].OutputSchema) != string(ok.Definition().OutputSchema) || defs[1].OutputSchema != nil {
		t.Errorf("definitions carry output schemas %s and %s", defs[0].OutputSchema, defs[1].OutputSchema)
	}

	r := testutil.Run(t, tk, "s", testutil.Call("c1", "weather", `{}`))[0]
	if r.State != events.StateSuccess || r.Text() != `{"city":"Oslo","celsius":21.5}` {
		t.Fatalf("conforming output: %s %q (%v)", r.State, r.Text(), r.Err)
	}
	// The tags of the output type constrain it too.
	celsius = 99
	r = testutil.Run(t, tk, "s", testutil.Call("c2", "weather", `{}`))[0]
	if r.State != events.StateError || !isErr[*toolkit.OutputError](r.Err) || !strings.Contains(r.Text(), "- celsius: ") {
		t.Fatalf("out-of-range output: %s %q (%v)", r.State, r.Text(), r.Err)
	}
}

// uuidLike marshals itself to a string although it is an array: its
// inferred schema must not refuse what it marshals to.
type uuidLike [4]byte

func (u uuidLike) MarshalText() ([]byte, error) { return []byte("u-1234"), nil }

type withSelfMarshaling struct {
	ID    uuidLike         `json:"id"`
	Blob  []byte           `json:"blob"`
	Index map[string]int   `json:"index"` // nil: null
	List  []string         `json:"list"`  // nil: null
	Ptr   *weather         `json:"ptr"`   // nil: null
	Deep  []map[string]int `json:"deep"`
}

// TestOutputSchemaGoValues: every value encoding/json writes for a typed
// tool's output type conforms to its inferred output schema (zero values,
// nil maps and slices, types that marshal themselves, a nil map at the
// root), so no tool that worked before output schemas fails now.
func TestOutputSchemaGoValues(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk,
		testutil.Tool(t, toolkit.Spec{Name: "zero"}, func(context.Context, struct{}) (withSelfMarshaling, error) {
			return withSelfMarshaling{}, nil
		}),
		testutil.Tool(t, toolkit.Spec{Name: "full"}, func(context.Context, struct{}) (withSelfMarshaling, error) {
			return withSelfMarshaling{Blob: []byte("abc"), Index: map[string]int{"a": 1}, List: []string{"x"},
				Ptr: &weather{City: "Oslo"}, Deep: []map[string]int{nil, {"b": 2}}}, nil
		}),
		testutil.Tool(t, toolkit.Spec{Name: "nilmap"}, func(context.Context, struct{}) (map[string]int, error) { return nil, nil }),
		testutil.Tool(t, toolkit.Spec{Name: "nilptr"}, func(context.Context, struct{}) (*weather, error) { return nil, nil }))
	for _, name := range []string{"zero", "full", "nilmap", "nilptr"} {
		r := testutil.Run(t, tk, "s", testutil.Call(name, name, `{}`))[0]
		if r.State != events.StateSuccess {
			t.Errorf("%s: %s %q", name, r.State, r.Text())
		}
	}
}

func TestOutputSchemaRawTool(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(rec))
	var out []events.Part
	tool, err := toolkit.NewRawTool(toolkit.Spec{Name: "stats", OutputSchema: json.RawMessage(
		`{"type":"object","properties":{"count":{"type":"integer","minimum":0}},"required":["count"]}`)},
		json.RawMessage(`{"type":"object"}`), func(ctx context.Context, _ json.RawMessage) ([]events.Part, error) {
			return out, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Add(t, tk, tool)
	if got := string(tk.Definitions()[0].OutputSchema); !strings.Contains(got, `"count"`) {
		t.Fatalf("definition's output schema = %s", got)
	}
	cases := []struct {
		name  string
		parts []events.Part
		want  string // "" for success
	}{
		{"conforms, with text beside it", []events.Part{events.Text("3 files"), {Type: events.PartJSON, JSON: json.RawMessage(`{"count":3}`)}}, ""},
		{"wrong type", []events.Part{{Type: events.PartJSON, JSON: json.RawMessage(`{"count":"three"}`)}}, "- count: must be an integer"},
		{"missing property", []events.Part{{Type: events.PartJSON, JSON: json.RawMessage(`{}`)}}, "- count: is required"},
		{"text only", []events.Part{events.Text("3")}, "- (root): no structured result: the result has no JSON value"},
	}
	for i, c := range cases {
		out = c.parts
		id := string(rune('a' + i))
		r := testutil.Run(t, tk, "s", testutil.Call(id, "stats", `{}`))[0]
		if c.want == "" {
			if r.State != events.StateSuccess {
				t.Errorf("%s: %s %q", c.name, r.State, r.Text())
			}
		} else {
			var oe *toolkit.OutputError
			if r.State != events.StateError || !errors.As(r.Err, &oe) || !strings.Contains(r.Text(), c.want) ||
				!strings.HasPrefix(r.Text(), `Error: tool "stats" returned a result that does not match its output schema:`) {
				t.Errorf("%s: %s %q (%v), want an output error with %q", c.name, r.State, r.Text(), r.Err, c.want)
			}
		}
		// The model sees no part of what did not conform, and the deltas
		// still add up to the result.
		testutil.CheckDeltasAddUp(t, rec, r)
	}
}

func TestOutputSchemaRefused(t *testing.T) {
	if _, err := toolkit.NewRawTool(toolkit.Spec{Name: "x", OutputSchema: json.RawMessage(`{"type":"string"}`)},
		json.RawMessage(`{"type":"object"}`), func(context.Context, json.RawMessage) ([]events.Part, error) { return nil, nil }); err == nil ||
		!strings.Contains(err.Error(), `output schema must have "type": "object"`) {
		t.Errorf("a non-object output schema: %v", err)
	}
	if _, err := toolkit.NewTool(toolkit.Spec{Name: "y", OutputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, struct{}) (weather, error) { return weather{}, nil }); err == nil {
		t.Error("a typed tool accepted an output schema in its spec")
	}
}
