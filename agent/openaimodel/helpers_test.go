package openaimodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/toolkit"
)

// fakeServer is an OpenAI API in the test: it records every request and
// answers with the next scripted reply (the last one repeats).
type fakeServer struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	reqs    []recorded
	replies []http.HandlerFunc
}

type recorded struct {
	method, path string
	header       http.Header
	body         []byte
}

func newServer(t *testing.T, replies ...http.HandlerFunc) *fakeServer {
	t.Helper()
	f := &fakeServer{t: t, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	// Close also closes the idle connections of f.srv.Client(), which the
	// SDK uses: no goroutine outlives the test.
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.reqs)
	f.reqs = append(f.reqs, recorded{r.Method, r.URL.Path, r.Header.Clone(), body})
	reply := f.replies[min(n, len(f.replies)-1)]
	f.mu.Unlock()
	reply(w, r)
}

func (f *fakeServer) client() openai.Client {
	return openai.NewClient(option.WithBaseURL(f.srv.URL+"/v1"), option.WithAPIKey("sk-test"),
		option.WithHTTPClient(f.srv.Client()))
}

func (f *fakeServer) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// only returns the one request the server got, failing otherwise.
func (f *fakeServer) only() recorded {
	f.t.Helper()
	reqs := f.requests()
	if len(reqs) != 1 {
		f.t.Fatalf("%d requests, want 1", len(reqs))
	}
	return reqs[0]
}

// decode returns a request body as generic JSON (numbers kept exact).
func decode(t *testing.T, body []byte) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var v map[string]any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("request body: %v\n%s", err, body)
	}
	return v
}

// jsonValue decodes a JSON literal written in a test the way decode does.
func jsonValue(t *testing.T, s string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return v
}

// sse answers with Server-Sent Events, one data line each, flushed one by
// one. An event that is a JSON object with a "type" also gets an event
// line, as the Responses API writes them.
func sse(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, ev := range events {
			writeEvent(w, ev)
		}
	}
}

func writeEvent(w http.ResponseWriter, ev string) {
	var typed struct {
		Type string `json:"type"`
	}
	if json.Unmarshal([]byte(ev), &typed) == nil && typed.Type != "" {
		fmt.Fprintf(w, "event: %s\n", typed.Type)
	}
	fmt.Fprintf(w, "data: %s\n\n", ev)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
}

// reply answers with a status, headers and a JSON (or other) body.
func reply(status int, header map[string]string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// streamed returns a request for msgs and tools whose chunks are recorded.
func streamed(msgs []agent.Message, tools ...toolkit.Definition) (*agent.Request, *[]agent.Chunk) {
	var chunks []agent.Chunk
	req := &agent.Request{Messages: msgs, Tools: tools, Stream: func(c agent.Chunk) { chunks = append(chunks, c) }}
	return req, &chunks
}

func userText(s string) []agent.Message { return []agent.Message{agent.UserText(s)} }

// checkChunks holds chunks to the contract against the reply they made:
// the text chunks add up to the text; each call has exactly one ChunkCall,
// with its final id and name, before any of its ChunkArgs; its ChunkArgs
// add up to its arguments ({} standing for none).
func checkChunks(t testing.TB, chunks []agent.Chunk, reply *agent.Reply) {
	t.Helper()
	var text strings.Builder
	announced := map[int]bool{}
	args := map[int]*strings.Builder{}
	for i, c := range chunks {
		switch c.Kind {
		case agent.ChunkText:
			text.WriteString(c.Text)
		case agent.ChunkCall:
			if announced[c.Index] {
				t.Fatalf("chunk %d: call %d announced twice", i, c.Index)
			}
			announced[c.Index] = true
			args[c.Index] = &strings.Builder{}
			if c.Index >= len(reply.Calls) {
				t.Fatalf("chunk %d: call %d announced, the reply has %d calls", i, c.Index, len(reply.Calls))
			}
			if got := reply.Calls[c.Index]; got.ID != c.CallID || got.Name != c.Name {
				t.Fatalf("chunk %d announces %s %s, the reply's call %d is %s %s", i, c.CallID, c.Name, c.Index, got.ID, got.Name)
			}
		case agent.ChunkArgs:
			if !announced[c.Index] {
				t.Fatalf("chunk %d: arguments of call %d before its ChunkCall", i, c.Index)
			}
			args[c.Index].WriteString(c.Text)
		default:
			t.Fatalf("chunk %d: kind %d", i, c.Kind)
		}
	}
	if text.String() != reply.Text {
		t.Fatalf("text chunks add up to %q, reply text %q", text.String(), reply.Text)
	}
	for i, call := range reply.Calls {
		if !announced[i] {
			t.Fatalf("call %d (%s) never announced", i, call.ID)
		}
		got := args[i].String()
		if got == "" && strings.TrimSpace(got) == "" && string(call.Args) == "{}" {
			continue
		}
		if got != string(call.Args) && !(strings.TrimSpace(got) == "" && string(call.Args) == "{}") {
			t.Fatalf("call %d: argument chunks add up to %q, reply has %q", i, got, call.Args)
		}
	}
}
