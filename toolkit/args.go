package toolkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/schema"
)

// PrepareArgs turns a model's arguments into what the handler receives, as
// the engine does before every call: parsed, presets applied, optional nulls
// dropped, defaults filled in, integral numbers written 2.0 or 1e2 rewritten
// as integers, and validated against the full schema. The original bytes are
// returned when nothing had to change. Arguments that a model encoded twice
// (a JSON string holding the object) are unwrapped. Errors are
// *ArgumentError.
func (t *Tool) PrepareArgs(raw json.RawMessage) (json.RawMessage, error) {
	if t.args == nil { // the placeholder of an unknown call
		return nil, &UnknownToolError{Name: t.spec.Name}
	}
	p, err := t.prepare(raw)
	if err != nil {
		return nil, err
	}
	return p.bytes(), nil
}

// prepared are arguments ready for a handler, made in one pass over the
// model's bytes: the canonical JSON and, for typed tools, the input value.
type prepared struct {
	args schema.Prepared
	in   any // typed tools: the *In the pass filled, owned by one handler run
}

// bytes returns the canonical arguments, exactly what a raw handler gets and
// what a typed handler's input decodes from: the model's own bytes when
// nothing changed them (not a copy), else a new text, made on each call.
func (p prepared) bytes() json.RawMessage { return p.args.Bytes() }

// prepare runs the argument pass: decode, presets, null pruning, defaults,
// validation, integer canonicalisation and, for typed tools, the input
// value, at once. Errors are *ArgumentError.
func (t *Tool) prepare(raw json.RawMessage) (prepared, error) {
	var p prepared
	if t.newIn != nil {
		p.in = t.newIn()
	}
	args, probs, err := t.args.Prepare(raw, p.in)
	if err != nil {
		if de := (*schema.DecodeError)(nil); !errors.As(err, &de) {
			// Decode errors say what the schema accepted but Go cannot hold.
			err = fmt.Errorf("arguments are not valid JSON: %w", err)
		}
		return prepared{}, &ArgumentError{Tool: t.spec.Name, Err: err}
	}
	if probs != nil {
		return prepared{}, &ArgumentError{Tool: t.spec.Name, Problems: probs}
	}
	p.args = args
	return p, nil
}

// invoke runs the handler on prepared arguments: typed tools get the input
// the pass filled, raw tools the canonical bytes.
func (t *Tool) invoke(ctx context.Context, p prepared) (events.Part, []events.Part, error) {
	if t.typed != nil {
		return t.typed(ctx, p.in)
	}
	parts, err := t.handler(ctx, p.bytes())
	return events.Part{}, parts, err
}
