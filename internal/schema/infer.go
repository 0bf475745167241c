package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// For infers an object schema for T, which must be a struct, a pointer to a
// struct or a map with string keys, using jsonschema.For, and then applies
// the `tool:"..."` struct tags.
//
// A tool tag is a comma-separated list of items:
//
//	enum=a|b|c          allowed values, parsed per the field's JSON type
//	default=V           string fields: V verbatim; others: V as JSON (an
//	                    array or object default may contain commas)
//	minimum=N maximum=N exclusiveMinimum=N exclusiveMaximum=N
//	minLength=N maxLength=N minItems=N maxItems=N
//	uniqueItems         array items must be distinct
//	format=F            annotation only; jsonschema-go does not check it
//	required, optional  override the omitempty/omitzero rule
//	pattern=RE          must be last: takes the rest of the tag verbatim
//
// On an array field, enum and the string and number keywords (and format when
// the items are strings) apply to the items. On a pointer field an enum keeps
// accepting null. Descriptions still come from the `jsonschema:"..."` tag.
// Unknown keys, bad values, and enum values or defaults that do not validate
// against the field's schema are errors naming the type, field and tag.
func For[T any]() (*jsonschema.Schema, error) {
	return ForType(reflect.TypeFor[T]())
}

// ForType is For for a reflect.Type.
func ForType(t reflect.Type) (*jsonschema.Schema, error) {
	if t == nil {
		return nil, errors.New("schema: ForType(nil)")
	}
	base := t
	for base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	switch {
	case base.Kind() == reflect.Struct:
	case base.Kind() == reflect.Map && base.Key().Kind() == reflect.String:
	default:
		return nil, fmt.Errorf("schema: %s: tool arguments must be a struct or a map with string keys", t)
	}
	// The base type, not t: a pointer would make the root nullable.
	s, err := jsonschema.ForType(base, nil)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("schema: %s does not describe a JSON object", t)
	}
	if err := applyTags(base, s); err != nil {
		return nil, err
	}
	if _, err := Compile(s); err != nil {
		return nil, fmt.Errorf("schema: %s: %w", t, err)
	}
	return s, nil
}

// applyTags walks the Go type and its inferred schema in step.
func applyTags(t reflect.Type, s *jsonschema.Schema) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s == nil {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if s.Properties == nil {
			return nil // a type with a schema of its own, such as time.Time
		}
		return applyStructTags(t, s)
	case reflect.Slice, reflect.Array:
		return applyTags(t.Elem(), s.Items)
	case reflect.Map:
		return applyTags(t.Elem(), s.AdditionalProperties)
	}
	return nil
}

func applyStructTags(t reflect.Type, s *jsonschema.Schema) error {
	// The same field walk as jsonschema.For: a later field with the same
	// JSON name wins.
	fields := map[string]reflect.StructField{}
	for _, f := range reflect.VisibleFields(t) {
		if f.Anonymous {
			continue
		}
		if name, ok := jsonName(f); ok {
			fields[name] = f
		}
	}
	forced := map[string]bool{}
	for _, name := range s.PropertyOrder {
		f, ok := fields[name]
		ps := s.Properties[name]
		if !ok || ps == nil {
			continue
		}
		if err := applyTags(f.Type, ps); err != nil {
			return err
		}
		tag, ok := f.Tag.Lookup("tool")
		if !ok {
			continue
		}
		req, err := applyFieldTag(ps, tag)
		if err != nil {
			return fmt.Errorf("schema: %s.%s: tag tool:%q: %w", t, f.Name, tag, err)
		}
		if req != nil {
			forced[name] = *req
		}
	}
	if len(forced) > 0 {
		var req []string
		for _, name := range s.PropertyOrder {
			if r, ok := forced[name]; ok && r || !ok && slices.Contains(s.Required, name) {
				req = append(req, name)
			}
		}
		s.Required = req
	}
	return nil
}

// jsonName returns the JSON name of a struct field as encoding/json (and
// jsonschema.For) sees it, and false if the field is not marshalled.
func jsonName(f reflect.StructField) (string, bool) {
	if !f.IsExported() {
		return "", false
	}
	tag, ok := f.Tag.Lookup("json")
	if !ok {
		return f.Name, true
	}
	name, _, found := strings.Cut(tag, ",")
	if name == "-" && !found {
		return "", false
	}
	if name == "" {
		name = f.Name
	}
	return name, true
}

type tagItem struct {
	key, val string
	hasVal   bool
}

// parseToolTag splits a tool tag into items; pattern= swallows the rest.
func parseToolTag(tag string) ([]tagItem, error) {
	var items []tagItem
	seen := map[string]bool{}
	rest := tag
	for rest != "" {
		lead := strings.TrimLeft(rest, " ")
		var it tagItem
		if strings.HasPrefix(lead, "pattern=") {
			it = tagItem{key: "pattern", val: lead[len("pattern="):], hasVal: true}
			rest = ""
		} else if after, ok := strings.CutPrefix(lead, "default="); ok && after != "" && (after[0] == '[' || after[0] == '{') {
			// A JSON array or object default may contain commas: take one
			// whole JSON value.
			dec := json.NewDecoder(strings.NewReader(after))
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, fmt.Errorf("default: invalid JSON: %v", err)
			}
			off := int(dec.InputOffset())
			it = tagItem{key: "default", val: after[:off], hasVal: true}
			rest = strings.TrimLeft(after[off:], " ")
			if rest != "" {
				if rest[0] != ',' {
					return nil, fmt.Errorf("default: unexpected %q after the JSON value", rest)
				}
				rest = rest[1:]
			}
		} else {
			item, next, _ := strings.Cut(rest, ",")
			rest = next
			if strings.TrimSpace(item) == "" {
				continue
			}
			key, val, hasVal := strings.Cut(item, "=")
			it = tagItem{key: strings.TrimSpace(key), val: val, hasVal: hasVal}
		}
		if seen[it.key] {
			return nil, fmt.Errorf("duplicate key %q", it.key)
		}
		seen[it.key] = true
		items = append(items, it)
	}
	return items, nil
}

// category is the field's non-null JSON type, or "" if it has none or several.
func category(s *jsonschema.Schema) string {
	if s.Type != "" {
		return s.Type
	}
	var only string
	for _, t := range s.Types {
		if t == "null" {
			continue
		}
		if only != "" {
			return ""
		}
		only = t
	}
	return only
}

func nullable(s *jsonschema.Schema) bool {
	return s.Type == "null" || slices.Contains(s.Types, "null")
}

// takesValue says which tag keys take a value (pattern= always has one).
var takesValue = map[string]bool{"required": false, "optional": false, "uniqueItems": false, "minItems": true, "maxItems": true,
	"minLength": true, "maxLength": true, "minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"format": true, "enum": true, "default": true}

// applyFieldTag applies one field's tool tag to its property schema ps and
// returns the forced required state, if any.
func applyFieldTag(ps *jsonschema.Schema, tag string) (*bool, error) {
	items, err := parseToolTag(tag)
	if err != nil {
		return nil, err
	}
	cat := category(ps)
	// Value keywords on an array field describe its items.
	target, tcat := ps, cat
	if cat == "array" && ps.Items != nil {
		target, tcat = ps.Items, category(ps.Items)
	}
	var (
		forced    *bool
		enumVals  []any
		hasEnum   bool
		defaultJS json.RawMessage
	)
	need := func(it tagItem, want bool) error {
		if it.hasVal != want {
			if want {
				return fmt.Errorf("%s needs a value (%s=...)", it.key, it.key)
			}
			return fmt.Errorf("%s takes no value", it.key)
		}
		return nil
	}
	for _, it := range items {
		if want, known := takesValue[it.key]; known {
			if err := need(it, want); err != nil {
				return nil, err
			}
		}
		switch it.key {
		case "required", "optional":
			if forced != nil {
				return nil, errors.New("required and optional exclude each other")
			}
			forced = new(it.key == "required")
		case "uniqueItems":
			if cat != "array" {
				return nil, fmt.Errorf("uniqueItems needs an array field, not %s", catName(cat))
			}
			ps.UniqueItems = true
		case "minItems", "maxItems":
			if cat != "array" {
				return nil, fmt.Errorf("%s needs an array field, not %s", it.key, catName(cat))
			}
			n, err := parseCount(it)
			if err != nil {
				return nil, err
			}
			if it.key == "minItems" {
				ps.MinItems = &n
			} else {
				ps.MaxItems = &n
			}
		case "minLength", "maxLength":
			if tcat != "string" && tcat != "" {
				return nil, fmt.Errorf("%s needs a string field, not %s", it.key, catName(tcat))
			}
			n, err := parseCount(it)
			if err != nil {
				return nil, err
			}
			if it.key == "minLength" {
				target.MinLength = &n
			} else {
				target.MaxLength = &n
			}
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			if tcat != "integer" && tcat != "number" && tcat != "" {
				return nil, fmt.Errorf("%s needs a number field, not %s", it.key, catName(tcat))
			}
			f, err := strconv.ParseFloat(strings.TrimSpace(it.val), 64)
			if err != nil || !isJSONNumber(strings.TrimSpace(it.val)) {
				return nil, fmt.Errorf("%s: %q is not a number", it.key, it.val)
			}
			switch it.key {
			case "minimum":
				target.Minimum = &f
			case "maximum":
				target.Maximum = &f
			case "exclusiveMinimum":
				target.ExclusiveMinimum = &f
			default:
				target.ExclusiveMaximum = &f
			}
		case "pattern":
			if tcat != "string" && tcat != "" {
				return nil, fmt.Errorf("pattern needs a string field, not %s", catName(tcat))
			}
			if it.val == "" {
				return nil, errors.New("pattern is empty")
			}
			if _, err := regexp.Compile(it.val); err != nil {
				return nil, fmt.Errorf("pattern: %v", err)
			}
			target.Pattern = it.val
		case "format":
			if tcat == "string" {
				target.Format = it.val
			} else {
				ps.Format = it.val
			}
		case "enum":
			if it.val == "" {
				return nil, errors.New(`enum needs values: enum=a|b ("enum=|a" allows "")`)
			}
			for _, raw := range strings.Split(it.val, "|") {
				v, err := parseTagValue(raw, tcat)
				if err != nil {
					return nil, fmt.Errorf("enum value %q: %v", raw, err)
				}
				enumVals = append(enumVals, v)
			}
			hasEnum = true
		case "default":
			v, err := parseTagValue(it.val, cat)
			if err != nil {
				return nil, fmt.Errorf("default %q: %v", it.val, err)
			}
			if defaultJS, err = json.Marshal(v); err != nil {
				return nil, fmt.Errorf("default %q: %v", it.val, err)
			}
		default:
			return nil, fmt.Errorf("unknown key %q", it.key)
		}
	}

	if hasEnum {
		// The enum values must pass the field's other constraints; a pointer
		// field keeps accepting null.
		tv, err := Compile(target)
		if err != nil {
			return nil, err
		}
		for _, e := range enumVals {
			if probs := tv.Validate(e); len(probs) > 0 {
				return nil, fmt.Errorf("enum value %s does not match the field's schema: %s", preview(e), joinProblems(probs))
			}
		}
		if nullable(target) {
			enumVals = append(enumVals, nil)
		}
		target.Enum = enumVals
	}
	if defaultJS != nil {
		pv, err := Compile(ps)
		if err != nil {
			return nil, err
		}
		d, _ := Decode(defaultJS)
		if probs := pv.Validate(d); len(probs) > 0 {
			return nil, fmt.Errorf("default %s does not match the field's schema: %s", string(defaultJS), joinProblems(probs))
		}
		ps.Default = defaultJS
	}
	return forced, nil
}

// parseTagValue reads an enum or default value for a field of JSON type cat:
// strings verbatim, everything else as JSON. Untyped fields take JSON if it
// parses and the text otherwise.
func parseTagValue(raw, cat string) (any, error) {
	if cat == "string" {
		return raw, nil
	}
	var v any
	err := json.Unmarshal([]byte(raw), &v)
	if err != nil {
		if cat == "" {
			return raw, nil
		}
		return nil, fmt.Errorf("not valid JSON for %s field", catName(cat))
	}
	return v, nil
}

func parseCount(it tagItem) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(it.val))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s: %q is not a non-negative integer", it.key, it.val)
	}
	return n, nil
}

func catName(cat string) string {
	if cat == "" {
		return "an untyped field"
	}
	return typePhrase(typeBits[cat])
}

func joinProblems(ps []Problem) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.String()
	}
	return strings.Join(parts, "; ")
}
