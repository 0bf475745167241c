package schema

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
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

// prepared runs the one pass over args with v's node and returns the
// prepared arguments as text and whether the pass found them valid.
func prepared(t testing.TB, v *Validator, args string) (string, bool) {
	t.Helper()
	s := pass{decoder: decoder{data: []byte(args)}}
	if s.top(v.prep, nil, reflect.Value{}) != nil {
		t.Fatalf("the pass refuses %s", args)
	}
	return string(applyEdits(s.data, s.edits, 0, len(s.data))), !s.invalid
}

// prepare runs Args.Prepare without a Go value.
func prepare(t testing.TB, v *Validator, args string) (string, []Problem) {
	t.Helper()
	a, err := v.Args(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, probs, err := a.Prepare([]byte(args), nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(p.Bytes()), probs
}

func TestPrepare(t *testing.T) {
	v := mustCompile(t, prepareSchema)
	if !v.Fast() {
		t.Fatal("not fast")
	}
	args := `{"a": null, "b": null, "c": null, "any": null, "e": null, "opts": {"x": null}, "list": [{"n": null}, 3]}`
	got, valid := prepared(t, v, args)
	want := `{"b": null, "c": null, "any": null, "opts": {"mode":"fast"}, "list": [{"k":[1]}, 3],"d":5,"e":"dflt","obj":{"inner":{"z":true}}}`
	if got != want || valid {
		t.Errorf("prepared:\n got %s (valid %v)\nwant %s", got, valid, want)
	}
	// Required properties are neither pruned nor defaulted, so they still fail.
	_, probs := prepare(t, v, args)
	wantProblems := []string{"b: must be a string, got null", "list[1]: must be an object, got number 3", "req: is required"}
	if got := problemStrings(probs); !slices.Equal(got, wantProblems) {
		t.Errorf("problems = %q, want %q", got, wantProblems)
	}
	// Prepared arguments prepare to themselves.
	fixed := strings.Replace(strings.Replace(want, `"b": null`, `"b":"x","req":1`, 1), ", 3]", "]", 1)
	if got, probs := prepare(t, v, fixed); got != fixed || probs != nil {
		t.Errorf("prepare(%s) = %s, %v", fixed, got, probs)
	}
}

func TestPrepareNoChange(t *testing.T) {
	v := mustCompile(t, `{"properties":{"a":{"type":"string"},"b":{"type":["string","null"]}},"required":["a"]}`)
	if got, valid := prepared(t, v, `{"a":null,"b":null}`); got != `{"a":null,"b":null}` || valid {
		t.Errorf("prepared %s, valid %v", got, valid)
	}
}

func TestPrepareNullDefault(t *testing.T) {
	// A null default is not put into a property that rejects null.
	v := mustCompile(t, `{"properties":{"a":{"type":"string","default":null},"b":{"default":null}}}`)
	if got, _ := prepare(t, v, `{"a":null}`); got != `{"b":null}` {
		t.Errorf("got %s", got)
	}
}

// TestPrepareMembers: members leave and come in with their commas right,
// whatever the spacing.
func TestPrepareMembers(t *testing.T) {
	v := mustCompile(t, `{"properties":{"a":{"type":"string"},"b":{"type":"string"},"k":{},"d":{"default":1},"n":{"type":"integer"}}}`)
	for in, want := range map[string]string{
		`{}`:                                   `{"d":1}`,
		`{ }`:                                  `{ "d":1}`,
		`{"a":null}`:                           `{"d":1}`,
		`{"a":null,"b":null}`:                  `{"d":1}`,
		`{"k":1,"a":null,"b":null}`:            `{"k":1,"d":1}`,
		`{"a":null,"k":1,"b":null}`:            `{"k":1,"d":1}`,
		` { "k" : 1 , "a" : null } `:           ` { "k" : 1   ,"d":1} `,
		`{"d":null,"a":null}`:                  `{"d":null}`,
		`{"n":2.0,"k":[1e2,{"x":-0.0}],"d":2}`: `{"n":2,"k":[100,{"x":0}],"d":2}`,
	} {
		got, _ := prepare(t, v, in)
		if got != want {
			t.Errorf("prepare(%s) = %s, want %s", in, got, want)
		}
		var x any
		if err := json.Unmarshal([]byte(got), &x); err != nil {
			t.Errorf("%s: %v", got, err)
		}
	}
}

// TestPrepareTwice: a key given twice counts once, the last time, as for
// encoding/json; the arguments are re-encoded so the handler sees that.
func TestPrepareTwice(t *testing.T) {
	v := mustCompile(t, `{"properties":{"a":{"type":"integer"},"b":{"default":1}},"required":["a"]}`)
	if got, probs := prepare(t, v, `{"a":"x","a":2}`); got != `{"a":2,"b":1}` || probs != nil {
		t.Errorf("got %s, %v", got, probs)
	}
	if _, probs := prepare(t, v, `{"a":2,"a":"x"}`); len(probs) != 1 || probs[0].String() != `a: must be an integer, got string "x"` {
		t.Errorf("got %v", probs)
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
	got, probs := prepare(t, v, `{"a":null,"r":null,"n":null,"req":"z"}`)
	if want := `{"r":null,"n":null,"req":"z","d":"x"}`; got != "" || len(probs) != 1 || !strings.Contains(probs[0].Message, "type") {
		t.Errorf("got %s %v, want problems about r (prepared: %s)", got, probs, want)
	}
	got, probs = prepare(t, v, `{"a":null,"n":null,"req":"z"}`)
	if want := `{"n":null,"req":"z","d":"x"}`; got != want || probs != nil {
		t.Errorf("got %s %v, want %s", got, probs, want)
	}
	var d any
	if err := json.Unmarshal([]byte(got), &d); err != nil || !reflect.DeepEqual(d, map[string]any{"n": nil, "req": "z", "d": "x"}) {
		t.Errorf("%v %v", d, err)
	}
}
