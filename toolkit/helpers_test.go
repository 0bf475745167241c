package toolkit_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/leak"
	"github.com/toolstream/toolstream/toolkit"
)

func TestMain(m *testing.M) {
	leak.VerifyTestMain(m)
}

// newKit returns a toolkit closed at the end of the test.
func newKit(t testing.TB, opts ...toolkit.Option) *toolkit.Toolkit {
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

func session(t testing.TB, tk *toolkit.Toolkit, id string) *toolkit.Session {
	t.Helper()
	s, err := tk.Session(id)
	if err != nil {
		t.Fatalf("Session(%q): %v", id, err)
	}
	return s
}

func mustAdd(t testing.TB, tk *toolkit.Toolkit, tools ...*toolkit.Tool) {
	t.Helper()
	if err := tk.Register(tools); err != nil {
		t.Fatal(err)
	}
}

func mustTool[In, Out any](t testing.TB, spec toolkit.Spec, fn func(context.Context, In) (Out, error)) *toolkit.Tool {
	t.Helper()
	tool, err := toolkit.NewTool(spec, fn)
	if err != nil {
		t.Fatalf("NewTool(%s): %v", spec.Name, err)
	}
	return tool
}

func call(id, name, args string) toolkit.Call {
	return toolkit.Call{ID: id, Name: name, Args: json.RawMessage(args)}
}

// recorder is an observer that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []*events.Event
}

func (r *recorder) Observe(ev *events.Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

func (r *recorder) all() []*events.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*events.Event(nil), r.events...)
}

// of returns the events of one call, in arrival order.
func (r *recorder) of(callID string) []*events.Event {
	var out []*events.Event
	for _, ev := range r.all() {
		if ev.Call == callID {
			out = append(out, ev)
		}
	}
	return out
}

func types(evs []*events.Event) []events.Type {
	out := make([]events.Type, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

// deltas concatenates the delta events of one call.
func deltas(evs []*events.Event) []events.Part {
	var out []events.Part
	for _, ev := range evs {
		if ev.Type == events.TypeDelta {
			out = events.ApplyDelta(out, ev)
		}
	}
	return out
}

// checkDeltasAddUp fails the test unless the delta events of r's call add
// up to its result.
func checkDeltasAddUp(t testing.TB, rec *recorder, r toolkit.Result) {
	t.Helper()
	if got := events.ContentText(deltas(rec.of(r.Call.ID))); got != r.Text() {
		t.Fatalf("deltas add up to %q, result is %q", got, r.Text())
	}
}

// waitFor fails the test if ch is not closed within a generous bound: the
// bound only turns a hang into a failure, it never decides an outcome.
func waitFor(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func resultByID(rs []toolkit.Result, id string) toolkit.Result {
	for _, r := range rs {
		if r.Call.ID == id {
			return r
		}
	}
	return toolkit.Result{}
}
