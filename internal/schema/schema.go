// Package schema infers JSON Schemas for Go types and validates LLM tool-call
// arguments against them.
//
// Validation is done by a [Validator] compiled from a [jsonschema.Schema].
// Schemas that use only the common keywords are compiled into a tree of
// checks that works directly on decoded JSON and reports every problem it
// finds as a short "path: message" line an LLM can act on. Anything else is
// handed to github.com/google/jsonschema-go, which is also the reference the
// compiled path must agree with on what is valid (see the differential fuzz
// test).
//
// A tool's arguments are made ready by [Args.Prepare] in one pass over the
// model's bytes, without a tree (walk.go): it parses, checks each value
// against its compiled node, fills the typed input and records the edits
// that make the canonical text. The pass goes on after a value fails, so
// the problems are always worded from the prepared arguments. A plan per Go
// type (fill.go) is bound to the schema's nodes once per tool, so the pass
// fills a field without finding it by name; what it does not fill itself it
// leaves to encoding/json, on that value's canonical text. Its frames are
// kept small, since it may run on a fresh goroutine's stack. The tree
// pipeline it replaced stays in the tests as the oracle it is fuzzed
// against (ref_prepare_test.go), beside json.Unmarshal and jsonschema-go.
package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// MaxProblems caps the number of problems Validate returns, so a badly wrong
// instance does not flood the model's context.
const MaxProblems = 20

// draft202012 is the only $schema value besides "" that the compiled path
// accepts; draft-07 changes the meaning of items and goes to the reference.
const (
	draft202012 = "https://json-schema.org/draft/2020-12/schema"
	draft07     = "http://json-schema.org/draft-07/schema#"
	draft07s    = "https://json-schema.org/draft-07/schema#"
)

// Problem is one reason why arguments do not match a schema.
type Problem struct {
	// Path is the display path of the offending value: "" for the root,
	// `limit`, `options.mode`, `exts[0]`, `["a.b"]`, `items[2].name`.
	Path string
	// Message says what is wrong, e.g. `must be an integer, got string "ten"`.
	Message string
}

// String renders the problem as "path: message", with "(root)" for the root.
func (p Problem) String() string {
	path := p.Path
	if path == "" {
		path = "(root)"
	}
	return path + ": " + p.Message
}

// Validator validates decoded JSON values against one schema.
// It is immutable after Compile and safe for concurrent use.
type Validator struct {
	resolved *jsonschema.Resolved
	schema   *jsonschema.Schema
	root     *node // nil on the fallback path
	prep     *node // what the one pass walks: root, or prepRoot's node
}

// Compile checks the schema (via (*jsonschema.Schema).Resolve) and builds a
// validator. Schemas that use only the supported keywords get the compiled
// path; any other schema, and any draft-07 schema, falls back to
// jsonschema-go's Resolved.Validate, which reports one problem at the root.
// A $schema other than draft 2020-12 or draft-07 is an error, since
// jsonschema-go would fail every validation.
//
// Compiled keywords: type, enum, const, multipleOf, minimum, maximum,
// exclusiveMinimum, exclusiveMaximum, minLength, maxLength, pattern, items,
// prefixItems, minItems, maxItems, uniqueItems, properties, required,
// additionalProperties, minProperties, maxProperties, allOf, anyOf, oneOf,
// not, and the boolean schemas. Annotations (title, description, default,
// format, ...) and $defs that nothing refers to are ignored.
func Compile(s *jsonschema.Schema) (*Validator, error) {
	if s == nil {
		return nil, errors.New("schema: nil schema")
	}
	switch s.Schema {
	case "", draft202012, draft07, draft07s:
	default:
		// jsonschema-go resolves such a schema but then fails every
		// validation; better to say so once, here.
		return nil, fmt.Errorf("schema: unsupported $schema %q (want draft 2020-12 or draft-07)", s.Schema)
	}
	if err := checkTypeNames(s, "#"); err != nil {
		return nil, err
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	v := &Validator{resolved: rs, schema: s}
	if s.Schema == "" || s.Schema == draft202012 {
		if supported(s) {
			root, err := compile(s)
			if err != nil {
				return nil, fmt.Errorf("schema: %w", err)
			}
			v.root, v.prep = root, root
		}
	}
	if v.prep == nil {
		if v.prep, err = prepRoot(s); err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
	}
	return v, nil
}

// Fast reports whether the compiled path is used.
func (v *Validator) Fast() bool { return v.root != nil }

// Validate returns every problem with instance, or nil if it is valid.
//
// Problems come in the order the schema is walked: a value's own keywords
// first, then its properties in schema property order (PropertyOrder, then
// alphabetical), then extra properties alphabetically, and array items by
// index; allOf/anyOf/oneOf/not come after the value's own keywords.
// Duplicates are dropped. At most MaxProblems are returned; when more were
// found, the last one is Problem{Path: "", Message: "... and N more problems"}.
//
// The instance is what encoding/json produces with Decoder.UseNumber: nil,
// bool, json.Number, string, []any, map[string]any. float64, float32 and the
// int kinds are accepted as numbers (converted to float64, as jsonschema-go
// sees numbers decoded without UseNumber). Other Go values are round-tripped
// through encoding/json first.
func (v *Validator) Validate(instance any) []Problem {
	if (v.root == nil || !v.root.closed) && badNumbers(instance, nil, nil) {
		// Refused alike by both paths, and before anything else: a number
		// encoding/json cannot decode never reaches jsonschema-go. (In a
		// closed tree, check meets them all.)
		c := &collector{}
		badNumbers(instance, nil, c)
		return c.result()
	}
	if v.root == nil {
		return v.validateReference(instance)
	}
	if v.root.check(instance, nil, nil) {
		return nil
	}
	c := &collector{}
	v.root.check(instance, nil, c)
	if len(c.list) == 0 && c.dropped == 0 {
		// Every failing check records a problem; this is only a safety net.
		return []Problem{{Message: "does not match the schema"}}
	}
	return c.result()
}

// badNumbers reports, into c or (c nil) as its result, the json.Numbers
// that are not numbers or are too large for a float64. Without c it
// allocates nothing.
func badNumbers(instance any, at *path, c *collector) bool {
	bad := false
	switch x := instance.(type) {
	case json.Number:
		// Only numbers with an exponent or 309 digits can be too large.
		if bad = len(x) > 308 || strings.ContainsAny(string(x), "eE") || !isJSONNumber(string(x)); bad {
			_, ok := numberOf(x)
			bad = !ok
		}
		if bad && c != nil {
			c.add(at, badNumber(x))
		}
	case []any:
		for i, e := range x {
			if c == nil && badNumbers(e, nil, nil) {
				return true
			} else if c != nil {
				bad = badNumbers(e, &path{parent: at, index: i, isIndex: true}, c) || bad
			}
		}
	case map[string]any:
		if c == nil {
			for _, e := range x {
				if badNumbers(e, nil, nil) {
					return true
				}
			}
			break
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			bad = badNumbers(x[k], &path{parent: at, key: k}, c) || bad
		}
	}
	return bad
}

// badNumber says what is wrong with a json.Number numberOf refuses.
func badNumber(x json.Number) string {
	if isJSONNumber(string(x)) {
		return "must fit in a 64-bit float, got " + preview(x)
	}
	return "is not a valid JSON number: " + preview(string(x))
}

// validateReference runs jsonschema-go on the instance as json.Unmarshal
// would give it (json.Number would be a string to it; badNumbers has made
// sure that every number converts).
func (v *Validator) validateReference(instance any) []Problem {
	data, err := json.Marshal(instance)
	var inst any
	if err == nil {
		err = json.Unmarshal(data, &inst)
	}
	if err == nil {
		err = v.resolved.Validate(inst)
	}
	if err == nil {
		return nil
	}
	return []Problem{{Message: strings.TrimPrefix(err.Error(), "validating root: ")}}
}

// checkTypeNames rejects type names JSON Schema does not define. jsonschema-go
// accepts them and then rejects every instance; a tool author wants to hear
// about the typo when registering, not from every call.
func checkTypeNames(s *jsonschema.Schema, at string) error {
	if s == nil {
		return nil
	}
	names := s.Types
	if s.Type != "" {
		names = []string{s.Type}
	}
	for _, t := range names {
		if _, ok := typeBits[t]; !ok {
			return fmt.Errorf("schema: %s: unknown type %q (want null, boolean, object, array, number, integer or string)", at, t)
		}
	}
	child := func(c *jsonschema.Schema, path string) error { return checkTypeNames(c, at+"/"+path) }
	list := func(cs []*jsonschema.Schema, kw string) error {
		for i, c := range cs {
			if err := child(c, fmt.Sprintf("%s/%d", kw, i)); err != nil {
				return err
			}
		}
		return nil
	}
	dict := func(cs map[string]*jsonschema.Schema, kw string) error {
		for k, c := range cs {
			if err := child(c, kw+"/"+k); err != nil {
				return err
			}
		}
		return nil
	}
	for _, e := range []error{
		dict(s.Properties, "properties"), dict(s.PatternProperties, "patternProperties"), dict(s.Defs, "$defs"),
		dict(s.Definitions, "definitions"), dict(s.DependentSchemas, "dependentSchemas"),
		child(s.AdditionalProperties, "additionalProperties"), child(s.Items, "items"), child(s.Not, "not"),
		child(s.Contains, "contains"), child(s.PropertyNames, "propertyNames"), child(s.If, "if"),
		child(s.Then, "then"), child(s.Else, "else"), child(s.AdditionalItems, "additionalItems"),
		child(s.UnevaluatedItems, "unevaluatedItems"), child(s.UnevaluatedProperties, "unevaluatedProperties"),
		list(s.AllOf, "allOf"), list(s.AnyOf, "anyOf"), list(s.OneOf, "oneOf"), list(s.PrefixItems, "prefixItems"),
		list(s.ItemsArray, "items"),
	} {
		if e != nil {
			return e
		}
	}
	return nil
}
