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

// SetSubmitHooksForTest sets the hooks of the race between Session.Submit and
// the end of an external call's wait (nil to clear them).
func SetSubmitHooksForTest(taken, extTakenFn func()) { submitTaken, extTaken = taken, extTakenFn }

// SetSubmitCheckedHookForTest sets the hook that runs in Session.Submit
// between its first look for the call and its second (nil to clear it).
func SetSubmitCheckedHookForTest(f func()) { submitChecked = f }

// SetRunnerHookForTest sets the hook that runs in a stage's runner with the
// call it is about to take, before it takes it from the queue (claimed
// false) and just before the call begins (claimed true); nil clears it.
func SetRunnerHookForTest(f func(c context.Context, claimed bool)) {
	if f == nil {
		runnerHook.Store(nil)
		return
	}
	runnerHook.Store(&f)
}

// ParentOf returns the toolkit tk was derived from, or nil.
func ParentOf(tk *Toolkit) *Toolkit { return tk.family.parent }
