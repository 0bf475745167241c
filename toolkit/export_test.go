package toolkit

import (
	"context"
	"encoding/json"

	"github.com/toolstream/toolstream/events"
)

// PreparedForTest runs the argument pass as the engine does before a call
// and returns the canonical bytes and, for typed tools, the input the
// handler would get.
func PreparedForTest(t *Tool, raw json.RawMessage) (json.RawMessage, any, error) {
	p, err := t.prepare(raw)
	if err != nil {
		return nil, nil, err
	}
	return p.bytes(), p.in, nil
}

// InvokeForTest runs the tool's handler on prepared arguments.
func InvokeForTest(ctx context.Context, t *Tool, raw json.RawMessage) ([]events.Part, error) {
	p, err := t.prepare(raw)
	if err != nil {
		return nil, err
	}
	one, parts, err := t.invoke(ctx, p)
	if !one.IsEmpty() {
		parts = append([]events.Part{one}, parts...)
	}
	return parts, err
}

// SetTracerForTest swaps the toolkit's tracer between batches, so that one
// toolkit can be timed with and without one (no batch may be running).
func SetTracerForTest(tk *Toolkit, t tracer) { tk.opts.tracer = t }

// ParentOf returns the toolkit tk was derived from, or nil.
func ParentOf(tk *Toolkit) *Toolkit { return tk.family.parent }

// SubmitInTwoForTest makes Session.Submit's first look (and the output
// check) now and returns its second look, to run later: a test does
// something to the call in between, where no caller's code runs in Submit.
func SubmitInTwoForTest(s *Session, callID string, content []events.Part, err error) (second func() error) {
	c, ok, cerr := s.submitLook(callID, content, err)
	return func() error {
		if cerr != nil {
			return cerr
		}
		return s.submitTake(callID, c, ok, content, err)
	}
}
