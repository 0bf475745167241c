package toolkit

import (
	"encoding/json"
	"fmt"
)

// Variant returns a tool with t's name, flags and handler but another
// description and input schema, for a [Visibility] that shows a session a
// version of t made for it (reset_tools with the session's groups as its
// properties, say). The engine checks a call's arguments against the
// schema of the variant the visibility resolves, so the handler can rely on
// what the model was shown.
//
// Only raw tools without presets have variants: a typed tool's input is
// fixed by its Go type.
func (t *Tool) Variant(description string, inputSchema json.RawMessage) (*Tool, error) {
	if t.typed != nil {
		return nil, fmt.Errorf("toolkit: tool %q: a typed tool has no variants (its schema comes from its Go type)", t.spec.Name)
	}
	if t.presets {
		return nil, fmt.Errorf("toolkit: tool %q: a tool with presets has no variants", t.spec.Name)
	}
	spec := t.spec
	spec.Description = description
	return NewRawTool(spec, inputSchema, t.handler)
}
