package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// fuzzSeeds cover every keyword of the compiled path, with instances near
// the edges.
var fuzzSeeds = []struct{ schema, instance string }{
	{`{"type":"integer"}`, `1.0`},
	{`{"type":["string","null"]}`, `null`},
	{`{"type":[]}`, `"x"`},
	{`{"enum":[1,"a",null,[1,{"b":true}],{"c":[]}]}`, `[1.0,{"b":true}]`},
	{`{"const":{"a":[1,2.5,"x"]}}`, `{"a":[1,2.50,"x"]}`},
	{`{"multipleOf":0.1}`, `0.3`},
	{`{"multipleOf":3,"minimum":-3,"maximum":9}`, `-3e0`},
	{`{"exclusiveMinimum":0,"exclusiveMaximum":1}`, `0.5`},
	{`{"minLength":2,"maxLength":3}`, `"日本語"`},
	{`{"pattern":"^a+b?$","type":"string"}`, `"aab"`},
	{`{"items":{"type":"integer","minimum":0}}`, `[0,1,2.0,-1]`},
	{`{"prefixItems":[{"type":"string"},{"const":1}],"items":false}`, `["x",1]`},
	{`{"minItems":1,"maxItems":2,"uniqueItems":true}`, `[{"a":1},{"a":1.0}]`},
	{`{"uniqueItems":true}`, `[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,-0,"0"]`},
	{`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["a","c"],"additionalProperties":false}`, `{"a":"x","b":2}`},
	{`{"properties":{"a":{}},"additionalProperties":{"type":"boolean"},"minProperties":1,"maxProperties":2}`, `{"a":1,"x":true}`},
	{`{"allOf":[{"type":"number"},{"minimum":2}],"not":{"const":3}}`, `3`},
	{`{"anyOf":[{"type":"string","maxLength":1},{"type":"array","minItems":2}]}`, `["a"]`},
	{`{"oneOf":[{"type":"integer"},{"type":"number"}]}`, `1.5`},
	{`{"not":false}`, `{}`},
	{`false`, `null`},
	{`true`, `[[[]]]`},
	{`{"anyOf":[]}`, `1`},
	{`{"properties":{"o":{"properties":{"p":{"items":{"required":["q"]}}}}}}`, `{"o":{"p":[{"q":null},{}]}}`},
}

// FuzzValidateMatchesReference checks that the compiled validator and
// jsonschema-go agree on valid/invalid for every schema on the fast path,
// and that both of Validate's paths do on every decoded instance, numbers
// out of float64 range included.
func FuzzValidateMatchesReference(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s.schema), []byte(s.instance))
	}
	f.Add([]byte(`{"properties":{"s":{"type":"string"}}}`), []byte(`{"s":1e400}`))
	f.Fuzz(func(t *testing.T, schemaJSON, instanceJSON []byte) {
		var s jsonschema.Schema
		if err := json.Unmarshal(schemaJSON, &s); err != nil {
			return
		}
		v, err := Compile(&s)
		if err != nil || !v.Fast() {
			return
		}
		if inst, err := Decode(instanceJSON); err == nil {
			if c, r := v.Validate(inst), fallbackOf(v).Validate(inst); (c == nil) != (r == nil) {
				t.Fatalf("paths disagree\nschema:   %s\ninstance: %s\ncompiled:  %v\nreference: %v", schemaJSON, instanceJSON, c, r)
			}
		}
		var instF any
		if err := json.Unmarshal(instanceJSON, &instF); err != nil {
			return
		}
		instN, err := Decode(instanceJSON)
		if err != nil {
			t.Fatalf("Decode rejects JSON that json.Unmarshal accepts: %v", err)
		}
		want := v.resolved.Validate(instF)
		gotN := v.Validate(instN)
		gotF := v.Validate(instF)
		if (gotN == nil) != (want == nil) || (gotF == nil) != (want == nil) {
			t.Fatalf("disagreement\nschema:   %s\ninstance: %s\nreference: %v\ncompiled (UseNumber): %v\ncompiled (float64): %v",
				schemaJSON, instanceJSON, want, gotN, gotF)
		}
		if len(gotN) > MaxProblems {
			t.Fatalf("%d problems, more than MaxProblems", len(gotN))
		}
		for _, p := range gotN {
			if p.Message == "" {
				t.Fatalf("empty message in %v", gotN)
			}
		}
		if _, ok := instN.(map[string]any); ok {
			// The one pass agrees on valid/invalid for arguments that need
			// no preparation (prepared ones: FuzzPrepareMatchesTree). With a
			// key given twice it may be stricter (it checks both values);
			// Prepare then asks Validate, where the last one counts.
			s := pass{decoder: decoder{data: instanceJSON}}
			if err := s.top(v.prep, nil, reflect.Value{}); err != nil {
				t.Fatalf("the pass refuses %s: %v", instanceJSON, err)
			}
			if len(s.edits) == 0 && !foldedDuplicateKeys(instanceJSON) && s.invalid != (want != nil) {
				t.Fatalf("one pass says invalid=%v, reference %v\nschema:   %s\ninstance: %s", s.invalid, want, schemaJSON, instanceJSON)
			}
		}
	})
}

// FuzzDecode checks that Decode never panics, that it accepts exactly what
// encoding/json's Decoder (with UseNumber, no trailing data) accepts and
// returns the same value, and that the value re-marshals.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":[true,null,"x"],"c":{"d":1.5e3}}`, `  [] `, `"\u00e9\ud83d\ude00"`, `"\ud800\u0041"`,
		`"\udc00\ud800x"`, `"a\tb\"c\\\/\b\f\n\r"`, "\"\xff\xed\xa0\x80\"", `1e400`, `-0`, `-01`,
		`1.e5`, `{"a":1}x`, `{"a":}`, ``, `[1,2`, `{} {}`, `{"a":1,"a":2}`, `[tru]`, `"\x"`, "\"\x01\"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data)
		want, wantErr := referenceDecode(data)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("Decode(%q): err=%v, encoding/json err=%v", data, err, wantErr)
		}
		if err != nil {
			return
		}
		if !reflect.DeepEqual(v, want) {
			t.Fatalf("Decode(%q) = %#v, encoding/json gives %#v", data, v, want)
		}
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("re-marshal %#v: %v", v, err)
		}
		v2, err := Decode(out)
		if err != nil || !reflect.DeepEqual(v, v2) {
			t.Fatalf("re-marshalled %s decodes to %#v, %v", out, v2, err)
		}
	})
}

// referenceDecode is Decode done with encoding/json.
func referenceDecode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return nil, errors.New("trailing data")
	}
	return v, nil
}
