package schema

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
)

// Args prepares the arguments of one tool: its validator, the Go type its
// handler takes (none for raw tools) and its presets. It is immutable and
// safe for concurrent use.
type Args struct {
	v       *Validator
	typ     reflect.Type
	bound   *bound // the plan of typ bound to the node the pass walks; nil: no type
	presets []prop // values set by code, by name; member "" removes the property
}

// Prepared are arguments ready for a handler.
type Prepared struct {
	text  []byte // the model's arguments, or their re-encoding
	edits []edit // applied to text, in order
}

// Bytes returns the canonical arguments: the model's own bytes when nothing
// changed them (not a copy), else a new text with the changes.
func (p Prepared) Bytes() []byte { return applyEdits(p.text, p.edits, 0, len(p.text)) }

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
// sends for them. Each preset is prepared (nulls pruned, defaults added)
// once, here.
func (v *Validator) Args(t reflect.Type, presets map[string]json.RawMessage) (*Args, error) {
	a := &Args{v: v, typ: t}
	if t != nil {
		a.bound = bind(v.prep, newPlan(t))
	}
	for _, name := range slices.Sorted(maps.Keys(presets)) {
		member, err := encodeTree(map[string]json.RawMessage{name: presets[name]})
		text, _ := v.prep.prepareText(member)
		tree, err2 := Decode(text)
		if err = cmp.Or(err, err2); err != nil {
			return nil, fmt.Errorf("schema: preset %q: %w", name, err)
		}
		pr := prop{name: name}
		if d, ok := tree.(map[string]any)[name]; ok {
			b, _ := encodeTree(map[string]any{name: d})
			pr.member, pr.memberB = string(b), b
		}
		a.presets = append(a.presets, pr)
	}
	return a, nil
}

// Prepare turns a model's arguments into what the handler receives, in one
// pass over the bytes: "" becomes {}, presets replace the model's values,
// nulls of optional properties go, defaults come in, every value is
// validated, integral numbers written 2.0 or 1e2 become integers, and dst
// (a pointer to a zero value of the bound type, or nil) gets what
// json.Unmarshal of the canonical bytes gives.
//
// Invalid arguments give the problems Validate reports on the prepared
// arguments. Arguments a model encoded twice ("{\"a\":1}") are unwrapped;
// when a key comes twice, the last one counts. The error is the JSON
// syntax error, or a *DecodeError.
func (a *Args) Prepare(raw []byte, dst any) (Prepared, []Problem, error) {
	s := pass{decoder: decoder{data: raw}, presets: a.presets, bound: a.bound}
	if s.skipSpace(); s.pos == len(raw) {
		s.data, s.pos = emptyObject, 0 // models send "" for tools without parameters
	}
	var v reflect.Value
	if a.bound != nil {
		v = reflect.ValueOf(dst).Elem()
	}
	err := errNotObject
	if s.data[s.pos] == '{' {
		err = s.top(a.v.prep, nil, v)
	}
	if err != nil || s.dup || s.invalid || s.failed || a.v.root == nil {
		return a.finish(&s, dst, v, err)
	}
	return Prepared{text: s.data, edits: s.edits}, nil, nil
}

var errNotObject = errors.New("not an object")

// finish is Prepare for all but valid arguments that the pass filled.
func (a *Args) finish(s *pass, dst any, v reflect.Value, err error) (Prepared, []Problem, error) {
	if (err != nil || s.dup) && v.IsValid() {
		v.SetZero() // the arguments go through the pass again
	}
	if err != nil {
		return a.notObject(s.data, dst)
	}
	if s.dup {
		// Start over from the tree, where the last value of a key won.
		tree, _ := Decode(s.data)
		text, err := encodeTree(tree)
		if err != nil {
			return Prepared{}, nil, err
		}
		return a.Prepare(text, dst)
	}
	p := Prepared{text: s.data, edits: s.edits}
	if s.invalid || a.v.root == nil {
		tree, err := Decode(p.Bytes())
		if err != nil {
			return Prepared{}, nil, err
		}
		if probs := a.v.Validate(tree); probs != nil {
			return Prepared{}, probs, nil
		}
	}
	if s.failed {
		// Left to encoding/json: the value, or the words for what Go
		// cannot hold.
		v.SetZero()
		if err := json.Unmarshal(p.Bytes(), dst); err != nil {
			return Prepared{}, nil, &DecodeError{Type: a.typ, Err: err}
		}
	}
	return p, nil, nil
}

// notObject says what is wrong with arguments that are not a JSON object,
// unless they are one encoded as a JSON string.
func (a *Args) notObject(raw []byte, dst any) (Prepared, []Problem, error) {
	tree, err := Decode(raw)
	if err != nil {
		return Prepared{}, nil, err
	}
	if str, ok := tree.(string); ok {
		if inner, err := Decode([]byte(str)); err == nil {
			if _, ok := inner.(map[string]any); ok {
				return a.Prepare([]byte(str), dst)
			}
		}
	}
	return Prepared{}, []Problem{{Message: "must be a JSON object, got " + kindPhrase(tree)}}, nil
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
