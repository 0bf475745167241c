package toolkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/toolstream/toolstream/internal/schema"
)

// PrepareArgs turns a model's arguments into what the handler receives, as
// the engine does before every call: parsed, presets applied, optional nulls
// dropped, defaults filled in, and validated against the full schema. The
// original bytes are returned when nothing had to change. Arguments that a
// model encoded twice (a JSON string holding the object) are unwrapped.
// Errors are *ArgumentError.
func (t *Tool) PrepareArgs(raw json.RawMessage) (json.RawMessage, error) {
	p, err := t.prepare(raw)
	if err != nil {
		return nil, err
	}
	return p.bytes()
}

// prepared are arguments ready for a handler: the decoded tree, and the
// bytes when nothing changed them.
type prepared struct {
	tool    *Tool
	raw     json.RawMessage
	tree    map[string]any
	changed bool
}

// bytes returns the arguments as JSON, re-encoding the tree only if it
// changed.
func (p prepared) bytes() (json.RawMessage, error) {
	if !p.changed {
		return p.raw, nil
	}
	out, err := json.Marshal(p.tree)
	if err != nil {
		return nil, &ArgumentError{Tool: p.tool.spec.Name, Err: err}
	}
	return out, nil
}

func (t *Tool) prepare(raw json.RawMessage) (prepared, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}") // models send "" for tools without parameters
	}
	decoded, err := schema.Decode(raw)
	if err != nil {
		return prepared{}, &ArgumentError{Tool: t.spec.Name, Err: fmt.Errorf("arguments are not valid JSON: %w", err)}
	}
	if str, ok := decoded.(string); ok {
		// Some models encode the arguments object twice: "{\"a\":1}".
		if inner, err := schema.Decode([]byte(str)); err == nil {
			if _, isObj := inner.(map[string]any); isObj {
				decoded, raw = inner, json.RawMessage(str)
			}
		}
	}
	obj, ok := decoded.(map[string]any)
	if !ok {
		return prepared{}, &ArgumentError{Tool: t.spec.Name, Problems: []Problem{{
			Message: fmt.Sprintf("must be a JSON object, got %s", jsonKind(decoded)),
		}}}
	}
	changed := false
	for k, v := range t.presets {
		pv, err := schema.Decode(v) // fresh value per call: handlers may keep it
		if err != nil {
			return prepared{}, fmt.Errorf("toolkit: preset %q: %w", k, err)
		}
		obj[k] = pv
		changed = true
	}
	if t.validator.Prepare(obj) {
		changed = true
	}
	if probs := t.validator.Validate(obj); len(probs) > 0 {
		return prepared{}, &ArgumentError{Tool: t.spec.Name, Problems: probs}
	}
	if canonicalIntegers(obj) {
		changed = true
	}
	return prepared{tool: t, raw: raw, tree: obj, changed: changed}, nil
}

// canonicalIntegers rewrites integral numbers written with a fraction or an
// exponent (2.0, 1e2: integers to JSON Schema) as plain integers, so that Go
// handlers can decode them into integer fields. It reports whether it
// changed anything.
func canonicalIntegers(v any) bool {
	changed := false
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if n, ok := e.(json.Number); ok {
				if c, ok := canonicalInteger(n); ok {
					x[k] = c
					changed = true
				}
			} else if canonicalIntegers(e) {
				changed = true
			}
		}
	case []any:
		for i, e := range x {
			if n, ok := e.(json.Number); ok {
				if c, ok := canonicalInteger(n); ok {
					x[i] = c
					changed = true
				}
			} else if canonicalIntegers(e) {
				changed = true
			}
		}
	}
	return changed
}

func canonicalInteger(n json.Number) (json.Number, bool) {
	if !strings.ContainsAny(string(n), ".eE") {
		return n, false
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<63 {
		return n, false
	}
	return json.Number(strconv.FormatInt(int64(f), 10)), true
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// invoke runs the tool's handler on prepared arguments: a typed tool gets
// the decoded tree, a raw one the canonical bytes.
func (t *Tool) invoke(ctx context.Context, p prepared) ([]Part, error) {
	if t.typed != nil {
		return t.typed(ctx, p.tree)
	}
	raw, err := p.bytes()
	if err != nil {
		return nil, err
	}
	return t.handler(ctx, raw)
}
