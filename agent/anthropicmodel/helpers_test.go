package anthropicmodel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/agent/anthropicmodel"
	"github.com/toolstream/toolstream/internal/leak"
)

func TestMain(m *testing.M) { leak.VerifyTestMain(m) }

// server is an httptest server that speaks the Messages API: it records
// each request's body and answers with the handler the test gives.
type server struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	paths  []string
}

// newServer starts a server whose n-th request (from 0) is answered by
// respond.
func newServer(t *testing.T, respond func(w http.ResponseWriter, r *http.Request, n int)) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		n := len(s.bodies)
		s.bodies = append(s.bodies, body)
		s.paths = append(s.paths, r.Method+" "+r.URL.Path)
		s.mu.Unlock()
		respond(w, r, n)
	}))
	t.Cleanup(s.Close)
	return s
}

// model returns an adapter whose client talks to s.
func (s *server) model(opts ...anthropicmodel.Option) *anthropicmodel.Model {
	client := anthropic.NewClient(option.WithAPIKey("test-key"), option.WithBaseURL(s.URL))
	return anthropicmodel.New(client, "claude-test-1", opts...)
}

// requests returns how many requests arrived.
func (s *server) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// body decodes request n's JSON body.
func (s *server) body(t *testing.T, n int) map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if n >= len(s.bodies) {
		t.Fatalf("request %d never arrived (%d did)", n, len(s.bodies))
	}
	if s.paths[n] != "POST /v1/messages" {
		t.Errorf("request %d: %s, want POST /v1/messages", n, s.paths[n])
	}
	var m map[string]any
	if err := json.Unmarshal(s.bodies[n], &m); err != nil {
		t.Fatalf("request %d body is not JSON: %v\n%s", n, err, s.bodies[n])
	}
	return m
}

// raw returns request n's body, field by field as raw JSON.
func (s *server) raw(t *testing.T, n int) map[string]json.RawMessage {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(s.bodies[n], &m); err != nil {
		t.Fatalf("request %d body is not JSON: %v", n, err)
	}
	return m
}

// ev is one server-sent event.
type ev struct {
	name string
	data string
}

func event(name string, v any) ev {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return ev{name, string(b)}
}

type obj = map[string]any

func msgStart(model string, input int) ev {
	return event("message_start", obj{"type": "message_start", "message": obj{
		"id": "msg_01", "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": obj{"input_tokens": input, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	}})
}

func textStart(i int) ev {
	return event("content_block_start", obj{"type": "content_block_start", "index": i, "content_block": obj{"type": "text", "text": ""}})
}

func textDelta(i int, s string) ev {
	return event("content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": obj{"type": "text_delta", "text": s}})
}

func toolStart(i int, id, name string) ev {
	cb := obj{"type": "tool_use", "name": name, "input": obj{}}
	if id != "" {
		cb["id"] = id
	}
	return event("content_block_start", obj{"type": "content_block_start", "index": i, "content_block": cb})
}

func jsonDelta(i int, s string) ev {
	return event("content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": obj{"type": "input_json_delta", "partial_json": s}})
}

func blockStop(i int) ev {
	return event("content_block_stop", obj{"type": "content_block_stop", "index": i})
}

func msgDelta(reason string, output int) ev {
	return event("message_delta", obj{"type": "message_delta", "delta": obj{"stop_reason": reason, "stop_sequence": nil}, "usage": obj{"output_tokens": output}})
}

func msgStop() ev { return event("message_stop", obj{"type": "message_stop"}) }

func ping() ev { return event("ping", obj{"type": "ping"}) }

func errorEvent(typ, msg string) ev {
	return event("error", obj{"type": "error", "error": obj{"type": typ, "message": msg}})
}

// writeSSE answers with a 200 event stream of evs, flushing after each.
func writeSSE(w http.ResponseWriter, evs ...ev) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	writeEvents(w, evs...)
}

func writeEvents(w http.ResponseWriter, evs ...ev) {
	f, _ := w.(http.Flusher)
	for _, e := range evs {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.name, e.data)
		if f != nil {
			f.Flush()
		}
	}
}

// writeJSON answers with a JSON body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers with the API's error body.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, obj{"type": "error", "error": obj{"type": typ, "message": msg}, "request_id": "req_test"})
}

// collect gathers the chunks a request streams.
type collect struct {
	mu     sync.Mutex
	chunks []agent.Chunk
}

func (c *collect) send(ch agent.Chunk) {
	c.mu.Lock()
	c.chunks = append(c.chunks, ch)
	c.mu.Unlock()
}

func (c *collect) all() []agent.Chunk {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]agent.Chunk(nil), c.chunks...)
}

// text returns the ChunkText pieces joined, and args the ChunkArgs pieces
// of each call joined.
func (c *collect) text() string {
	var s string
	for _, ch := range c.all() {
		if ch.Kind == agent.ChunkText {
			s += ch.Text
		}
	}
	return s
}

func (c *collect) args() map[int]string {
	m := map[int]string{}
	for _, ch := range c.all() {
		if ch.Kind == agent.ChunkArgs {
			m[ch.Index] += ch.Text
		}
	}
	return m
}

func request(c *collect, msgs ...agent.Message) *agent.Request {
	r := &agent.Request{Messages: msgs}
	if c != nil {
		r.Stream = c.send
	}
	return r
}

// get walks a decoded JSON value: keys for objects, ints for arrays.
func get(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: %T is not an object", path, v)
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("at %v: %v has no item %d", path, v, k)
			}
			v = a[k]
		}
	}
	return v
}

func ctx(t *testing.T) context.Context { return t.Context() }
