package toolkit

import (
	"bytes"
	"encoding/json"

	"github.com/toolstream/toolstream/events"
)

// RanArgs returns the arguments the tool last ran with, as its handler
// received them and without presets, when an interceptor or a person's
// approval made them differ from those the interceptors were handed: what
// the call's args event carried. ok is false when the tool ran with the
// arguments it was called with, or did not run (a denied call). An audit
// log records from it what a rewritten call really did.
func (inv *Invocation) RanArgs() (args json.RawMessage, ok bool) {
	c := inv.c
	c.mu.Lock()
	r, exe := c.ic.ran, c.exe
	var ran json.RawMessage
	if r != nil {
		ran = r.args
	}
	c.mu.Unlock()
	if ran == nil {
		return nil, false
	}
	return withoutPresets(exe, ran), true
}

// ranArgs is what only a call whose arguments an interceptor changed needs
// (chained.ran), so that other calls carry one pointer for it.
type ranArgs struct {
	args json.RawMessage // canonical, presets in: what the last args event carried; nil before one
	due  bool            // an alias changed the model's arguments: the tool's next run records them
}

// noteRan records that the tool is about to run with ran (canonical,
// presets in), arguments an interceptor changed from prev: when they
// differ from those it ran with last (prev, before any record), an args
// event goes out, before the handler runs.
func (c *call) noteRan(exe *Tool, ran, prev json.RawMessage) {
	c.mu.Lock()
	r := c.ic.ran
	if r != nil && !r.due && r.args != nil {
		prev = r.args
	}
	differ := r != nil && r.due || !bytes.Equal(ran, prev)
	if differ {
		if r == nil {
			r = &ranArgs{}
			c.ic.ran = r
		}
		r.args, r.due = ran, false
	}
	c.mu.Unlock()
	if !differ || !c.out.emits() {
		return
	}
	args := withoutPresets(exe, ran)
	if args == nil {
		c.out.emit(events.TypeArgs, json.RawMessage(`{"args_omitted":true}`))
		return
	}
	// Prepared arguments are valid JSON: written around, not marshalled
	// (one copy, however large they are).
	data := make(json.RawMessage, 0, len(args)+len(`{"args":}`))
	data = append(append(append(data, `{"args":`...), args...), '}')
	c.out.emit(events.TypeArgs, data)
}

// withoutPresets returns args without the tool's presets: values set by
// code that the model must not see, and that events therefore never
// carry (the start event carries the model's arguments, which have none).
// nil when args are not a JSON object that can be read, so that a preset
// never leaks through a parse it could not follow.
func withoutPresets(t *Tool, args json.RawMessage) json.RawMessage {
	if len(t.presetVals) == 0 {
		return args
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	out := []byte{'{'}
	for dec.More() {
		tok, err := dec.Token()
		key, isKey := tok.(string)
		var val json.RawMessage
		if err != nil || !isKey || dec.Decode(&val) != nil {
			return nil
		}
		if _, preset := t.presetVals[key]; preset {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		k, _ := json.Marshal(key)
		out = append(append(append(out, k...), ':'), val...)
	}
	return append(out, '}')
}
