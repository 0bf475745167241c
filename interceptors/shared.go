package interceptors

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"

	"github.com/toolstream/toolstream/toolkit"
)

// scopeTo limits ic to the named tools (duplicates and order do not
// matter). No names means no tool at all, not every tool as an empty
// Tools would.
func scopeTo(ic *toolkit.Interceptor, tools []string) {
	ic.Tools = slices.Compact(slices.Sorted(slices.Values(tools)))
	if len(ic.Tools) == 0 {
		ic.Match = func(*toolkit.Tool) bool { return false }
	}
}

// loadOrNew returns the value stored under key in m, storing mk() there
// first when there is none. Only the first call for a key builds a value:
// the interceptors that keep state there run on every call.
func loadOrNew[T any](m *sync.Map, key any, mk func() *T) *T {
	if v, ok := m.Load(key); ok {
		return v.(*T)
	}
	v, _ := m.LoadOrStore(key, mk())
	return v.(*T)
}

// decodeJSON decodes one JSON value with numbers kept as json.Number, so
// that large numbers stay exact when encoded again.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// toolName is the name by which per-tool options, rules and counters know
// a call: the name of the tool that runs. It differs from the called name
// (Invocation.Call.Name, the model's choice) when a ToolResolver or an
// Unknown interceptor ran the call as a tool of another name, and toolkit
// scopes interceptors (Tools) by it too.
func toolName(inv *toolkit.Invocation) string {
	if inv.Tool == nil { // an outer interceptor cleared it: the call will fail
		return inv.Call.Name
	}
	return inv.Tool.Name()
}

// toolSpec is the spec of the tool that runs, or, when an outer
// interceptor cleared Invocation.Tool (the call will fail), a spec with the
// called name only.
func toolSpec(inv *toolkit.Invocation) toolkit.Spec {
	if inv.Tool == nil {
		return toolkit.Spec{Name: inv.Call.Name}
	}
	return inv.Tool.Spec()
}
