package schema

import (
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// The tree Prepare the one pass replaced, kept as the reference its
// preparation is checked against (FuzzPrepareMatchesTree).

// Prepare normalises arguments in place before validation and reports
// whether it changed anything. Models often send null for "not set" and omit
// values that have defaults, so Prepare:
//   - removes properties whose value is null when the property is not
//     required and its schema does not accept null, recursively in present
//     nested objects (and array items) that have a compiled schema;
//   - adds the schema's "default" for missing properties that are not
//     required, recursively in present objects (like jsonschema-go's
//     ApplyDefaults, except that missing objects are not created). A pruned
//     null therefore becomes the default.
//
// On the fallback path only the top level is prepared, and a null is pruned
// only when the property's own "type" excludes null.
func refPrepare(v *Validator, obj map[string]any) bool {
	if obj == nil {
		return false
	}
	if v.root == nil {
		return refPrepareTop(v.schema, obj)
	}
	return refPrepareNode(v.root, obj)
}

func refPrepareNode(n *node, val any) bool {
	changed := false
	switch x := val.(type) {
	case map[string]any:
		for i := range n.props {
			p := &n.props[i]
			cur, present := x[p.name]
			if p.required {
				if present && refPrepareNode(p.n, cur) {
					changed = true
				}
				continue
			}
			if present && cur == nil && !p.n.acceptsNull {
				delete(x, p.name)
				present = false
				changed = true
			}
			if !present {
				if p.n.hasDefault && (p.n.defaultVal != nil || p.n.acceptsNull) {
					d := deepCopy(p.n.defaultVal)
					refPrepareNode(p.n, d)
					x[p.name] = d
					changed = true
				}
				continue
			}
			if refPrepareNode(p.n, cur) {
				changed = true
			}
		}
		if n.additional != nil {
			for name, e := range x {
				if n.propIndex([]byte(name)) < 0 && refPrepareNode(n.additional, e) {
					changed = true
				}
			}
		}
	case []any:
		for i, e := range x {
			sn := n.items
			if i < len(n.prefix) {
				sn = n.prefix[i]
			}
			if sn != nil && refPrepareNode(sn, e) {
				changed = true
			}
		}
	}
	return changed
}

// prepareTop is Prepare for schemas the compiled path does not handle.
func refPrepareTop(s *jsonschema.Schema, obj map[string]any) bool {
	changed := false
	for name, ps := range s.Properties {
		if ps == nil || slices.Contains(s.Required, name) {
			continue
		}
		cur, present := obj[name]
		if present && cur == nil && refExcludesNull(ps) {
			delete(obj, name)
			present = false
			changed = true
		}
		if !present && ps.Default != nil {
			d, err := Decode(ps.Default)
			if err == nil && (d != nil || !refExcludesNull(ps)) {
				obj[name] = d
				changed = true
			}
		}
	}
	return changed
}

// excludesNull reports whether the schema's own type keyword rejects null;
// type is a conjunct, so nothing else in the schema can bring null back.
func refExcludesNull(s *jsonschema.Schema) bool {
	if s.Type != "" {
		return s.Type != "null"
	}
	return s.Types != nil && !slices.Contains(s.Types, "null")
}

// deepCopy copies decoded JSON so a default is never shared between calls.
func deepCopy(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	default:
		return v
	}
}
