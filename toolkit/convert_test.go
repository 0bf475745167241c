package toolkit_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// TestDynamicOutputs: a tool whose output type is any (or json.RawMessage,
// or Part) gives the model what it returned, by its dynamic type: nothing
// for nil, an empty string or empty bytes; text; parts; bytes as binary;
// JSON as a JSON part. What it cannot give (invalid JSON, a value JSON
// cannot encode) fails the call with an error that says so, never a panic.
func TestDynamicOutputs(t *testing.T) {
	type point struct {
		X int `json:"x"`
	}
	outputs := map[string]any{
		"nil": nil, "empty": "", "text": "hi", "parts": []events.Part{events.Text("a"), events.Text("b")},
		"part": events.Text("one"), "nobytes": []byte{}, "bytes": []byte("raw"), "norawjson": json.RawMessage(nil),
		"rawjson": json.RawMessage(`{"a":1}`), "badjson": json.RawMessage(`{bad`), "nilptr": (*point)(nil),
		"value": point{3}, "func": func() {},
	}
	tk := testutil.Kit(t)
	var calls []toolkit.Call
	for name, out := range outputs {
		testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: name}, func(context.Context, none) (any, error) { return out, nil }))
		calls = append(calls, testutil.Call(name, name, `{}`))
	}
	testutil.Add(t, tk,
		testutil.Tool(t, toolkit.Spec{Name: "typedpart"}, func(context.Context, none) (events.Part, error) { return events.Text("typed part"), nil }),
		testutil.Tool(t, toolkit.Spec{Name: "typedraw"}, func(context.Context, none) (json.RawMessage, error) { return json.RawMessage(`[1,2]`), nil }),
		testutil.Tool(t, toolkit.Spec{Name: "typedbadraw"}, func(context.Context, none) (json.RawMessage, error) { return json.RawMessage(`[1,`), nil }),
		testutil.Tool(t, toolkit.Spec{Name: "typednobytes"}, func(context.Context, none) ([]byte, error) { return nil, nil }),
	)
	calls = append(calls, testutil.Call("typedpart", "typedpart", `{}`), testutil.Call("typedraw", "typedraw", `{}`),
		testutil.Call("typedbadraw", "typedbadraw", `{}`), testutil.Call("typednobytes", "typednobytes", `{}`))
	rs := testutil.Session(t, tk, "s").Run(context.Background(), calls)
	want := map[string]string{
		"nil": "", "empty": "", "text": "hi", "parts": "ab", "part": "one", "nobytes": "", "bytes": "[binary application/octet-stream, 3 bytes]",
		"norawjson": "", "rawjson": `{"a":1}`, "nilptr": "", "value": `{"x":3}`, "typedpart": "typed part", "typedraw": "[1,2]",
		"typednobytes": "",
	}
	failing := map[string]string{"badjson": "tool returned invalid JSON", "func": "encoding the tool's output as JSON", "typedbadraw": "tool returned invalid JSON"}
	for _, r := range rs {
		id := r.Call.ID
		if msg, ok := failing[id]; ok {
			if r.State != events.StateError || !strings.Contains(r.Text(), msg) {
				t.Errorf("%s: %s %q, want an error saying %q", id, r.State, r.Text(), msg)
			}
			continue
		}
		if r.State != events.StateSuccess || r.Text() != want[id] {
			t.Errorf("%s: %s %q, want %q", id, r.State, r.Text(), want[id])
		}
	}
	if r := testutil.ResultByID(rs, "rawjson"); len(r.Content) != 1 || r.Content[0].Type != events.PartJSON {
		t.Errorf("rawjson: %+v", r.Content)
	}
}

// TestToolConstructionErrors: constructors refuse what cannot make a tool
// with an error naming the tool and the problem (MustTool panics with it),
// and Register refuses a nil tool.
func TestToolConstructionErrors(t *testing.T) {
	if _, err := toolkit.NewTool[none, string](toolkit.Spec{Name: "nofn"}, nil); err == nil || !strings.Contains(err.Error(), `tool "nofn": nil function`) {
		t.Errorf("a nil function: %v", err)
	}
	if _, err := toolkit.NewTool(toolkit.Spec{Name: "notobject"}, func(context.Context, int) (string, error) { return "", nil }); err == nil || !strings.Contains(err.Error(), `tool "notobject"`) {
		t.Errorf("an input that is not an object: %v", err)
	}
	type withChan struct{ C chan int }
	if _, err := toolkit.NewTool(toolkit.Spec{Name: "chan"}, func(context.Context, none) (withChan, error) { return withChan{}, nil }); err == nil || !strings.Contains(err.Error(), `tool "chan": output type`) {
		t.Errorf("an output type with no schema: %v", err)
	}
	func() {
		defer func() {
			if v := recover(); v == nil || !strings.Contains(v.(error).Error(), "nil function") {
				t.Errorf("MustTool recovered %v", v)
			}
		}()
		toolkit.MustTool[none, string](toolkit.Spec{Name: "nofn"}, nil)
	}()
	for _, bad := range []string{`{bad`, `{"type":"string"}`, `{"type":"object","properties":{"a":{"type":"nosuchtype"}}}`} {
		if _, err := toolkit.NewExternalTool(toolkit.Spec{Name: "ext", OutputSchema: json.RawMessage(bad)}, []byte(`{"type":"object"}`)); err == nil || !strings.Contains(err.Error(), `tool "ext": output schema`) {
			t.Errorf("output schema %s: %v", bad, err)
		}
	}
	tk := testutil.Kit(t)
	if err := tk.Add(nil); err == nil || !strings.Contains(err.Error(), "nil tool") {
		t.Errorf("Register(nil): %v", err)
	}
	raw, err := toolkit.NewRawTool(toolkit.Spec{Name: "raw", Presets: map[string]any{"a": 1}}, []byte(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}}}`),
		func(context.Context, json.RawMessage) ([]events.Part, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Variant("x", []byte(`{"type":"object"}`)); err == nil || !strings.Contains(err.Error(), "presets") {
		t.Errorf("a variant of a tool with presets: %v", err)
	}
}

// TestPlaceholderPrepareArgs: an interceptor that asks an unknown call's
// placeholder to prepare arguments gets an *UnknownToolError, not a panic.
func TestPlaceholderPrepareArgs(t *testing.T) {
	tk := testutil.Kit(t)
	got := make(chan error, 1)
	if err := tk.Use(toolkit.Interceptor{Name: "look", Unknown: true, Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		_, err := inv.Tool.PrepareArgs(inv.Call.Args)
		got <- err
		return next(ctx, inv)
	}}); err != nil {
		t.Fatal(err)
	}
	r := testutil.Run(t, tk, "s", testutil.Call("1", "ghost", `{}`))[0]
	if err := <-got; !isErr[*toolkit.UnknownToolError](err) {
		t.Errorf("PrepareArgs on the placeholder: %v", err)
	}
	if !isErr[*toolkit.UnknownToolError](r.Err) {
		t.Errorf("%s %v", r.State, r.Err)
	}
}
