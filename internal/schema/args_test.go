package schema

import (
	"cmp"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// fallbackOf is v forced onto the reference path.
func fallbackOf(v *Validator) *Validator {
	fb := *v
	fb.root = nil
	return &fb
}

// TestBothPathsSeeNumbers: the compiled path and the reference path
// (jsonschema-go) judge every case alike; a number too large for a float64
// is refused by both rather than read as a string by one (issue 10 item 5).
func TestBothPathsSeeNumbers(t *testing.T) {
	cases := []struct{ schema, instance string }{
		{`{"properties":{"s":{"type":"string"}}}`, `{"s":1e400}`},
		{`{"properties":{"s":{"type":"string"}}}`, `{"s":-1e400}`},
		{`{"properties":{"s":{"type":"number"}}}`, `{"s":1e400}`},
		{`{"properties":{"s":{"type":"integer"}}}`, `{"s":1e400}`},
		{`{"properties":{"s":{"maximum":10}}}`, `{"s":1e400}`},
		{`{"properties":{"s":{"minimum":1}}}`, `{"s":1e400}`},
		{`{"properties":{"s":{}}}`, `{"s":[1e400]}`},
		{`{"properties":{"s":{"type":"number"}}}`, `{"s":1e-400}`},
		{`{"properties":{"s":{"type":"integer"}}}`, `{"s":1e308}`},
		{`{"properties":{"s":{"type":"string"}}}`, `{"s":"1e400"}`},
		{`{"properties":{"s":{"type":"string"}},"additionalProperties":false}`, `{"s":1e400}`}, // closed: check meets every number
		{`{"items":{"type":"integer"}}`, `[1,1e400]`},
		{`{"properties":{"s":{"type":"string"}},"additionalProperties":false}`, `{"t":1e400}`},
	}
	for _, tc := range validateCases {
		cases = append(cases, struct{ schema, instance string }{tc.schema, tc.instance})
	}
	for _, tc := range cases {
		v := mustCompile(t, tc.schema)
		inst := mustDecode(t, tc.instance)
		compiled, reference := v.Validate(inst), fallbackOf(v).Validate(inst)
		if (compiled == nil) != (reference == nil) {
			t.Errorf("%s on %s: compiled %v, reference %v", tc.instance, tc.schema, compiled, reference)
		}
	}
	got := problemStrings(mustCompile(t, `{"properties":{"s":{"type":"string"}}}`).Validate(mustDecode(t, `{"a":[1,1e400],"s":-1e999}`)))
	if want := []string{"a[1]: must fit in a 64-bit float, got 1e400", "s: must fit in a 64-bit float, got -1e999"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestInvalidDefaults: a default that would make every call without its
// property fail is refused when the schema is compiled, wherever Prepare
// adds defaults; defaults Prepare never adds are left alone (issue 10 item
// 10).
func TestInvalidDefaults(t *testing.T) {
	for _, tc := range []struct{ schema, err string }{
		{`{"type":"object","properties":{"n":{"type":"integer","maximum":10,"default":50}}}`, "invalid default: n: must be <= 10, got 50"},
		{`{"properties":{"o":{"properties":{"m":{"enum":["a"],"default":"b"}}}}}`, `invalid default: o.m: must be one of "a"; got "b"`},
		{`{"properties":{"l":{"items":{"properties":{"k":{"type":"string","default":1}}}}}}`, "invalid default: l[*].k: must be a string, got number 1"},
		{`{"properties":{"t":{"prefixItems":[{"properties":{"k":{"type":"string","default":1}}}]}}}`, "invalid default: t[0].k"},
		{`{"additionalProperties":{"properties":{"k":{"type":"string","default":1}}}}`, "invalid default: [*].k"},
		{`{"properties":{"o":{"default":{"a":"x"},"properties":{"a":{"type":"integer"}}}}}`, `invalid default: o.a: must be an integer, got string "x"`},
		{`{"properties":{"o":{"default":{},"required":["a"],"properties":{"a":{"type":"integer"}}}}}`, "invalid default: o.a: is required"},
		{`{"$defs":{"s":{"type":"string"}},"properties":{"r":{"$ref":"#/$defs/s","default":5}}}`, "invalid default: r:"},
	} {
		var s jsonschema.Schema
		if err := json.Unmarshal([]byte(tc.schema), &s); err != nil {
			t.Fatal(err)
		}
		if _, err := Compile(&s); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Compile(%s) = %v, want an error containing %q", tc.schema, err, tc.err)
		}
	}
	for _, ok := range []string{
		`{"properties":{"n":{"type":"integer","maximum":10,"default":50}},"required":["n"]}`, // never added
		`{"properties":{"s":{"type":"string","default":null}}}`,                              // never added
		`{"properties":{"o":{"default":{"a":1},"properties":{"a":{"type":"integer"},"b":{"default":2}}}}}`,
		`{"properties":{"n":{"allOf":[{"default":"x"}],"type":"integer"}}}`, // not where Prepare looks
		`{"$defs":{"s":{"type":"string"}},"properties":{"r":{"$ref":"#/$defs/s","default":"x"}}}`,
	} {
		mustCompile(t, ok)
	}
}

// refCanonical is the old canonicalIntegers: integral numbers written 2.0
// or 1e2 become integers, in place.
func refCanonical(v any) (any, bool) {
	changed := false
	switch x := v.(type) {
	case json.Number:
		if f, err := x.Float64(); err == nil && strings.ContainsAny(string(x), ".eE") && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return json.Number(strconv.FormatInt(int64(f), 10)), true
		}
	case map[string]any:
		for k, e := range x {
			if c, ok := refCanonical(e); ok {
				x[k], changed = c, true
			}
		}
	case []any:
		for i, e := range x {
			if c, ok := refCanonical(e); ok {
				x[i], changed = c, true
			}
		}
	}
	return v, changed
}

// checkPrepareMatchesTree compares Args.Prepare with the pipeline it
// replaced: decode to a tree, Prepare, Validate, canonical integers. The
// problems must be the same, word for word (jsonschema-go's single problem
// depends on map order, so only its presence on the reference path), and
// the prepared bytes must decode to the same tree.
func checkPrepareMatchesTree(t *testing.T, v *Validator, schemaJSON, instance []byte) {
	t.Helper()
	tree, err := Decode(instance)
	obj, isObj := tree.(map[string]any)
	if err != nil || !isObj {
		return
	}
	refPrepare(v, obj)
	want := v.Validate(obj)
	refCanonical(obj)
	a, err := v.Args(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, got, err := a.Prepare(instance, nil)
	if err != nil {
		t.Fatalf("Prepare(%s): %v", instance, err)
	}
	if v.root != nil && !slices.Equal(got, want) || (got == nil) != (want == nil) {
		t.Fatalf("schema %s, arguments %s:\n problems %q\n the tree pipeline %q", schemaJSON, instance, problemStrings(got), problemStrings(want))
	}
	if want != nil {
		return
	}
	if prepared, err := Decode(p.Bytes()); err != nil || !reflect.DeepEqual(prepared, any(obj)) {
		t.Fatalf("schema %s, arguments %s:\n prepared %s (%v)\n the tree pipeline %s", schemaJSON, instance, p.Bytes(), err, mustMarshal(t, obj))
	}
}

// FuzzPrepareMatchesTree holds the one pass to the decode, Prepare,
// Validate pipeline it replaced, on both validation paths.
func FuzzPrepareMatchesTree(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s.schema), []byte(s.instance))
	}
	for _, s := range []struct{ schema, instance string }{
		{prepareSchema, `{"a": null, "b": null, "c": null, "any": null, "e": null, "opts": {"x": null}, "list": [{"n": null}, 3]}`},
		{prepareSchema, `{"b":"x","req":1.0,"list":[{"k":null,"n":2e0}],"opts":{"mode":null}}`},
		{prepareSchema, `{"b":"x","req":1,"b":null,"obj":{"inner":[]},"obj":{}}`},
		{`{"properties":{"a":{"type":"string"},"b":{"default":[1.0]}},"additionalProperties":{"properties":{"c":{"default":2}}}}`, `{"x":{},"a":null,"y":{"c":null}}`},
		{`{"$defs":{"s":{"type":"string"}},"properties":{"r":{"$ref":"#/$defs/s"},"d":{"type":"integer","default":1}}}`, `{"r":null,"d":null,"x":2.0}`},
		{`{"properties":{"o":{"enum":[{"a":1}],"properties":{"a":{"default":1}}}}}`, `{"o":{}}`},
		{`{"properties":{"u":{"uniqueItems":true,"items":{"properties":{"a":{"default":1}}}}}}`, `{"u":[{},{"a":1}]}`},
	} {
		f.Add([]byte(s.schema), []byte(s.instance))
	}
	f.Fuzz(func(t *testing.T, schemaJSON, instance []byte) {
		var s jsonschema.Schema
		if json.Unmarshal(schemaJSON, &s) != nil {
			return
		}
		v, err := Compile(&s)
		if err != nil {
			return
		}
		checkPrepareMatchesTree(t, v, schemaJSON, instance)
		if v.Fast() {
			// Cross-check the preparation of the fallback path on the
			// compiled schema (both prune and add at the top level only
			// there, so compare with its own pipeline).
			fb := fallbackOf(v)
			if fb.prep, err = prepRoot(&s); err == nil {
				checkPrepareMatchesTree(t, fb, schemaJSON, instance)
			}
		}
	})
}

// contractIn is a typed tool's input with defaults, nesting, pointers,
// maps, slices and the types the pass leaves to encoding/json.
type contractIn struct {
	Path    string            `json:"path"`
	Pattern string            `json:"pattern,omitempty" tool:"default=*"`
	Limit   int               `json:"limit,omitempty" tool:"minimum=1,default=10"`
	Ratio   float32           `json:"ratio,omitempty"`
	Exts    []string          `json:"exts,omitempty" tool:"enum=go|md|txt"`
	Deep    *bool             `json:"deep,omitempty"`
	Opts    *contractOpts     `json:"opts,omitempty"`
	Tags    map[string]int    `json:"tags,omitempty"`
	Extra   any               `json:"extra,omitempty"`
	Raw     json.RawMessage   `json:"raw,omitempty"`
	Counts  [2]uint8          `json:"counts,omitempty"`
	ByName  map[string]string `json:"by_name,omitempty" tool:"default={\"a\":\"b\"}"`
	Numbers []json.Number     `json:"numbers,omitempty"`
	List    []contractOpts    `json:"list,omitempty"`
	Small   uint8             `json:"small,omitempty" tool:"maximum=200"`
	Score   *float64          `json:"score,omitempty"`
	Flags   []*bool           `json:"flags,omitempty"`
	Grid    [][]int16         `json:"grid,omitempty"`
}

type contractOpts struct {
	Mode  string   `json:"mode,omitempty" tool:"enum=fast|slow,default=fast"`
	Depth int64    `json:"depth,omitempty"`
	Items []string `json:"items,omitempty"`
}

// FuzzArgsContract: for every input Prepare accepts, json.Unmarshal of the
// prepared bytes into the input type gives exactly the value the pass
// filled, so what an interceptor sees is what the handler gets.
func FuzzArgsContract(f *testing.F) {
	for _, s := range []string{
		`{"path":"/tmp","pattern":"*.go","limit":10,"exts":["go","md"]}`,
		`{"path":"a","limit":2.0,"ratio":16777217.00000000001,"deep":true,"opts":{"depth":1e3,"items":["x"]}}`,
		`{"path":"a","opts":{"mode":null},"tags":{"k":3E0},"extra":{"n":[1.0,"x",null]},"raw":{"a": 2.0}}`,
		`{"path":"a","counts":[1,2,3],"by_name":null,"numbers":[1.5e2,2]}`,
		`{"path":"\u00e9\n","exts":[],"opts":null,"deep":null,"path":"b"}`,
		`"{\"path\":\"x\",\"limit\":3}"`, ``, `{}`, `{"path":"a","limit":300000000000000000000}`,
		`{"path":"a","list":[{"mode":"slow","items":["a","b","c","d","e"]},{}],"small":200,"score":-0.5,"flags":[true,null,false],"grid":[[1,-2],[],[70000]]}`,
		`{"path":"a","list":[{"depth":1},{"depth":2}],"list":[{"mode":"fast"}],"small":-1,"grid":null}`,
	} {
		f.Add([]byte(s))
	}
	s, err := For[contractIn]()
	if err != nil {
		f.Fatal(err)
	}
	v, err := Compile(s)
	if err != nil {
		f.Fatal(err)
	}
	a, err := v.Args(reflect.TypeFor[contractIn](), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got contractIn
		p, probs, err := a.Prepare(data, &got)
		if err != nil || probs != nil {
			return
		}
		var want contractIn
		if err := json.Unmarshal(p.Bytes(), &want); err != nil {
			t.Fatalf("prepared %s does not decode: %v", p.Bytes(), err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("from %s, prepared %s:\n filled    %+v\n unmarshal %+v", data, p.Bytes(), got, want)
		}
		if again, probs, err := a.Prepare(p.Bytes(), new(contractIn)); err != nil || probs != nil || string(again.Bytes()) != string(p.Bytes()) {
			t.Fatalf("prepared %s prepares to %s, %v, %v", p.Bytes(), again.Bytes(), probs, err)
		}
	})
}

// TestPrepareAllocs: {} into struct{} allocates nothing; a small typed
// input allocates its struct, one copy of its strings and its slice.
func TestPrepareAllocs(t *testing.T) {
	type small struct {
		Path    string   `json:"path"`
		Pattern string   `json:"pattern,omitempty"`
		Limit   int      `json:"limit,omitempty" tool:"minimum=1"`
		Exts    []string `json:"exts,omitempty" tool:"enum=go|md|txt"`
		Deep    *bool    `json:"deep,omitempty"`
	}
	empty := mustArgs(t, reflect.TypeFor[struct{}]())
	in, data := new(struct{}), []byte(`{}`)
	if n := testing.AllocsPerRun(100, func() {
		if _, probs, err := empty.Prepare(data, in); probs != nil || err != nil {
			t.Fatal(probs, err)
		}
	}); n != 0 {
		t.Errorf("{} into struct{}: %v allocations", n)
	}
	a := mustArgs(t, reflect.TypeFor[small]())
	data = []byte(`{"path":"/tmp","pattern":"*.go","limit":10,"exts":["go","md"]}`)
	if n := testing.AllocsPerRun(100, func() {
		if _, probs, err := a.Prepare(data, new(small)); probs != nil || err != nil {
			t.Fatal(probs, err)
		}
	}); n > 3 {
		t.Errorf("small input: %v allocations, want at most 3", n)
	}
	// With a default added: the struct, the copy of the input, the edit.
	d := mustArgs(t, reflect.TypeFor[contractOpts]())
	data = []byte(`{"depth":5}`)
	if n := testing.AllocsPerRun(100, func() {
		if p, probs, err := d.Prepare(data, new(contractOpts)); probs != nil || err != nil || len(p.edits) != 1 {
			t.Fatal(probs, err)
		}
	}); n > 2 {
		t.Errorf("input with a default: %v allocations, want at most 2", n)
	}
}

// mustArgs binds the schema of typ (benchArgs' for nil) to typ.
func mustArgs(t testing.TB, typ reflect.Type) *Args {
	t.Helper()
	s, err := ForType(cmp.Or(typ, reflect.TypeFor[benchArgs]()))
	if err != nil {
		t.Fatal(err)
	}
	v, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	a, err := v.Args(typ, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustMarshal(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLongKeyShortProblem: a key of a megabyte, unknown or of a map, is
// named by its start in the problem the model reads, not whole.
func TestLongKeyShortProblem(t *testing.T) {
	a := mustArgs(t, nil)
	key := strings.Repeat("k", 1<<20)
	for _, data := range []string{
		`{"query":"q","` + key + `":1}`,  // an unknown property
		`{"query":"q","` + key + `é":1}`, // not an identifier either
	} {
		_, probs, err := a.Prepare([]byte(data), nil)
		if err != nil || len(probs) == 0 {
			t.Fatalf("problems %v, err %v", probs, err)
		}
		named := false
		for _, p := range probs {
			s := p.String()
			if len(s) > 1000 {
				t.Fatalf("a problem of %d bytes: %.200q", len(s), s)
			}
			named = named || strings.Contains(s, "kkkk")
		}
		if !named {
			t.Fatalf("no problem names the key: %v", probs)
		}
	}
}
