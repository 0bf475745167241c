package schema

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

const prepareSchema = `{
	"type": "object",
	"properties": {
		"a":    {"type": "string"},
		"b":    {"type": "string"},
		"c":    {"type": ["null", "string"]},
		"any":  {},
		"d":    {"type": "integer", "default": 5},
		"e":    {"type": "string", "default": "dflt"},
		"req":  {"type": "integer", "default": 7},
		"opts": {
			"type": "object",
			"properties": {
				"mode": {"enum": ["fast", "slow"], "default": "fast"},
				"x":    {"type": "string"}
			}
		},
		"list": {
			"type": "array",
			"items": {"type": "object", "properties": {"n": {"type": "integer"}, "k": {"default": [1]}}}
		},
		"obj": {"type": "object", "default": {"inner": {}}, "properties": {"inner": {"properties": {"z": {"default": true}}}}}
	},
	"required": ["b", "req"]
}`

func TestPrepare(t *testing.T) {
	v := mustCompile(t, prepareSchema)
	if !v.Fast() {
		t.Fatal("not fast")
	}
	args := mustDecode(t, `{"a": null, "b": null, "c": null, "any": null, "e": null, "opts": {"x": null}, "list": [{"n": null}, 3]}`).(map[string]any)
	if !v.Prepare(args) {
		t.Fatal("Prepare reported no change")
	}
	want := mustDecode(t, `{
		"b": null, "c": null, "any": null, "d": 5, "e": "dflt",
		"opts": {"mode": "fast"},
		"list": [{"k": [1]}, 3],
		"obj": {"inner": {"z": true}}
	}`)
	if !reflect.DeepEqual(args, want) {
		got, _ := json.Marshal(args)
		t.Errorf("after Prepare:\n got %s\nwant %s", got, mustMarshal(t, want))
	}
	// Required properties are neither pruned nor defaulted, so they still fail.
	got := problemStrings(v.Validate(args))
	wantProblems := []string{"b: must be a string, got null", "list[1]: must be an object, got number 3", "req: is required"}
	if !slices.Equal(got, wantProblems) {
		t.Errorf("Validate after Prepare = %q, want %q", got, wantProblems)
	}
	if v.Prepare(args) {
		t.Error("second Prepare reported a change")
	}
}

func TestPrepareDefaultsAreCopies(t *testing.T) {
	v := mustCompile(t, prepareSchema)
	first := map[string]any{}
	v.Prepare(first)
	first["obj"].(map[string]any)["inner"].(map[string]any)["z"] = false
	second := map[string]any{}
	v.Prepare(second)
	if second["obj"].(map[string]any)["inner"].(map[string]any)["z"] != true {
		t.Error("a default was shared between calls")
	}
}

func TestPrepareNoChange(t *testing.T) {
	v := mustCompile(t, `{"properties":{"a":{"type":"string"},"b":{"type":["string","null"]}},"required":["a"]}`)
	args := map[string]any{"a": nil, "b": nil}
	if v.Prepare(args) || len(args) != 2 {
		t.Errorf("Prepare changed %v", args)
	}
	if v.Prepare(nil) {
		t.Error("Prepare(nil) reported a change")
	}
}

func TestPrepareNullDefault(t *testing.T) {
	// A null default is not put into a property that rejects null.
	v := mustCompile(t, `{"properties":{"a":{"type":"string","default":null},"b":{"default":null}}}`)
	args := map[string]any{"a": nil}
	if !v.Prepare(args) {
		t.Error("no change reported")
	}
	if _, ok := args["a"]; ok {
		t.Errorf("a was not pruned: %v", args)
	}
	if b, ok := args["b"]; !ok || b != nil {
		t.Errorf("b did not get its null default: %v", args)
	}
}

func TestPrepareFallback(t *testing.T) {
	v := mustCompile(t, `{
		"$defs": {"s": {"type": "string"}},
		"properties": {
			"a": {"type": "string"},
			"r": {"$ref": "#/$defs/s"},
			"d": {"$ref": "#/$defs/s", "default": "x"},
			"req": {"type": "string", "default": "y"},
			"n": {"type": ["null", "integer"]}
		},
		"required": ["req"]
	}`)
	if v.Fast() {
		t.Fatal("expected the fallback path")
	}
	args := map[string]any{"a": nil, "r": nil, "n": nil}
	if !v.Prepare(args) {
		t.Error("no change reported")
	}
	want := map[string]any{"r": nil, "n": nil, "d": "x"}
	if !reflect.DeepEqual(args, want) {
		t.Errorf("got %v, want %v", args, want)
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
