// Package testutil holds the helpers the project's tests share: a toolkit
// closed at the end of the test, a recorder of events, and checks of the
// rules every call must keep (deltas add up to the result, every event on
// the wire validates against docs/events.schema.json).
package testutil

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// Kit returns a toolkit closed at the end of the test.
func Kit(t testing.TB, opts ...toolkit.Option) *toolkit.Toolkit {
	t.Helper()
	tk := toolkit.New(opts...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tk.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return tk
}

// Session returns the session id of tk, failing the test on error.
func Session(t testing.TB, tk *toolkit.Toolkit, id string) *toolkit.Session {
	t.Helper()
	s, err := tk.Session(id)
	if err != nil {
		t.Fatalf("Session(%q): %v", id, err)
	}
	return s
}

// Add registers tools, failing the test on error.
func Add(t testing.TB, tk *toolkit.Toolkit, tools ...*toolkit.Tool) {
	t.Helper()
	if err := tk.Add(tools...); err != nil {
		t.Fatal(err)
	}
}

// Call makes a call with arguments given as a JSON string.
func Call(id, name, args string) toolkit.Call {
	return toolkit.Call{ID: id, Name: name, Args: json.RawMessage(args)}
}

// Run runs calls in session id of tk and returns their results in call
// order.
func Run(t testing.TB, tk *toolkit.Toolkit, id string, calls ...toolkit.Call) []toolkit.Result {
	t.Helper()
	return Session(t, tk, id).Run(context.Background(), calls)
}

// ResultByID returns the result of the call with the given id, or the zero
// Result.
func ResultByID(rs []toolkit.Result, id string) toolkit.Result {
	for _, r := range rs {
		if r.Call.ID == id {
			return r
		}
	}
	return toolkit.Result{}
}

// Tool makes a typed tool, failing the test on error.
func Tool[In, Out any](t testing.TB, spec toolkit.Spec, fn func(context.Context, In) (Out, error)) *toolkit.Tool {
	t.Helper()
	tool, err := toolkit.NewTool(spec, fn)
	if err != nil {
		t.Fatalf("NewTool(%s): %v", spec.Name, err)
	}
	return tool
}

// WaitFor fails the test if ch is not closed within a generous bound: the
// bound only turns a hang into a failure, it never decides an outcome.
func WaitFor(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// Recorder is an observer that keeps every event. It also encodes each
// event as it would go on the wire and checks it against
// docs/events.schema.json: Final, CheckDeltasAddUp and Check fail the test
// if one did not validate.
type Recorder struct {
	mu      sync.Mutex
	events  []*events.Event
	invalid []error
}

// Observe implements toolkit.Observer.
func (r *Recorder) Observe(ev *events.Event) {
	err := ValidateEvent(events.AppendJSON(nil, ev))
	r.mu.Lock()
	r.events = append(r.events, ev)
	if err != nil && len(r.invalid) < 10 {
		r.invalid = append(r.invalid, fmt.Errorf("%s event %d of call %q: %w", ev.Type, ev.Seq, ev.Call, err))
	}
	r.mu.Unlock()
}

// Check fails the test if an event the recorder saw does not validate
// against docs/events.schema.json.
func (r *Recorder) Check(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, err := range r.invalid {
		t.Errorf("an event does not validate against docs/events.schema.json: %v", err)
	}
}

// All returns the events so far, in arrival order.
func (r *Recorder) All() []*events.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*events.Event(nil), r.events...)
}

// Reset forgets the events so far.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.events = nil
	r.mu.Unlock()
}

// Of returns the events of one call, in arrival order.
func (r *Recorder) Of(callID string) []*events.Event {
	var out []*events.Event
	for _, ev := range r.All() {
		if ev.Call == callID {
			out = append(out, ev)
		}
	}
	return out
}

// OfType returns the events of one type, in arrival order.
func (r *Recorder) OfType(typ events.Type) []*events.Event {
	var out []*events.Event
	for _, ev := range r.All() {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// Content rebuilds one call's content from its delta events, as a consumer
// of the events would.
func (r *Recorder) Content(callID string) []events.Part {
	return Deltas(r.Of(callID))
}

// Final returns the content of one call's result event.
func (r *Recorder) Final(t testing.TB, callID string) []events.Part {
	t.Helper()
	r.Check(t)
	for _, ev := range r.Of(callID) {
		if ev.Type == events.TypeResult {
			return ev.Result.Content
		}
	}
	t.Fatalf("no result event for call %q", callID)
	return nil
}

// DeltaTexts returns the text of each delta event of a call.
func (r *Recorder) DeltaTexts(callID string) []string {
	var out []string
	for _, ev := range r.Of(callID) {
		if ev.Type == events.TypeDelta {
			out = append(out, ev.Delta.String())
		}
	}
	return out
}

// Types returns the types of evs.
func Types(evs []*events.Event) []events.Type {
	out := make([]events.Type, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

// Deltas adds up the delta events among evs (chunks too).
func Deltas(evs []*events.Event) []events.Part {
	var r events.Reassembler
	for _, ev := range evs {
		_ = r.Add(ev) // a broken run of chunks shows as content that differs
	}
	return r.Content()
}

// CheckDeltasAddUp fails the test unless the delta events rec saw of res's
// call add up to res's content, and to the content of its result event.
func CheckDeltasAddUp(t testing.TB, rec *Recorder, res toolkit.Result) {
	t.Helper()
	rec.Check(t)
	got := events.ContentText(rec.Content(res.Call.ID))
	if want := res.Text(); got != want {
		t.Fatalf("call %s: deltas add up to %q, the result is %q", res.Call.ID, head(got), head(want))
	}
	if final := events.ContentText(rec.Final(t, res.Call.ID)); got != final {
		t.Fatalf("call %s: deltas add up to %q, the result event has %q", res.Call.ID, head(got), head(final))
	}
}

func head(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

var eventSchema = sync.OnceValues(func() (*jsonschema.Resolved, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return nil, errors.New("testutil: cannot locate docs/events.schema.json")
	}
	path := filepath.Join(filepath.Dir(file), "..", "..", "docs", "events.schema.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("testutil: the event schema: %w", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("testutil: %s: %w", path, err)
	}
	return s.Resolve(nil)
})

// ValidateEvent checks one encoded event (a NATS message's data) against
// docs/events.schema.json, the published schema of the wire.
func ValidateEvent(data []byte) error {
	rs, err := eventSchema()
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if err := rs.Validate(v); err != nil {
		return fmt.Errorf("%w\n%s", err, head(string(data)))
	}
	return nil
}

// CheckEvent fails the test (without stopping it: collectors call it from
// subscription callbacks) unless data is a valid event by
// docs/events.schema.json.
func CheckEvent(t testing.TB, data []byte) {
	t.Helper()
	if err := ValidateEvent(data); err != nil {
		t.Errorf("an event does not validate against docs/events.schema.json: %v", err)
	}
}

// SyncBuffer is a bytes.Buffer that goroutines (a logger, a process's
// output) can write to while a test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
