package interceptors_test

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

// icKit returns a toolkit with the given interceptors, closed at the end
// of the test.
func icKit(t testing.TB, opts []toolkit.Option, ics ...toolkit.Interceptor) *toolkit.Toolkit {
	t.Helper()
	tk := toolkit.New(opts...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tk.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if err := tk.Use(ics...); err != nil {
		t.Fatal(err)
	}
	return tk
}

func icAdd(t testing.TB, tk *toolkit.Toolkit, tools ...*toolkit.Tool) {
	t.Helper()
	if err := tk.Register(tools); err != nil {
		t.Fatal(err)
	}
}

func icSession(t testing.TB, tk *toolkit.Toolkit, id string) *toolkit.Session {
	t.Helper()
	s, err := tk.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func icCall(id, name, args string) toolkit.Call {
	return toolkit.Call{ID: id, Name: name, Args: json.RawMessage(args)}
}

// icRun runs one call in a session and returns its result.
func icRun(t testing.TB, s *toolkit.Session, c toolkit.Call) toolkit.Result {
	t.Helper()
	return s.Run(context.Background(), []toolkit.Call{c})[0]
}

// icCounter counts how often something ran, safely across goroutines.
type icCounter struct {
	mu sync.Mutex
	n  int
}

func (c *icCounter) inc() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.n
}

func (c *icCounter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// icTool makes a tool of a function of the call's context only.
func icTool(t testing.TB, spec toolkit.Spec, fn func(ctx context.Context) (string, error)) *toolkit.Tool {
	t.Helper()
	tool, err := toolkit.NewRawTool(spec, json.RawMessage(`{"type":"object"}`),
		func(ctx context.Context, _ json.RawMessage) ([]toolkit.Part, error) {
			s, err := fn(ctx)
			if err != nil || s == "" {
				return nil, err
			}
			return []toolkit.Part{events.Text(s)}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

// icRecorder keeps every event, to rebuild what observers saw.
type icRecorder struct {
	mu  sync.Mutex
	evs []*events.Event
}

func (r *icRecorder) Observe(ev *events.Event) {
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
}

// content rebuilds one call's result from its delta events.
func (r *icRecorder) content(callID string) []events.Part {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []events.Part
	for _, ev := range r.evs {
		if ev.Call == callID && ev.Type == events.TypeDelta {
			out = events.ApplyDelta(out, ev)
		}
	}
	return out
}

// final returns the content of one call's result event.
func (r *icRecorder) final(t testing.TB, callID string) []events.Part {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range r.evs {
		if ev.Call == callID && ev.Type == events.TypeResult {
			return ev.Result.Content
		}
	}
	t.Fatalf("no result event for call %q", callID)
	return nil
}

// deltas returns the text of each delta event of a call.
func (r *icRecorder) deltas(callID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.evs {
		if ev.Call == callID && ev.Type == events.TypeDelta {
			out = append(out, ev.Delta.String())
		}
	}
	return out
}

// icWait fails the test if ch does not close soon: the bound only turns a
// hang into a failure.
func icWait(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}
