package schema

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

type inner struct {
	Mode  string `json:"mode,omitempty" tool:"enum=fast|slow,default=fast"`
	Level int    `json:"level" tool:"minimum=0,maximum=9"`
}

type tagged struct {
	Name     string            `json:"name" tool:"minLength=1,maxLength=20" jsonschema:"the name"`
	Kind     string            `json:"kind,omitempty" tool:"enum=a|b c|d"`
	Count    int               `json:"count,omitempty" tool:"enum=1|2|3"`
	Ratio    float64           `json:"ratio,omitempty" tool:"exclusiveMinimum=0,exclusiveMaximum=1"`
	On       bool              `json:"on,omitempty" tool:"enum=true"`
	Tags     []string          `json:"tags,omitempty" tool:"enum=x|y,minItems=1,maxItems=2,uniqueItems"`
	Ptr      *string           `json:"ptr,omitempty" tool:"enum=p|q"`
	When     time.Time         `json:"when,omitzero" tool:"format=date-time"`
	Email    string            `json:"email,omitempty" tool:"format=email,pattern=^[^@,]+@[^@]+$"`
	Forced   string            `json:"forced,omitempty" tool:"required"`
	Loose    string            `json:"loose" tool:"optional"`
	Dflt     int               `json:"dflt,omitempty" tool:"default=3,minimum=1"`
	DStr     string            `json:"dstr,omitempty" tool:"default=hello world"`
	DList    []int             `json:"dlist,omitempty" tool:"default=[1,2]"`
	Inner    inner             `json:"inner"`
	InnerPtr *inner            `json:"innerPtr,omitempty"`
	Inners   []inner           `json:"inners,omitempty"`
	ByName   map[string]inner  `json:"byName,omitempty"`
	Untyped  any               `json:"untyped,omitempty" tool:"enum=1|two"`
	Nums     []float64         `json:"nums,omitempty" tool:"minimum=0"`
	Skipped  string            `json:"-" tool:"nonsense"`
	unexp    string            // unexported: ignored
	Extra    map[string]string `json:"extra,omitempty"`
}

func schemaJSON(t *testing.T, s *jsonschema.Schema) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestForTags(t *testing.T) {
	s, err := For[tagged]()
	if err != nil {
		t.Fatal(err)
	}
	p := s.Properties
	f := func(x float64) *float64 { return &x }
	i := func(x int) *int { return &x }
	checks := []struct {
		name      string
		got, want any
	}{
		{"name minLength", p["name"].MinLength, i(1)},
		{"name maxLength", p["name"].MaxLength, i(20)},
		{"name description", p["name"].Description, "the name"},
		{"kind enum", p["kind"].Enum, []any{"a", "b c", "d"}},
		{"count enum", p["count"].Enum, []any{1.0, 2.0, 3.0}},
		{"ratio exclusiveMinimum", p["ratio"].ExclusiveMinimum, f(0)},
		{"ratio exclusiveMaximum", p["ratio"].ExclusiveMaximum, f(1)},
		{"on enum", p["on"].Enum, []any{true}},
		{"tags items enum", p["tags"].Items.Enum, []any{"x", "y"}},
		{"tags no enum on array", p["tags"].Enum, []any(nil)},
		{"tags minItems", p["tags"].MinItems, i(1)},
		{"tags maxItems", p["tags"].MaxItems, i(2)},
		{"tags uniqueItems", p["tags"].UniqueItems, true},
		{"ptr enum keeps null", p["ptr"].Enum, []any{"p", "q", nil}},
		{"when format", p["when"].Format, "date-time"},
		{"email format", p["email"].Format, "email"},
		{"email pattern with comma", p["email"].Pattern, "^[^@,]+@[^@]+$"},
		{"dflt default", string(p["dflt"].Default), "3"},
		{"dflt minimum", p["dflt"].Minimum, f(1)},
		{"dstr default verbatim", string(p["dstr"].Default), `"hello world"`},
		{"dlist default", string(p["dlist"].Default), "[1,2]"},
		{"inner mode enum", p["inner"].Properties["mode"].Enum, []any{"fast", "slow"}},
		{"inner mode default", string(p["inner"].Properties["mode"].Default), `"fast"`},
		{"inner level maximum", p["inner"].Properties["level"].Maximum, f(9)},
		{"innerPtr level minimum", p["innerPtr"].Properties["level"].Minimum, f(0)},
		{"inners items mode enum", p["inners"].Items.Properties["mode"].Enum, []any{"fast", "slow"}},
		{"byName values level max", p["byName"].AdditionalProperties.Properties["level"].Maximum, f(9)},
		{"untyped enum", p["untyped"].Enum, []any{1.0, "two"}},
		{"nums items minimum", p["nums"].Items.Minimum, f(0)},
		{"required", s.Required, []string{"name", "forced", "inner"}},
		{"inner required", p["inner"].Required, []string{"level"}},
		{"property order", s.PropertyOrder[:4], []string{"name", "kind", "count", "ratio"}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.name, deref(c.got), deref(c.want))
		}
	}
	if _, ok := p["Skipped"]; ok {
		t.Error("json:\"-\" field has a property")
	}
}

func deref(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && !rv.IsNil() {
		return rv.Elem().Interface()
	}
	return v
}

func TestForSchemaRoundTrips(t *testing.T) {
	s, err := For[tagged]()
	if err != nil {
		t.Fatal(err)
	}
	data := schemaJSON(t, s)
	var back jsonschema.Schema
	if err := json.Unmarshal([]byte(data), &back); err != nil {
		t.Fatalf("unmarshal %s: %v", data, err)
	}
	if _, err := back.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true}); err != nil {
		t.Fatalf("jsonschema-go rejects the schema: %v\n%s", err, data)
	}
	// The unmarshalled copy has lost PropertyOrder; the original keeps the
	// struct's field order in its problems.
	v, err := Compile(s)
	if err != nil || !v.Fast() {
		t.Fatalf("Compile: %v (fast=%v)", err, v != nil && v.Fast())
	}
	vBack, err := Compile(&back)
	if err != nil || !vBack.Fast() {
		t.Fatalf("Compile round-tripped: %v (fast=%v)", err, vBack != nil && vBack.Fast())
	}
	good := `{"name":"n","forced":"f","inner":{"level":1},"tags":["x"],"ptr":null,"count":2,"untyped":"two","email":"a@b"}`
	bad := `{"name":"","kind":"e","inner":{"level":10,"mode":"x"},"tags":["x","x","z"],"ptr":"r","ratio":1,"email":"a,b@c"}`
	for _, v := range []*Validator{v, vBack} {
		if p := v.Validate(mustDecode(t, good)); p != nil {
			t.Errorf("valid arguments rejected: %v", p)
		}
		if !referenceValid(t, v, good) || referenceValid(t, v, bad) {
			t.Error("jsonschema-go disagrees")
		}
	}
	if n := len(vBack.Validate(mustDecode(t, bad))); n != 11 {
		t.Errorf("round-tripped schema found %d problems, want 11", n)
	}
	got := problemStrings(v.Validate(mustDecode(t, bad)))
	want := []string{
		`name: must be at least 1 character long, got 0`,
		`kind: must be one of "a", "b c", "d"; got "e"`,
		`ratio: must be < 1, got 1`,
		`tags: must have at most 2 items, got 3`,
		`tags: items must be unique; items 0 and 1 are equal`,
		`tags[2]: must be one of "x", "y"; got "z"`,
		`ptr: must be one of "p", "q", null; got "r"`,
		`email: must match the pattern ^[^@,]+@[^@]+$`,
		`forced: is required`,
		`inner.mode: must be one of "fast", "slow"; got "x"`,
		`inner.level: must be <= 9, got 10`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n got %q\nwant %q", got, want)
	}
}

type requiredRules struct {
	Plain     string  `json:"plain"`
	OmitEmpty string  `json:"omitEmpty,omitempty"`
	OmitZero  int     `json:"omitZero,omitzero"`
	Ptr       *int    `json:"ptr"`
	ForceA    string  `json:"forceA,omitempty" tool:"required"`
	ForceB    int     `json:"forceB,omitzero" tool:"required"`
	OptA      string  `json:"optA" tool:"optional"`
	OptB      *string `json:"optB" tool:"optional"`
	NoTag     bool
}

func TestForRequired(t *testing.T) {
	s, err := For[*requiredRules]() // a pointer gives the same object schema
	if err != nil {
		t.Fatal(err)
	}
	if s.Type != "object" {
		t.Errorf("root type %q, want object", s.Type)
	}
	want := []string{"plain", "ptr", "forceA", "forceB", "NoTag"}
	if !slices.Equal(s.Required, want) {
		t.Errorf("required = %q, want %q", s.Required, want)
	}
}

func TestForMap(t *testing.T) {
	s, err := ForType(reflect.TypeFor[map[string]inner]())
	if err != nil {
		t.Fatal(err)
	}
	if s.Type != "object" || s.AdditionalProperties.Properties["mode"].Enum == nil {
		t.Errorf("map schema: %s", schemaJSON(t, s))
	}
}

func TestForErrors(t *testing.T) {
	type unknownKey struct {
		A string `tool:"minimun=1"`
	}
	type badNumber struct {
		A int `tool:"minimum=one"`
	}
	type badCount struct {
		A string `tool:"minLength=-1"`
	}
	type enumFailsPattern struct {
		A string `tool:"enum=abc|ABC,pattern=^[a-z]+$"`
	}
	type enumFailsMinimum struct {
		A int `tool:"minimum=2,enum=1|2"`
	}
	type enumNotInteger struct {
		A int `tool:"enum=1|1.5"`
	}
	type enumNotJSON struct {
		A int `tool:"enum=one"`
	}
	type defaultNotInEnum struct {
		A string `tool:"enum=x|y,default=z"`
	}
	type defaultWrongType struct {
		A bool `tool:"default=yes"`
	}
	type lengthOnInt struct {
		A int `tool:"maxLength=3"`
	}
	type minimumOnString struct {
		A string `tool:"minimum=3"`
	}
	type uniqueOnString struct {
		A string `tool:"uniqueItems"`
	}
	type uniqueWithValue struct {
		A []string `tool:"uniqueItems=true"`
	}
	type itemsOnString struct {
		A string `tool:"minItems=1"`
	}
	type bothRequiredOptional struct {
		A string `tool:"required,optional"`
	}
	type duplicateKey struct {
		A int `tool:"minimum=1,minimum=2"`
	}
	type badPattern struct {
		A string `tool:"pattern=("`
	}
	type nestedBad struct {
		In struct {
			B string `tool:"enum="`
		} `json:"in"`
	}
	type sliceEnumBad struct {
		A []int `tool:"enum=x"`
	}
	for _, tc := range []struct {
		typ  reflect.Type
		want []string // substrings of the error
	}{
		{reflect.TypeFor[unknownKey](), []string{"unknownKey.A", `tool:"minimun=1"`, `unknown key "minimun"`}},
		{reflect.TypeFor[badNumber](), []string{"badNumber.A", "not a number"}},
		{reflect.TypeFor[badCount](), []string{"not a non-negative integer"}},
		{reflect.TypeFor[enumFailsPattern](), []string{"enumFailsPattern.A", `enum value "ABC"`, "pattern"}},
		{reflect.TypeFor[enumFailsMinimum](), []string{`enum value 1`, "must be >= 2"}},
		{reflect.TypeFor[enumNotInteger](), []string{`enum value 1.5`, "must be an integer"}},
		{reflect.TypeFor[enumNotJSON](), []string{`enum value "one"`, "not valid JSON"}},
		{reflect.TypeFor[defaultNotInEnum](), []string{`default "z"`, "must be one of"}},
		{reflect.TypeFor[defaultWrongType](), []string{`default "yes"`}},
		{reflect.TypeFor[lengthOnInt](), []string{"maxLength needs a string field, not an integer"}},
		{reflect.TypeFor[minimumOnString](), []string{"minimum needs a number field"}},
		{reflect.TypeFor[uniqueOnString](), []string{"uniqueItems needs an array field"}},
		{reflect.TypeFor[uniqueWithValue](), []string{"uniqueItems takes no value"}},
		{reflect.TypeFor[itemsOnString](), []string{"minItems needs an array field"}},
		{reflect.TypeFor[bothRequiredOptional](), []string{"exclude each other"}},
		{reflect.TypeFor[duplicateKey](), []string{`duplicate key "minimum"`}},
		{reflect.TypeFor[badPattern](), []string{"pattern"}},
		{reflect.TypeFor[nestedBad](), []string{".B", `tool:"enum="`}},
		{reflect.TypeFor[sliceEnumBad](), []string{`enum value "x"`}},
		{reflect.TypeFor[string](), []string{"must be a struct or a map"}},
		{reflect.TypeFor[map[int]string](), []string{"must be a struct or a map"}},
		{reflect.TypeFor[time.Time](), []string{"does not describe a JSON object"}},
		{reflect.TypeFor[struct{ C chan int }](), []string{"unsupported"}},
	} {
		_, err := ForType(tc.typ)
		if err == nil {
			t.Errorf("ForType(%s) succeeded, want error", tc.typ)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ForType(%s) error %q does not mention %q", tc.typ, err, w)
			}
		}
	}
}

func TestParseToolTag(t *testing.T) {
	items, err := parseToolTag(` minimum=1, ,uniqueItems,default={"a":[1,2]} ,pattern=^a,b=c$`)
	if err != nil {
		t.Fatal(err)
	}
	want := []tagItem{{"minimum", "1", true}, {"uniqueItems", "", false}, {"default", `{"a":[1,2]}`, true}, {"pattern", "^a,b=c$", true}}
	if !reflect.DeepEqual(items, want) {
		t.Errorf("got %+v, want %+v", items, want)
	}
	for _, bad := range []string{`default=[1,`, `default=[1]x`} {
		if _, err := parseToolTag(bad); err == nil {
			t.Errorf("parseToolTag(%q) succeeded", bad)
		}
	}
}
