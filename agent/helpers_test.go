package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

// script is a model that plays fixed steps, one per Generate, and records
// every request it got (a copy: the loop appends to the conversation).
type script struct {
	mu    sync.Mutex
	steps []step
	reqs  []agent.Request
}

// step is one Generate: a reply, streamed in chunks when chunks is set,
// or an error.
type step struct {
	reply  *agent.Reply
	chunks []agent.Chunk
	err    error
	wait   time.Duration // a model's latency; the context can end it
}

func (s *script) Generate(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
	s.mu.Lock()
	cp := *req
	cp.Messages = append([]agent.Message(nil), req.Messages...)
	cp.Stream = nil
	s.reqs = append(s.reqs, cp)
	n := len(s.reqs)
	s.mu.Unlock()
	if n > len(s.steps) {
		return nil, fmt.Errorf("script: request %d, but the script has %d steps", n, len(s.steps))
	}
	st := s.steps[n-1]
	if st.wait > 0 {
		select {
		case <-time.After(st.wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	for _, c := range st.chunks {
		req.Send(c)
	}
	if st.err != nil || st.reply == nil {
		return nil, st.err
	}
	r := *st.reply
	r.Calls = append([]toolkit.Call(nil), st.reply.Calls...)
	return &r, nil
}

func (s *script) requests() []agent.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]agent.Request(nil), s.reqs...)
}

func call(id, name, args string) toolkit.Call {
	return toolkit.Call{ID: id, Name: name, Args: json.RawMessage(args)}
}

// recorder collects a session's events from NATS, in the order the
// subscriber got them, each checked against docs/events.schema.json.
type recorder struct{ testutil.Recorder }

// record subscribes to every event of session on a fresh embedded NATS
// server and returns a toolkit that publishes there.
func record(t *testing.T, session string, opts ...toolkit.Option) (*toolkit.Toolkit, *recorder) {
	t.Helper()
	bus := natstest.Bus(t)
	rec := &recorder{}
	sub, err := bus.Subscribe("toolstream."+events.EncodeToken(session)+".>", rec.Observe)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	tk := toolkit.New(append([]toolkit.Option{toolkit.WithInlineObserver(bus.Publisher())}, opts...)...)
	t.Cleanup(func() { _ = tk.Close(context.Background()) })
	return tk, rec
}

// waitFor waits until an event of type typ has arrived and returns all
// events so far.
func (r *recorder) waitFor(t *testing.T, typ events.Type) []*events.Event {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if len(r.OfType(typ)) > 0 {
			r.Check(t)
			return r.All()
		}
	}
	t.Fatalf("no %s event within 10s", typ)
	return nil
}

// describe writes events one per line, for comparing orders.
func describe(evs []*events.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(string(ev.Type))
		if ev.Call != "" {
			b.WriteString(" " + ev.Call)
		}
		if len(ev.Data) > 0 {
			b.WriteString(" " + string(ev.Data))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func body[T any](t *testing.T, ev *events.Event) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(ev.Data, &v); err != nil {
		t.Fatalf("%s event: %v: %s", ev.Type, err, ev.Data)
	}
	return v
}
