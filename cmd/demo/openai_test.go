package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/toolstream/toolstream/toolkit"
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

func (f *fakeOpenAI) model(t *testing.T) *openAIModel {
	t.Helper()
	m, err := newOpenAIModel(openAIConfig{
		Model: "test-model", BaseURL: f.srv.URL + "/v1", APIKey: "sk-test", HTTPClient: f.srv.Client(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// completion is a Chat Completions response with one choice.
func completion(finish string, message string) fakeReply {
	return fakeReply{body: `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"test-model",
		"choices":[{"index":0,"finish_reason":"` + finish + `","message":` + message + `}]}`}
}

var countLines = toolkit.Definition{
	Name:        "count_lines",
	Description: "Count the lines of files.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"dir":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":9007199254740993,"default":100}},"required":["dir"],"additionalProperties":false}`),
}

// TestOpenAIRequestBody checks what goes over the wire: the model, the tools
// with their schemas untouched, and a conversation whose assistant tool
// calls and tool results keep their ids and order.
func TestOpenAIRequestBody(t *testing.T) {
	f := newFakeOpenAI(t, completion("stop", `{"role":"assistant","content":"done"}`))
	m := f.model(t)
	conv := []Message{
		{Role: RoleSystem, Text: "You are careful."},
		{Role: RoleUser, Text: "Count the lines."},
		{Role: RoleAssistant, Text: "Counting.", Calls: []toolkit.Call{
			{ID: "call_a", Name: "count_lines", Args: json.RawMessage(`{"dir":"."}`)},
			{ID: "call_b", Name: "reset_tools"},
		}},
		{Role: RoleTool, CallID: "call_a", Text: "42 lines"},
		{Role: RoleTool, CallID: "call_b", Text: "Error: nothing changed"},
	}
	reset := toolkit.Definition{Name: "reset_tools", Parameters: json.RawMessage(`{"type":"object"}`)}
	if _, err := m.Next(t.Context(), conv, []toolkit.Definition{countLines, reset}); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	if got := f.headers[0].Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q", got)
	}
	var body struct {
		Model    string           `json:"model"`
		Tools    []map[string]any `json:"tools"`
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal(reqs[0], &body); err != nil {
		t.Fatalf("request body: %v\n%s", err, reqs[0])
	}
	if body.Model != "test-model" {
		t.Errorf("model = %q", body.Model)
	}
	wantTools := []map[string]any{
		{"type": "function", "function": map[string]any{
			"name": "count_lines", "description": "Count the lines of files.", "parameters": jsonValue(t, countLines.Parameters)}},
		{"type": "function", "function": map[string]any{
			"name": "reset_tools", "parameters": map[string]any{"type": "object"}}},
	}
	// Exact integers: decoding the schema into float64 would change this one.
	if !strings.Contains(string(reqs[0]), `"maximum":9007199254740993`) {
		t.Errorf("schema numbers changed on the way: %s", reqs[0])
	}
	if !reflect.DeepEqual(body.Tools, wantTools) {
		t.Errorf("tools:\n got %v\nwant %v", body.Tools, wantTools)
	}
	wantMessages := []map[string]any{
		{"role": "system", "content": "You are careful."},
		{"role": "user", "content": "Count the lines."},
		{"role": "assistant", "content": "Counting.", "tool_calls": []any{
			map[string]any{"id": "call_a", "type": "function", "function": map[string]any{"name": "count_lines", "arguments": `{"dir":"."}`}},
			map[string]any{"id": "call_b", "type": "function", "function": map[string]any{"name": "reset_tools", "arguments": `{}`}},
		}},
		{"role": "tool", "tool_call_id": "call_a", "content": "42 lines"},
		{"role": "tool", "tool_call_id": "call_b", "content": "Error: nothing changed"},
	}
	if !reflect.DeepEqual(body.Messages, wantMessages) {
		t.Errorf("messages:\n got %v\nwant %v", body.Messages, wantMessages)
	}
}

// TestOpenAIAssistantWithoutText checks that an assistant message with
// calls and no words sends no content at all, and that one with neither
// still sends an (empty) content, which the API requires.
func TestOpenAIAssistantWithoutText(t *testing.T) {
	msgs, err := openAIMessages([]Message{
		{Role: RoleAssistant, Calls: []toolkit.Call{{ID: "c1", Name: "now", Args: json.RawMessage(`{}`)}}},
		{Role: RoleAssistant},
	})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got[0]["content"]; ok {
		t.Errorf("assistant message with calls only has content: %s", raw)
	}
	if c, ok := got[1]["content"]; !ok || c != "" {
		t.Errorf("empty assistant message: content = %v, %v: %s", c, ok, raw)
	}
}

func jsonValue(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestOpenAIParallelToolCalls parses a response with two tool calls, one of
// them without arguments.
func TestOpenAIParallelToolCalls(t *testing.T) {
	f := newFakeOpenAI(t, completion("tool_calls", `{"role":"assistant","content":null,"tool_calls":[
		{"id":"call_1","type":"function","function":{"name":"count_lines","arguments":"{\"dir\":\"cmd\"}"}},
		{"id":"call_2","type":"function","function":{"name":"now","arguments":""}}]}`))
	turn, err := f.model(t).Next(t.Context(), []Message{{Role: RoleUser, Text: "go"}}, []toolkit.Definition{countLines})
	if err != nil {
		t.Fatal(err)
	}
	want := []toolkit.Call{
		{ID: "call_1", Name: "count_lines", Args: json.RawMessage(`{"dir":"cmd"}`)},
		{ID: "call_2", Name: "now", Args: json.RawMessage(`{}`)},
	}
	if !reflect.DeepEqual(turn.Calls, want) {
		t.Errorf("calls:\n got %s\nwant %s", callsString(turn.Calls), callsString(want))
	}
	if turn.Text != "" {
		t.Errorf("text = %q, want none", turn.Text)
	}
}

func callsString(calls []toolkit.Call) string {
	var b strings.Builder
	for _, c := range calls {
		b.WriteString(c.ID + " " + c.Name + " " + string(c.Args) + "; ")
	}
	return b.String()
}

// TestOpenAIMalformedArguments checks that broken arguments reach the
// toolkit as the model wrote them (it tells the model what is wrong), and
// that a call without an id gets one, so the result can be matched to it.
func TestOpenAIMalformedArguments(t *testing.T) {
	f := newFakeOpenAI(t, completion("tool_calls", `{"role":"assistant","tool_calls":[
		{"type":"function","function":{"name":"count_lines","arguments":"{\"dir\": "}}]}`))
	turn, err := f.model(t).Next(t.Context(), []Message{{Role: RoleUser, Text: "go"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(turn.Calls) != 1 || string(turn.Calls[0].Args) != `{"dir": ` {
		t.Fatalf("calls = %s", callsString(turn.Calls))
	}
	if !strings.HasPrefix(turn.Calls[0].ID, "call_") {
		t.Errorf("id = %q, want a generated one", turn.Calls[0].ID)
	}
	var body map[string]any
	if err := json.Unmarshal(f.requests()[0], &body); err != nil {
		t.Fatal(err)
	}
	if _, ok := body["tools"]; ok {
		t.Errorf("request without tools has a tools field: %s", f.requests()[0])
	}
}

// TestOpenAITextOnly parses an answer without tool calls: the end of the
// agent loop.
func TestOpenAITextOnly(t *testing.T) {
	f := newFakeOpenAI(t, completion("stop", `{"role":"assistant","content":"The repository has 42 lines."}`))
	turn, err := f.model(t).Next(t.Context(), []Message{{Role: RoleUser, Text: "go"}}, []toolkit.Definition{countLines})
	if err != nil {
		t.Fatal(err)
	}
	if turn.Text != "The repository has 42 lines." || len(turn.Calls) != 0 || turn.Note != "" {
		t.Errorf("turn = %+v", turn)
	}
}

// TestOpenAIErrors checks that API failures come back as errors that name
// the status and the server's message, and that the SDK's retries apply
// to 5xx only.
func TestOpenAIErrors(t *testing.T) {
	// Retry-After-Ms keeps the SDK's retries fast.
	fast := map[string]string{"Retry-After-Ms": "1"}
	tests := []struct {
		name     string
		reply    fakeReply
		want     []string
		attempts int
	}{
		{"401", fakeReply{status: 401, header: fast,
			body: `{"error":{"message":"Incorrect API key provided: sk-te**st.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`},
			[]string{"401", "Incorrect API key provided", "invalid_api_key", "test-model"}, 1},
		{"500", fakeReply{status: 500, header: fast,
			body: `{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`},
			[]string{"500", "The server had an error"}, 3},
		{"502 not JSON", fakeReply{status: 502, header: fast, body: "<html>Bad Gateway</html>"},
			[]string{"502", "Bad Gateway"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeOpenAI(t, tt.reply)
			_, err := f.model(t).Next(t.Context(), []Message{{Role: RoleUser, Text: "go"}}, nil)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if n := len(f.requests()); n != tt.attempts {
				t.Errorf("%d requests, want %d", n, tt.attempts)
			}
		})
	}
	t.Run("errors.As", func(t *testing.T) {
		f := newFakeOpenAI(t, fakeReply{status: 401, body: `{"error":{"message":"no"}}`})
		_, err := f.model(t).Next(t.Context(), nil, nil)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
			t.Errorf("errors.As(%v) = %v", err, apiErr)
		}
	})
}

// TestOpenAIRetriesThenAnswers checks that a transient 5xx is retried by
// the SDK and the turn still comes back.
func TestOpenAIRetriesThenAnswers(t *testing.T) {
	f := newFakeOpenAI(t,
		fakeReply{status: 503, header: map[string]string{"Retry-After-Ms": "1"}, body: `{"error":{"message":"busy"}}`},
		completion("stop", `{"role":"assistant","content":"ok"}`))
	turn, err := f.model(t).Next(t.Context(), []Message{{Role: RoleUser, Text: "go"}}, nil)
	if err != nil || turn.Text != "ok" {
		t.Fatalf("turn %+v, err %v", turn, err)
	}
	if n := len(f.requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

// TestOpenAICancelled checks that a cancelled context ends the request with
// the context's error.
func TestOpenAICancelled(t *testing.T) {
	f := newFakeOpenAI(t, completion("stop", `{"role":"assistant","content":"late"}`))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := f.model(t).Next(ctx, []Message{{Role: RoleUser, Text: "go"}}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// TestOpenAIBadInput checks the errors found before any request is sent.
func TestOpenAIBadInput(t *testing.T) {
	if _, err := newOpenAIModel(openAIConfig{APIKey: "k"}); err == nil {
		t.Error("no error without a model")
	}
	if _, err := newOpenAIModel(openAIConfig{Model: "m"}); err == nil {
		t.Error("no error without an API key")
	}
	if _, err := newOpenAIModel(openAIConfig{Model: "m", APIKey: "k", BaseURL: "localhost:8080"}); err == nil {
		t.Error("no error for a base URL without a scheme")
	}
	if _, err := openAIMessages([]Message{{Role: RoleTool, Text: "x"}}); err == nil {
		t.Error("no error for a tool message without a call id")
	}
	if _, err := openAITools([]toolkit.Definition{{Name: "x", Parameters: json.RawMessage(`[1]`)}}); err == nil {
		t.Error("no error for parameters that are not an object")
	}
}

// TestOpenAIEnv checks that flags win over the environment and that a
// missing model or key is explained.
func TestOpenAIEnv(t *testing.T) {
	t.Setenv("OPENAI_MODEL", "env-model")
	t.Setenv("OPENAI_BASE_URL", "http://env.example/v1")
	t.Setenv("OPENAI_API_KEY", "env-key")

	cfg, ok, why := openAIFromEnv("", "", "")
	want := openAIConfig{Model: "env-model", BaseURL: "http://env.example/v1", APIKey: "env-key"}
	if !ok || why != "" || cfg != want {
		t.Errorf("from env: %+v, %v, %q", cfg, ok, why)
	}
	cfg, ok, _ = openAIFromEnv("flag-model", "http://flag.example/v1", "flag-key")
	want = openAIConfig{Model: "flag-model", BaseURL: "http://flag.example/v1", APIKey: "flag-key"}
	if !ok || cfg != want {
		t.Errorf("flags: %+v, %v", cfg, ok)
	}

	t.Setenv("OPENAI_API_KEY", "")
	if _, ok, why := openAIFromEnv("", "", ""); ok || !strings.Contains(why, "no API key") || !strings.Contains(why, "OPENAI_API_KEY") {
		t.Errorf("no key: %v, %q", ok, why)
	}
	if _, ok, _ := openAIFromEnv("", "", "flag-key"); !ok {
		t.Error("key from the flag not used")
	}
	t.Setenv("OPENAI_MODEL", "")
	if _, ok, why := openAIFromEnv("", "", "k"); ok || !strings.Contains(why, "no model") {
		t.Errorf("no model: %v, %q", ok, why)
	}
	if _, ok, why := openAIFromEnv("", "", ""); ok || !strings.Contains(why, "no API key and no model") {
		t.Errorf("nothing: %v, %q", ok, why)
	}
}
