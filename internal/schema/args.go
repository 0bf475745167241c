package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Args prepares the arguments of one tool: its validator, the Go type its
// handler takes (none for raw tools) and its presets. It is immutable and
// safe for concurrent use.
type Args struct {
	v       *Validator
	typ     reflect.Type
	plan    *plan
	presets []preset // by name
}

// preset is a property value set by code, in canonical form.
type preset struct {
	name   string
	member  string // `{"name":value}`; "" when the preset removes the property
	memberB []byte
}

// Prepared are arguments ready for a handler.
type Prepared struct {
	text  []byte // the model's arguments, or their re-encoding
	edits []edit // applied to text, in order
}

// Bytes returns the canonical arguments: the model's own bytes when nothing
// changed them (not a copy), else a new text with the changes.
func (p Prepared) Bytes() []byte {
	if len(p.edits) == 0 {
		return p.text
	}
	return applyEdits(p.text, p.edits, 0, len(p.text))
}

// DecodeError reports valid arguments that the Go type cannot hold, in
// encoding/json's words (a number too large for its field, say).
type DecodeError struct {
	Type reflect.Type
	Err  error
}

func (e *DecodeError) Error() string { return fmt.Sprintf("decoding into %v: %v", e.Type, e.Err) }

// Unwrap returns encoding/json's error.
func (e *DecodeError) Unwrap() error { return e.Err }

var emptyObject = []byte("{}")

// Args binds v to t, the Go type that Prepare fills (nil: none), and to
// presets, JSON values by property name that replace whatever the model
// sends for them. The presets must be valid; each is prepared (nulls
// pruned, defaults added) once, here.
func (v *Validator) Args(t reflect.Type, presets map[string]json.RawMessage) (*Args, error) {
	a := &Args{v: v, typ: t}
	if t != nil {
		a.plan = newPlan(t)
	}
	for _, name := range slices.Sorted(maps.Keys(presets)) {
		d, err := Decode(presets[name])
		if err != nil {
			return nil, fmt.Errorf("schema: preset %q: %w", name, err)
		}
		obj := map[string]any{name: d}
		v.Prepare(obj)
		pr := preset{name: name}
		if d, ok := obj[name]; ok {
			if pr.member, err = memberText(name, d); err != nil {
				return nil, fmt.Errorf("schema: preset %q: %w", name, err)
			}
			pr.memberB = []byte(pr.member)
		}
		a.presets = append(a.presets, pr)
	}
	return a, nil
}

// memberText is `{"name":value}` with value in canonical form.
func memberText(name string, value any) (string, error) {
	value, _ = canonical(value)
	data, err := encodeTree(map[string]any{name: value})
	return string(data), err
}

// Prepare turns a model's arguments into what the handler receives, in one
// pass when it can: "" becomes {}, presets replace the model's values, nulls
// of optional properties go, defaults come in, every value is validated,
// integral numbers written 2.0 or 1e2 become integers, and dst (a pointer to
// a zero value of the bound type, or nil) is filled with what
// json.Unmarshal of the canonical bytes would give.
//
// Invalid arguments give the problems Validate reports, after the same
// preparation; arguments a model encoded twice ("{\"a\":1}") are unwrapped.
// The error is the JSON syntax error, or a *DecodeError.
func (a *Args) Prepare(raw []byte, dst any) (Prepared, []Problem, error) {
	if len(bytes.TrimLeft(raw, " \t\r\n")) == 0 {
		raw = emptyObject // models send "" for tools without parameters
	}
	var v reflect.Value
	if a.plan != nil {
		v = reflect.ValueOf(dst).Elem()
	}
	if a.v.root != nil {
		s := pass{decoder: decoder{data: raw}, presets: a.presets}
		if s.skipSpace(); s.pos < len(raw) && raw[s.pos] == '{' && s.value(a.v.root, a.plan, v) {
			if s.skipSpace(); s.pos == len(raw) {
				p := Prepared{text: raw, edits: s.edits}
				if s.failed {
					return a.unmarshal(p, dst, v)
				}
				return p, nil, nil
			}
		}
		if v.IsValid() {
			v.SetZero()
		}
	}
	return a.slow(raw, dst, v)
}

// slow is Prepare on a decoded tree: it finds every problem, and handles
// what the one pass leaves to it (keys given twice, double encoding,
// schemas the compiled path does not cover).
func (a *Args) slow(raw []byte, dst any, v reflect.Value) (Prepared, []Problem, error) {
	d := decoder{data: raw}
	tree, err := d.decode()
	if err != nil {
		return Prepared{}, nil, err
	}
	if str, ok := tree.(string); ok {
		inner := decoder{data: []byte(str)}
		if t, err := inner.decode(); err == nil {
			if _, ok := t.(map[string]any); ok {
				tree, raw, d = t, inner.data, inner
			}
		}
	}
	obj, ok := tree.(map[string]any)
	if !ok {
		return Prepared{}, []Problem{{Message: "must be a JSON object, got " + kindPhrase(tree)}}, nil
	}
	changed := d.dup // the value kept is the last one: say which
	for _, pr := range a.presets {
		changed = true
		delete(obj, pr.name)
		if pr.member != "" {
			m, _ := Decode([]byte(pr.member))
			obj[pr.name] = m.(map[string]any)[pr.name]
		}
	}
	changed = a.v.Prepare(obj) || changed
	if probs := a.v.Validate(obj); probs != nil {
		return Prepared{}, probs, nil
	}
	if _, c := canonical(obj); c || changed {
		if raw, err = encodeTree(obj); err != nil {
			return Prepared{}, nil, err
		}
	}
	p := Prepared{text: raw}
	if a.plan != nil {
		s := pass{decoder: decoder{data: raw}}
		if s.skipSpace(); !s.value(nil, a.plan, v) || s.failed {
			return a.unmarshal(p, dst, v)
		}
	}
	return p, nil, nil
}

// unmarshal fills dst with encoding/json, for the values the one pass
// leaves to it, and for its error messages.
func (a *Args) unmarshal(p Prepared, dst any, v reflect.Value) (Prepared, []Problem, error) {
	v.SetZero()
	if err := json.Unmarshal(p.Bytes(), dst); err != nil {
		return Prepared{}, nil, &DecodeError{Type: a.typ, Err: err}
	}
	return p, nil, nil
}

// canonical rewrites, in place where it can, the integral numbers written
// with a fraction or an exponent (2.0, 1e2: integers to JSON Schema) as
// plain integers, so that Go handlers can decode them into integer fields.
func canonical(v any) (any, bool) {
	changed := false
	switch x := v.(type) {
	case json.Number:
		if f, err := x.Float64(); err == nil && strings.ContainsAny(string(x), ".eE") && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return json.Number(strconv.FormatInt(int64(f), 10)), true
		}
	case map[string]any:
		for k, e := range x {
			if c, ok := canonical(e); ok {
				x[k], changed = c, true
			}
		}
	case []any:
		for i, e := range x {
			if c, ok := canonical(e); ok {
				x[i], changed = c, true
			}
		}
	}
	return v, changed
}

// kindPhrase names the JSON type of a decoded value: "an array".
func kindPhrase(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}
