package toolkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

type scanIn struct {
	Path    string   `json:"path" jsonschema:"folder to scan"`
	Pattern string   `json:"pattern,omitempty" tool:"default=*"`
	Limit   int      `json:"limit,omitempty" tool:"minimum=1,maximum=1000"`
	Mode    string   `json:"mode,omitempty" tool:"enum=fast|thorough"`
	Exts    []string `json:"exts,omitempty"`
	Deep    *bool    `json:"deep,omitempty"`
}

// scanKit registers a scan tool that records what its handler received.
func scanKit(t *testing.T, spec toolkit.Spec) (*toolkit.Session, *atomic.Pointer[scanIn], *atomic.Int32) {
	tk := testutil.Kit(t)
	var got atomic.Pointer[scanIn]
	var calls atomic.Int32
	spec.Name = "scan"
	testutil.Add(t, tk, testutil.Tool(t, spec, func(ctx context.Context, in scanIn) (string, error) {
		calls.Add(1)
		got.Store(&in)
		return "scanned " + in.Path, nil
	}))
	return testutil.Session(t, tk, "s"), &got, &calls
}

func TestArgumentValidation(t *testing.T) {
	cases := []struct {
		name, args string
		want       []string // lines of the error; nil means valid
	}{
		{"valid", `{"path":"/tmp","limit":5,"mode":"fast","exts":["go"]}`, nil},
		{"empty args default to {} and fail on required", ``, []string{"path: is required"}},
		{"missing required", `{"limit":5}`, []string{"path: is required"}},
		{"wrong type", `{"path":3}`, []string{`path: must be a string, got number 3`}},
		{"extra field", `{"path":"/","colour":"red"}`, []string{"colour: is not an allowed property; allowed: path, pattern, limit, mode, exts, deep"}},
		{"enum", `{"path":"/","mode":"medium"}`, []string{`mode: must be one of "fast", "thorough"; got "medium"`}},
		{"minimum", `{"path":"/","limit":0}`, []string{"limit: must be >= 1, got 0"}},
		{"nested index", `{"path":"/","exts":["go",7]}`, []string{"exts[1]: must be a string, got number 7"}},
		{"several problems at once", `{"limit":"ten","x":1}`, []string{"limit: must be an integer, got string \"ten\"", "path: is required", "x: is not an allowed property"}},
		{"not an object", `[1,2]`, []string{"(root): must be a JSON object, got an array"}},
		{"malformed JSON", `{"path":`, []string{"arguments are not valid JSON"}},
		{"double-encoded object is unwrapped", `"{\"path\":\"/tmp\"}"`, nil},
		{"a plain string is not an object", `"hello"`, []string{"(root): must be a JSON object, got a string"}},
		{"optional nulls are pruned", `{"path":"/","limit":null,"mode":null,"deep":null}`, nil},
		{"required null is not pruned", `{"path":null}`, []string{"path: must be a string, got null"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _, calls := scanKit(t, toolkit.Spec{})
			r := s.Run(context.Background(), []toolkit.Call{testutil.Call("1", "scan", tc.args)})[0]
			if tc.want == nil {
				if r.State != events.StateSuccess {
					t.Fatalf("%s: %s", r.State, r.Text())
				}
				return
			}
			if calls.Load() != 0 {
				t.Fatal("handler ran on invalid arguments")
			}
			var ae *toolkit.ArgumentError
			if r.State != events.StateError || !errors.As(r.Err, &ae) || !isErr[*toolkit.ArgumentError](r.Err) {
				t.Fatalf("%s %v", r.State, r.Err)
			}
			if !strings.HasPrefix(r.Text(), `Error: invalid arguments for tool "scan"`) {
				t.Fatalf("message %q", r.Text())
			}
			for _, line := range tc.want {
				if !strings.Contains(r.Text(), line) {
					t.Errorf("message lacks %q:\n%s", line, r.Text())
				}
			}
		})
	}
}

func TestDefaultsReachHandler(t *testing.T) {
	s, got, _ := scanKit(t, toolkit.Spec{})
	r := s.Run(context.Background(), []toolkit.Call{testutil.Call("1", "scan", `{"path":"/src","limit":null}`)})[0]
	if r.State != events.StateSuccess {
		t.Fatal(r.Text())
	}
	if in := got.Load(); in.Pattern != "*" || in.Limit != 0 || in.Path != "/src" {
		t.Fatalf("handler got %+v", *in)
	}
}

func TestPresets(t *testing.T) {
	s, got, _ := scanKit(t, toolkit.Spec{Presets: map[string]any{"path": "/workspace", "limit": 50}})
	defs, err := s.Definitions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	def := defs[0]
	var params struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	if err := json.Unmarshal(def.Parameters, &params); err != nil {
		t.Fatal(err)
	}
	if _, ok := params.Properties["path"]; ok || len(params.Required) != 0 {
		t.Fatalf("preset visible to the model: %s", def.Parameters)
	}
	if _, ok := params.Properties["limit"]; ok {
		t.Fatalf("preset visible to the model: %s", def.Parameters)
	}
	// The model tries to override the presets; code wins.
	r := s.Run(context.Background(), []toolkit.Call{testutil.Call("1", "scan", `{"path":"/etc","limit":999,"mode":"fast"}`)})[0]
	if r.State != events.StateSuccess {
		t.Fatal(r.Text())
	}
	if in := got.Load(); in.Path != "/workspace" || in.Limit != 50 || in.Mode != "fast" {
		t.Fatalf("handler got %+v", *in)
	}
	// Presets satisfy required properties the model no longer sees.
	if r := s.Run(context.Background(), []toolkit.Call{testutil.Call("2", "scan", `{}`)})[0]; r.State != events.StateSuccess {
		t.Fatal(r.Text())
	}
}

func TestPresetErrors(t *testing.T) {
	fn := func(ctx context.Context, in scanIn) (string, error) { return "", nil }
	if _, err := toolkit.NewTool(toolkit.Spec{Name: "x", Presets: map[string]any{"nope": 1}}, fn); err == nil || !strings.Contains(err.Error(), `preset "nope" is not a property`) {
		t.Fatalf("unknown preset: %v", err)
	}
	if _, err := toolkit.NewTool(toolkit.Spec{Name: "x", Presets: map[string]any{"limit": "many"}}, fn); err == nil || !strings.Contains(err.Error(), `preset "limit"`) {
		t.Fatalf("mistyped preset: %v", err)
	}
}

func TestRawTool(t *testing.T) {
	tk := testutil.Kit(t)
	var got atomic.Value
	tool, err := toolkit.NewRawTool(toolkit.Spec{Name: "raw"}, []byte(`{
		"type":"object",
		"properties":{"n":{"type":"integer","maximum":10},"tag":{"type":"string","default":"none"}},
		"required":["n"]}`),
		func(ctx context.Context, args json.RawMessage) ([]events.Part, error) {
			got.Store(string(args))
			return nil, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Add(t, tk, tool)
	s := testutil.Session(t, tk, "s")
	rs := s.Run(context.Background(), []toolkit.Call{testutil.Call("1", "raw", `{"n": 12345678901234567}`), testutil.Call("2", "raw", `{"n":3}`)})
	if !strings.Contains(rs[0].Text(), "n: must be <= 10") {
		t.Fatalf("%q", rs[0].Text())
	}
	if rs[1].State != events.StateSuccess || got.Load() != `{"n":3,"tag":"none"}` {
		t.Fatalf("%s, handler got %v", rs[1].State, got.Load())
	}
	// Big integers survive when arguments are rewritten; the rewrite keeps
	// the model's text and order and adds the defaults after it.
	tool2, _ := toolkit.NewRawTool(toolkit.Spec{Name: "big"}, []byte(`{"type":"object","properties":{"id":{"type":"integer"},"d":{"type":"string","default":"x"}}}`),
		func(ctx context.Context, args json.RawMessage) ([]events.Part, error) {
			got.Store(string(args))
			return nil, nil
		})
	testutil.Add(t, tk, tool2)
	s.Run(context.Background(), []toolkit.Call{testutil.Call("3", "big", `{"id":9007199254740993}`)})
	if got.Load() != `{"id":9007199254740993,"d":"x"}` {
		t.Fatalf("handler got %v", got.Load())
	}
}

func TestRawToolSchemaErrors(t *testing.T) {
	h := func(ctx context.Context, args json.RawMessage) ([]events.Part, error) { return nil, nil }
	for _, tc := range []struct{ schema, want string }{
		{`{"type":"string"}`, `must have "type": "object"`},
		{`{"type":"object","properties":{"a":{"type":"nonsense"}}}`, "input schema"},
		{`not json`, "input schema"},
	} {
		if _, err := toolkit.NewRawTool(toolkit.Spec{Name: "r"}, []byte(tc.schema), h); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.schema, err)
		}
	}
	if _, err := toolkit.NewRawTool(toolkit.Spec{Name: "r"}, []byte(`{"type":"object"}`), nil); err == nil {
		t.Error("nil handler accepted")
	}
}

// TestTypedDecodeFailure: a value the schema accepts but Go cannot decode
// (too large for int8) is an argument error, not a panic.
func TestTypedDecodeFailure(t *testing.T) {
	type in struct {
		N uint8 `json:"n"`
	}
	tk := testutil.Kit(t)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "small"}, func(ctx context.Context, in in) (string, error) { return "", nil }))
	r := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("1", "small", `{"n":300}`)})[0]
	if r.State != events.StateError || !isErr[*toolkit.ArgumentError](r.Err) {
		t.Fatalf("%s %v", r.State, r.Err)
	}
}

// FuzzPreparedArgs: for every input the argument pass accepts, the
// canonical bytes (which interceptors see, and which PrepareArgs returns)
// decode with encoding/json to exactly the input the handler gets, presets
// and defaults included.
func FuzzPreparedArgs(f *testing.F) {
	for _, s := range []string{
		`{"path":"/tmp","limit":5,"mode":"fast","exts":["go"]}`,
		`{"path":"/","limit":null,"mode":null,"deep":null}`,
		`{"path":"/etc","limit":2.0,"pattern":null,"deep":true,"exts":[]}`,
		`"{\"path\":\"/tmp\",\"limit\":1e1}"`, ``, `{}`, `{"limit":3,"limit":4}`, `{"path":"x","Path":"y"}`,
	} {
		f.Add(s)
	}
	typed := func(spec toolkit.Spec) *toolkit.Tool {
		return testutil.Tool(f, spec, func(ctx context.Context, in scanIn) (string, error) { return "", nil })
	}
	tools := []*toolkit.Tool{typed(toolkit.Spec{Name: "scan"}), typed(toolkit.Spec{Name: "preset", Presets: map[string]any{"path": "/workspace", "deep": false}})}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, tool := range tools {
			canonical, in, err := toolkit.PreparedForTest(tool, json.RawMessage(raw))
			viaAPI, errAPI := tool.PrepareArgs(json.RawMessage(raw))
			if (err == nil) != (errAPI == nil) || string(canonical) != string(viaAPI) {
				t.Fatalf("%s: PrepareArgs gives %s, %v; the engine's pass %s, %v", raw, viaAPI, errAPI, canonical, err)
			}
			if err != nil {
				var ae *toolkit.ArgumentError
				if !errors.As(err, &ae) {
					t.Fatalf("%s: error %T %v", raw, err, err)
				}
				continue
			}
			var want scanIn
			if err := json.Unmarshal(canonical, &want); err != nil {
				t.Fatalf("%s: canonical %s does not decode: %v", raw, canonical, err)
			}
			if got := *in.(*scanIn); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: canonical %s\n handler gets %+v\n decodes to   %+v", raw, canonical, got, want)
			}
		}
	})
}

// TestInvokeDispatch: typed tools get the value the pass filled, raw tools
// the canonical bytes.
func TestInvokeDispatch(t *testing.T) {
	var got scanIn
	typed := testutil.Tool(t, toolkit.Spec{Name: "typed", Presets: map[string]any{"limit": 7}}, func(ctx context.Context, in scanIn) (string, error) {
		got = in
		return "ok", nil
	})
	if parts, err := toolkit.InvokeForTest(context.Background(), typed, json.RawMessage(`{"path":"/a","limit":1}`)); err != nil || len(parts) != 1 {
		t.Fatal(parts, err)
	}
	if want := (scanIn{Path: "/a", Pattern: "*", Limit: 7}); !reflect.DeepEqual(got, want) {
		t.Errorf("handler got %+v, want %+v", got, want)
	}
	var raw string
	rawTool, err := toolkit.NewRawTool(toolkit.Spec{Name: "raw"}, []byte(`{"type":"object","properties":{"a":{"type":"integer","default":1}}}`),
		func(ctx context.Context, args json.RawMessage) ([]events.Part, error) {
			raw = string(args)
			return nil, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := toolkit.InvokeForTest(context.Background(), rawTool, json.RawMessage(`{ }`)); err != nil || raw != `{ "a":1}` {
		t.Errorf("raw handler got %q, %v", raw, err)
	}
}

// TestRawToolInvalidDefault: a default that breaks the schema is refused at
// registration, not on every call that leaves the property out (issue 10
// item 10).
func TestRawToolInvalidDefault(t *testing.T) {
	h := func(ctx context.Context, args json.RawMessage) ([]events.Part, error) { return nil, nil }
	for schemaJSON, want := range map[string]string{
		`{"type":"object","properties":{"n":{"type":"integer","maximum":10,"default":50}}}`:                           "invalid default: n: must be <= 10, got 50",
		`{"type":"object","properties":{"o":{"type":"object","properties":{"k":{"enum":["a"],"default":"b"}}}}}`:      `invalid default: o.k: must be one of "a"; got "b"`,
		`{"type":"object","$defs":{"n":{"type":"integer"}},"properties":{"r":{"$ref":"#/$defs/n","default":"many"}}}`: "invalid default: r",
	} {
		_, err := toolkit.NewRawTool(toolkit.Spec{Name: "r"}, []byte(schemaJSON), h)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `tool "r"`) {
			t.Errorf("%s: %v, want an error containing %q", schemaJSON, err, want)
		}
	}
}
