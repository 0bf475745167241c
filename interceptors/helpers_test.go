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
		func(ctx context.Context, _ json.RawMessage) ([]events.Part, error) {
			s, err := fn(ctx)
			if err != nil || s == "" {
				return nil, err
			}
			return []events.Part{events.Text(s)}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return tool
}
