package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// fakeOpenAI is a Chat Completions server: it records each request body and
// answers with the next canned reply (the last one repeats).
type fakeOpenAI struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	replies []fakeReply
}

type fakeReply struct {
	status int
	header map[string]string
	body   string
}

func newFakeOpenAI(t *testing.T, replies ...fakeReply) *fakeOpenAI {
	t.Helper()
	f := &fakeOpenAI{t: t, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	// Close also closes the idle connections of f.srv.Client(), which the
	// models under test use: no goroutine outlives the test.
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeOpenAI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.bodies)
	f.bodies = append(f.bodies, body)
	f.headers = append(f.headers, r.Header.Clone())
	reply := f.replies[min(n, len(f.replies)-1)]
	f.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	for k, v := range reply.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(orDefault(reply.status, http.StatusOK))
	io.WriteString(w, reply.body)
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func (f *fakeOpenAI) requests() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.bodies...)
}

// completion is a Chat Completions response with one choice.
func completion(finish string, message string) fakeReply {
	return fakeReply{body: `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"test-model",
		"choices":[{"index":0,"finish_reason":"` + finish + `","message":` + message + `}]}`}
}
