package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// mustCompile compiles a schema written as JSON.
func mustCompile(t testing.TB, schemaJSON string) *Validator {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(schemaJSON), &s); err != nil {
		t.Fatalf("unmarshal schema %s: %v", schemaJSON, err)
	}
	v, err := Compile(&s)
	if err != nil {
		t.Fatalf("Compile(%s): %v", schemaJSON, err)
	}
	return v
}

func mustDecode(t testing.TB, instanceJSON string) any {
	t.Helper()
	v, err := Decode([]byte(instanceJSON))
	if err != nil {
		t.Fatalf("Decode(%s): %v", instanceJSON, err)
	}
	return v
}

func problemStrings(ps []Problem) []string {
	if ps == nil {
		return nil
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// referenceValid runs jsonschema-go on the instance decoded without UseNumber.
func referenceValid(t testing.TB, v *Validator, instanceJSON string) bool {
	t.Helper()
	var inst any
	if err := json.Unmarshal([]byte(instanceJSON), &inst); err != nil {
		t.Fatalf("unmarshal instance: %v", err)
	}
	return v.resolved.Validate(inst) == nil
}

type validateCase struct {
	name     string
	schema   string
	instance string
	want     []string // Problem.String() of each problem; nil means valid
}

// Every case is also checked against jsonschema-go for valid/invalid.
var validateCases = []validateCase{
	// type
	{"type integer ok", `{"type":"integer"}`, `3`, nil},
	{"type integer 1.0", `{"type":"integer"}`, `1.0`, nil},
	{"type integer 1e2", `{"type":"integer"}`, `1e2`, nil},
	{"type integer string", `{"type":"integer"}`, `"ten"`, []string{`(root): must be an integer, got string "ten"`}},
	{"type integer fraction", `{"type":"integer"}`, `1.5`, []string{`(root): must be an integer, got number 1.5`}},
	{"type number int ok", `{"type":"number"}`, `2`, nil},
	{"type number bool", `{"type":"number"}`, `true`, []string{`(root): must be a number, got boolean true`}},
	{"type string null", `{"type":"string"}`, `null`, []string{`(root): must be a string, got null`}},
	{"type boolean", `{"type":"boolean"}`, `0`, []string{`(root): must be a boolean, got number 0`}},
	{"type object", `{"type":"object"}`, `[1,2]`, []string{`(root): must be an object, got array [1,2]`}},
	{"type array", `{"type":"array"}`, `{"a":1}`, []string{`(root): must be an array, got object {"a":1}`}},
	{"type null", `{"type":"null"}`, `null`, nil},
	{"type list ok", `{"type":["string","null"]}`, `null`, nil},
	{"type list", `{"type":["null","string"]}`, `3`, []string{`(root): must be a string or null, got number 3`}},
	{"type list three", `{"type":["integer","boolean","null"]}`, `"x"`, []string{`(root): must be an integer, a boolean or null, got string "x"`}},
	{"type list integer number", `{"type":["integer","number"]}`, `"x"`, []string{`(root): must be a number, got string "x"`}},
	{"type empty list", `{"type":[]}`, `1`, []string{`(root): must be of a type the schema allows (it allows none), got number 1`}},
	{"type long string preview", `{"type":"number"}`, `"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz"`,
		[]string{`(root): must be a number, got string "abcdefghijklmnopqrstuvwxyzabcdef..."`}},

	// enum and const
	{"enum ok", `{"enum":["fast","slow"]}`, `"slow"`, nil},
	{"enum", `{"enum":["fast","slow"]}`, `"medium"`, []string{`(root): must be one of "fast", "slow"; got "medium"`}},
	{"enum numbers 1 == 1.0", `{"enum":[1,2]}`, `1.0`, nil},
	{"enum numbers", `{"enum":[1,2.5]}`, `3`, []string{`(root): must be one of 1, 2.5; got 3`}},
	{"enum null", `{"enum":[null,"a"]}`, `null`, nil},
	{"enum object deep", `{"enum":[{"a":[1,{"b":null}]}]}`, `{"a":[1.0,{"b":null}]}`, nil},
	{"enum object differs", `{"enum":[{"a":1}]}`, `{"a":1,"b":2}`, []string{`(root): must be one of {"a":1}; got {"a":1,"b":2}`}},
	{"enum string is not number", `{"enum":[1]}`, `"1"`, []string{`(root): must be one of 1; got "1"`}},
	{"enum empty", `{"enum":[]}`, `1`, []string{`(root): is not allowed (the schema's enum is empty)`}},
	{"const ok", `{"const":"x"}`, `"x"`, nil},
	{"const", `{"const":"x"}`, `"y"`, []string{`(root): must be exactly "x"`}},
	{"const null", `{"const":null}`, `0`, []string{`(root): must be exactly null`}},
	{"const null ok", `{"const":null}`, `null`, nil},
	{"const array", `{"const":[1,"a"]}`, `[1.0,"a"]`, nil},
	{"const false vs 0", `{"const":false}`, `0`, []string{`(root): must be exactly false`}},

	// numbers
	{"minimum ok", `{"minimum":1}`, `1`, nil},
	{"minimum", `{"type":"integer","minimum":1}`, `0`, []string{`(root): must be >= 1, got 0`}},
	{"maximum", `{"maximum":10}`, `10.5`, []string{`(root): must be <= 10, got 10.5`}},
	{"exclusiveMinimum", `{"exclusiveMinimum":0}`, `0`, []string{`(root): must be > 0, got 0`}},
	{"exclusiveMaximum", `{"exclusiveMaximum":10}`, `10`, []string{`(root): must be < 10, got 10`}},
	{"exclusiveMaximum ok", `{"exclusiveMaximum":10}`, `9.999`, nil},
	{"multipleOf", `{"multipleOf":5}`, `7`, []string{`(root): must be a multiple of 5, got 7`}},
	{"multipleOf ok", `{"multipleOf":5}`, `-15`, nil},
	{"multipleOf fraction ok", `{"multipleOf":0.5}`, `2.5`, nil},
	{"multipleOf float rounding", `{"multipleOf":0.1}`, `0.3`, []string{`(root): must be a multiple of 0.1, got 0.3`}},
	// 0.07/0.01 is 7.000000000000001 in float64; jsonschema-go rejects it and so must we.
	{"multipleOf float quirk", `{"multipleOf":0.01}`, `0.07`, []string{`(root): must be a multiple of 0.01, got 0.07`}},
	{"multipleOf binary fraction ok", `{"multipleOf":0.25}`, `1.75`, nil},
	{"multipleOf zero", `{"multipleOf":0}`, `0`, []string{`(root): must be a multiple of 0, got 0`}},
	{"number keywords ignore strings", `{"minimum":5,"multipleOf":3}`, `"2"`, nil},
	{"several number problems", `{"minimum":5,"multipleOf":3}`, `2`, []string{
		`(root): must be a multiple of 3, got 2`,
		`(root): must be >= 5, got 2`,
	}},
	{"big exponent", `{"maximum":1e300}`, `1e301`, []string{`(root): must be <= 1e+300, got 1e301`}},

	// strings
	{"minLength ok", `{"minLength":3}`, `"abc"`, nil},
	{"minLength", `{"minLength":3}`, `"a"`, []string{`(root): must be at least 3 characters long, got 1`}},
	{"minLength one", `{"minLength":1}`, `""`, []string{`(root): must be at least 1 character long, got 0`}},
	{"maxLength", `{"maxLength":10}`, `"abcdefghijkl"`, []string{`(root): must be at most 10 characters long, got 12`}},
	{"maxLength code points", `{"maxLength":2}`, `"日本"`, nil},
	{"maxLength code points too long", `{"maxLength":2}`, `"日本語"`, []string{`(root): must be at most 2 characters long, got 3`}},
	{"pattern ok", `{"pattern":"^[a-z]+$"}`, `"abc"`, nil},
	{"pattern", `{"pattern":"^[a-z]+$"}`, `"abc1"`, []string{`(root): must match the pattern ^[a-z]+$`}},
	{"pattern unanchored", `{"pattern":"b"}`, `"abc"`, nil},
	{"string keywords ignore numbers", `{"minLength":3,"pattern":"x"}`, `1`, nil},

	// arrays
	{"minItems", `{"minItems":1}`, `[]`, []string{`(root): must have at least 1 item, got 0`}},
	{"maxItems", `{"maxItems":2}`, `[1,2,3]`, []string{`(root): must have at most 2 items, got 3`}},
	{"items ok", `{"items":{"type":"string"}}`, `["a","b"]`, nil},
	{"items", `{"type":"object","properties":{"exts":{"type":"array","items":{"type":"string"}}}}`, `{"exts":["a",1,"c",true]}`, []string{
		`exts[1]: must be a string, got number 1`,
		`exts[3]: must be a string, got boolean true`,
	}},
	{"items false", `{"items":false}`, `[1]`, []string{`[0]: is not allowed`}},
	{"items false empty ok", `{"items":false}`, `[]`, nil},
	{"prefixItems", `{"prefixItems":[{"type":"string"},{"type":"integer"}]}`, `[1,"a",{}]`, []string{
		`[0]: must be a string, got number 1`,
		`[1]: must be an integer, got string "a"`,
	}},
	{"prefixItems short ok", `{"prefixItems":[{"type":"string"},{"type":"integer"}]}`, `["a"]`, nil},
	{"prefixItems then items", `{"prefixItems":[{"type":"string"}],"items":{"type":"integer"}}`, `["a",1,"b"]`, []string{
		`[2]: must be an integer, got string "b"`,
	}},
	{"uniqueItems ok", `{"uniqueItems":true}`, `[1,"1",[1],{"a":1},null,true]`, nil},
	{"uniqueItems", `{"uniqueItems":true}`, `[1,2,3,1.0]`, []string{`(root): items must be unique; items 0 and 3 are equal`}},
	{"uniqueItems objects", `{"uniqueItems":true}`, `[{"a":1,"b":[2]},{"b":[2.0],"a":1}]`, []string{`(root): items must be unique; items 0 and 1 are equal`}},
	{"uniqueItems long", `{"uniqueItems":true}`, `[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,{"x":[7]},{"x":[7.0]}]`, []string{`(root): items must be unique; items 20 and 21 are equal`}},
	{"uniqueItems long ok", `{"uniqueItems":true}`, `[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,-0.5,"0",false]`, nil},
	{"uniqueItems false", `{"uniqueItems":false}`, `[1,1]`, nil},

	// objects
	{"required", `{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`, `{}`, []string{`query: is required`}},
	{"required without properties", `{"required":["a","b"]}`, `{"b":null}`, []string{`a: is required`}},
	{"required null is present", `{"required":["a"]}`, `{"a":null}`, nil},
	{"required ignores non-objects", `{"required":["a"]}`, `[1]`, nil},
	{"additionalProperties false", `{"type":"object","properties":{"a":{},"b":{},"c":{}},"additionalProperties":false}`, `{"a":1,"d":2,"b":3,"e":4}`, []string{
		`d: is not an allowed property; allowed: a, b, c`,
		`e: is not an allowed property; allowed: a, b, c`,
	}},
	{"additionalProperties false no properties", `{"additionalProperties":false}`, `{"x":1}`, []string{`x: is not an allowed property; no properties are allowed`}},
	{"additionalProperties schema", `{"properties":{"a":{}},"additionalProperties":{"type":"integer"}}`, `{"a":"s","b":1,"c":"x"}`, []string{`c: must be an integer, got string "x"`}},
	{"properties nested path", `{"type":"object","properties":{"options":{"type":"object","properties":{"mode":{"enum":["fast","slow"]}}}}}`, `{"options":{"mode":"medium"}}`, []string{
		`options.mode: must be one of "fast", "slow"; got "medium"`,
	}},
	{"keys needing quotes", `{"properties":{"a.b":{"type":"string"},"x y":{"properties":{"0":{"type":"string"}}}},"required":["a.b"]}`, `{"x y":{"0":1}}`, []string{
		`["a.b"]: is required`,
		`["x y"]["0"]: must be a string, got number 1`,
	}},
	{"array index then key", `{"properties":{"items":{"items":{"required":["name"],"properties":{"name":{"type":"string"}}}}}}`, `{"items":[{"name":"a"},{"name":"b"},{}]}`, []string{
		`items[2].name: is required`,
	}},
	{"minProperties", `{"minProperties":2}`, `{"a":1}`, []string{`(root): must have at least 2 properties, got 1`}},
	{"maxProperties", `{"maxProperties":1}`, `{"a":1,"b":2}`, []string{`(root): must have at most 1 property, got 2`}},
	{"wrong type is not descended", `{"properties":{"o":{"type":"object","required":["x"]}}}`, `{"o":[]}`, []string{`o: must be an object, got array []`}},
	{"property false", `{"properties":{"a":false}}`, `{"a":1}`, []string{`a: is not allowed`}},

	// logic
	{"allOf", `{"allOf":[{"minimum":1},{"maximum":3}]}`, `5`, []string{`(root): must be <= 3, got 5`}},
	{"allOf both", `{"allOf":[{"type":"string"},{"minLength":2},{"maxLength":0}]}`, `"a"`, []string{
		`(root): must be at least 2 characters long, got 1`,
		`(root): must be at most 0 characters long, got 1`,
	}},
	{"allOf duplicates dropped", `{"allOf":[{"required":["a"]},{"required":["a"]}]}`, `{}`, []string{`a: is required`}},
	{"anyOf ok", `{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `3`, nil},
	{"anyOf types", `{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `true`, []string{`(root): must be a string or an integer, got boolean true`}},
	{"anyOf", `{"anyOf":[{"type":"string","maxLength":2},{"type":"integer"}]}`, `"abc"`, []string{
		`(root): must match at least one of the allowed schemas`,
		`(root): must be at most 2 characters long, got 3`,
	}},
	{"anyOf untyped", `{"anyOf":[{"minimum":5},{"multipleOf":2}]}`, `3`, []string{
		`(root): must match at least one of the allowed schemas`,
		`(root): must be >= 5, got 3`,
	}},
	{"anyOf empty", `{"anyOf":[]}`, `3`, []string{`(root): must match at least one of the allowed schemas`}},
	{"oneOf ok", `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, `3`, nil},
	{"oneOf two", `{"oneOf":[{"type":"number"},{"type":"integer"}]}`, `3`, []string{`(root): must match exactly one of the allowed schemas, matched 2`}},
	{"oneOf none", `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, `1.5`, []string{`(root): must match exactly one of the allowed schemas, matched 0`}},
	{"not", `{"not":{"type":"string"}}`, `"a"`, []string{`(root): must not match the excluded schema`}},
	{"not ok", `{"not":{"type":"string"}}`, `1`, nil},
	{"false schema", `false`, `1`, []string{`(root): is not allowed`}},
	{"true schema", `true`, `{"a":[1]}`, nil},
	{"empty schema", `{}`, `null`, nil},

	// annotations are ignored
	{"annotations", `{"title":"t","description":"d","default":5,"examples":[1],"deprecated":true,"readOnly":true,"writeOnly":true,"$comment":"c","format":"email","contentEncoding":"base64","contentMediaType":"text/plain","x-extra":{"type":"string"},"$schema":"https://json-schema.org/draft/2020-12/schema"}`, `"not an email"`, nil},
	{"$defs without $ref are unused", `{"$defs":{"x":{"type":"string"}},"type":"integer"}`, `1`, nil},

	// A realistic tool schema. Unmarshalled schemas have no PropertyOrder,
	// so properties are walked alphabetically.
	{"tool all problems", `{"type":"object","properties":{"query":{"type":"string","minLength":1},"limit":{"type":"integer","minimum":1},"exts":{"type":["null","array"],"items":{"type":"string","enum":["go","md"]}}},"required":["query","limit"],"additionalProperties":false}`,
		`{"limit":"ten","exts":["go","rs"],"verbose":true}`, []string{
			`exts[1]: must be one of "go", "md"; got "rs"`,
			`limit: must be an integer, got string "ten"`,
			`query: is required`,
			`verbose: is not an allowed property; allowed: exts, limit, query`,
		}},
}

func TestValidate(t *testing.T) {
	for _, tc := range validateCases {
		t.Run(tc.name, func(t *testing.T) {
			v := mustCompile(t, tc.schema)
			if !v.Fast() {
				t.Fatalf("schema %s is not on the fast path", tc.schema)
			}
			got := problemStrings(v.Validate(mustDecode(t, tc.instance)))
			if !slices.Equal(got, tc.want) {
				t.Errorf("Validate(%s)\n got: %q\nwant: %q", tc.instance, got, tc.want)
			}
			if ref := referenceValid(t, v, tc.instance); ref != (got == nil) {
				t.Errorf("jsonschema-go says valid=%v, compiled says valid=%v", ref, got == nil)
			}
		})
	}
}

func TestProblemString(t *testing.T) {
	if got := (Problem{Message: "is not allowed"}).String(); got != "(root): is not allowed" {
		t.Errorf("root: %q", got)
	}
	if got := (Problem{Path: "a.b", Message: "is required"}).String(); got != "a.b: is required" {
		t.Errorf("nested: %q", got)
	}
}

func TestValidateGoValues(t *testing.T) {
	v := mustCompile(t, `{"type":"object","properties":{"n":{"type":"integer","minimum":1},"f":{"type":"number"},"l":{"type":"array","items":{"type":"string"}}},"required":["n"]}`)
	for _, inst := range []any{
		map[string]any{"n": 3},
		map[string]any{"n": int64(3), "f": float32(1.5)},
		map[string]any{"n": 3.0, "f": uint8(2)},
		map[string]any{"n": json.Number("3"), "l": []string{"a"}},
	} {
		if p := v.Validate(inst); p != nil {
			t.Errorf("Validate(%#v) = %v, want valid", inst, p)
		}
	}
	got := problemStrings(v.Validate(map[string]any{"n": 0, "l": []int{1}}))
	want := []string{"l[0]: must be a string, got number 1", "n: must be >= 1, got 0"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	got = problemStrings(v.Validate(map[string]any{"n": json.Number("0x10")}))
	want = []string{`n: is not a valid JSON number: "0x10"`}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	got = problemStrings(v.Validate(map[string]any{"n": make(chan int)}))
	want = []string{`n: is not a JSON value (Go type chan int)`}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestValidateCap(t *testing.T) {
	v := mustCompile(t, `{"items":{"type":"string"}}`)
	var inst []any
	for i := range 30 {
		inst = append(inst, i)
	}
	got := v.Validate(inst)
	if len(got) != MaxProblems {
		t.Fatalf("got %d problems, want %d", len(got), MaxProblems)
	}
	if got[0].String() != "[0]: must be a string, got number 0" {
		t.Errorf("first problem %q", got[0])
	}
	if last := got[MaxProblems-1]; last != (Problem{Message: "... and 11 more problems"}) {
		t.Errorf("last problem %q", last)
	}
	inst = inst[:MaxProblems]
	if got := v.Validate(inst); len(got) != MaxProblems || got[MaxProblems-1].Path != "[19]" {
		t.Errorf("exactly MaxProblems problems should all be kept, got %v", got)
	}
}

func TestFallback(t *testing.T) {
	for _, tc := range []struct {
		schema, valid, invalid, msg string
	}{
		{`{"$defs":{"n":{"type":"integer"}},"properties":{"a":{"$ref":"#/$defs/n"}}}`, `{"a":1}`, `{"a":"x"}`, "type"},
		{`{"patternProperties":{"^x":{"type":"string"}}}`, `{"xa":"s"}`, `{"xa":1}`, "type"},
		{`{"if":{"type":"string"},"then":{"minLength":2}}`, `"ab"`, `"a"`, "minLength"},
		{`{"contains":{"type":"string"}}`, `[1,"a"]`, `[1]`, "contains"},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}]}`, `["a",1]`, `[1]`, "type"},
		{`{"propertyNames":{"maxLength":2}}`, `{"ab":1}`, `{"abc":1}`, "maxLength"},
	} {
		v := mustCompile(t, tc.schema)
		if v.Fast() {
			t.Errorf("%s: unexpectedly on the fast path", tc.schema)
			continue
		}
		if p := v.Validate(mustDecode(t, tc.valid)); p != nil {
			t.Errorf("%s: Validate(%s) = %v, want valid", tc.schema, tc.valid, p)
		}
		p := v.Validate(mustDecode(t, tc.invalid))
		if len(p) != 1 || p[0].Path != "" || !strings.Contains(p[0].Message, tc.msg) || strings.HasPrefix(p[0].Message, "validating root") {
			t.Errorf("%s: Validate(%s) = %v, want one root problem mentioning %q", tc.schema, tc.invalid, p, tc.msg)
		}
	}
}

func TestFallbackKeywords(t *testing.T) {
	for _, s := range []string{
		`{"$id":"https://example.com/s"}`, `{"$anchor":"a"}`, `{"$dynamicAnchor":"a"}`,
		`{"properties":{"a":{"$ref":"#"}}}`, `{"$dynamicRef":"#"}`, `{"dependencies":{"a":["b"]}}`,
		`{"dependencies":{"a":{}}}`, `{"dependentRequired":{"a":["b"]}}`, `{"dependentSchemas":{"a":{}}}`,
		`{"items":[{}]}`, `{"additionalItems":false}`, `{"contains":{}}`, `{"minContains":1}`,
		`{"maxContains":1}`, `{"unevaluatedItems":false}`, `{"unevaluatedProperties":false}`,
		`{"patternProperties":{"a":{}}}`, `{"propertyNames":{}}`, `{"if":{}}`, `{"then":{}}`,
		`{"else":{}}`, `{"contentSchema":{}}`,
		`{"items":{"if":true}}`, `{"not":{"contains":{}}}`, `{"allOf":[{"propertyNames":{}}]}`,
		`{"additionalProperties":{"unevaluatedItems":false}}`, `{"prefixItems":[{"dependentSchemas":{}}]}`,
		`{"anyOf":[{"then":{}}]}`, `{"oneOf":[{"else":{}}]}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#"}`,
	} {
		if mustCompile(t, s).Fast() {
			t.Errorf("%s is on the fast path", s)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	for _, s := range []*jsonschema.Schema{
		nil,
		{Pattern: "("},
		{Type: "string", Types: []string{"null"}},
		{Schema: "https://example.com/my-schema"},
		{Properties: map[string]*jsonschema.Schema{"a": nil}},
	} {
		if _, err := Compile(s); err == nil {
			t.Errorf("Compile(%+v) succeeded, want error", s)
		}
	}
}

func ExampleValidator_Validate() {
	type listArgs struct {
		Path  string `json:"path"`
		Limit int    `json:"limit,omitempty" tool:"minimum=1"`
	}
	s, _ := For[listArgs]()
	v, _ := Compile(s)
	args, _ := Decode([]byte(`{"limit": "ten", "recursive": true}`))
	for _, p := range v.Validate(args) {
		fmt.Println(p)
	}
	// Output:
	// path: is required
	// limit: must be an integer, got string "ten"
	// recursive: is not an allowed property; allowed: path, limit
}

// TestSchemaFieldsCovered fails when jsonschema-go grows a Schema field that
// supported() has not been taught about, so a new keyword cannot silently be
// ignored by the compiled path.
func TestSchemaFieldsCovered(t *testing.T) {
	known := map[string]bool{
		// compiled
		"Type": true, "Types": true, "Enum": true, "Const": true, "MultipleOf": true, "Minimum": true,
		"Maximum": true, "ExclusiveMinimum": true, "ExclusiveMaximum": true, "MinLength": true,
		"MaxLength": true, "Pattern": true, "PrefixItems": true, "Items": true, "MinItems": true,
		"MaxItems": true, "UniqueItems": true, "MinProperties": true, "MaxProperties": true,
		"Required": true, "Properties": true, "AdditionalProperties": true, "AllOf": true,
		"AnyOf": true, "OneOf": true, "Not": true,
		// annotations, or unused without $ref
		"Schema": true, "Comment": true, "Defs": true, "Definitions": true, "Title": true,
		"Description": true, "Default": true, "Deprecated": true, "ReadOnly": true, "WriteOnly": true,
		"Examples": true, "ContentEncoding": true, "ContentMediaType": true, "Format": true,
		"Extra": true, "PropertyOrder": true,
		// fallback
		"ID": true, "Ref": true, "DependencySchemas": true, "DependencyStrings": true, "Anchor": true,
		"DynamicAnchor": true, "DynamicRef": true, "Vocabulary": true, "ItemsArray": true,
		"AdditionalItems": true, "Contains": true, "MinContains": true, "MaxContains": true,
		"UnevaluatedItems": true, "DependentRequired": true, "PatternProperties": true,
		"PropertyNames": true, "UnevaluatedProperties": true, "If": true, "Then": true, "Else": true,
		"DependentSchemas": true, "ContentSchema": true,
	}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[jsonschema.Schema]()) {
		if !known[f.Name] {
			t.Errorf("jsonschema.Schema.%s is new: teach supported() and compile() about it", f.Name)
		}
	}
}

func TestValidateConcurrent(t *testing.T) {
	v := mustCompile(t, `{"properties":{"a":{"type":"integer"},"b":{"default":{"c":[1]}}},"additionalProperties":false}`)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				_, probs := prepare(t, v, `{"a":"x","z":1}`)
				if got := len(probs); got != 2 {
					t.Errorf("got %d problems, want 2", got)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestUnknownTypeNames: a typo in a type name is a Compile error at any
// depth, not a schema that silently rejects every call.
func TestUnknownTypeNames(t *testing.T) {
	for _, tc := range []struct{ schema, at string }{
		{`{"type":"float"}`, `#: unknown type "float"`},
		{`{"type":["string","int"]}`, `#: unknown type "int"`},
		{`{"type":"object","properties":{"a":{"type":"array","items":{"type":"str"}}}}`, `#/properties/a/items: unknown type "str"`},
		{`{"anyOf":[{"type":"string"},{"type":"nonsense"}]}`, `#/anyOf/1: unknown type "nonsense"`},
	} {
		var s jsonschema.Schema
		if err := json.Unmarshal([]byte(tc.schema), &s); err != nil {
			t.Fatal(err)
		}
		if _, err := Compile(&s); err == nil || !strings.Contains(err.Error(), tc.at) {
			t.Errorf("Compile(%s) = %v, want an error containing %q", tc.schema, err, tc.at)
		}
	}
}
