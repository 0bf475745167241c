package openaimodel

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// chunk is a chat.completion.chunk with one choice.
func chunk(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
}

// usageChunk is the last chunk when stream_options.include_usage is set.
const usageChunk = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`

// completion is a whole Chat Completions response with one choice.
func completion(finish, message string) http.HandlerFunc {
	return reply(200, nil, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test",
		"choices":[{"index":0,"finish_reason":"`+finish+`","message":`+message+`}],
		"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`)
}

// countLines has an integer a float64 cannot hold: the schema must reach
// the server untouched.
var countLines = toolkit.Definition{
	Name:        "count_lines",
	Description: "Count the lines of files.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"dir":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":9007199254740993,"default":100}},"required":["dir"],"additionalProperties":false}`),
}

var png = []byte("\x89PNG\r\n\x1a\nfake")

// conversation is a history with everything the adapters map: a user
// image, an assistant turn with words and two calls (one without
// arguments), a tool result with an image, a failed one, a binary part no
// API takes.
func conversation() []agent.Message {
	jsonPart, _ := events.JSON(map[string]int{"lines": 42})
	return []agent.Message{
		{Role: agent.RoleUser, Content: []events.Part{events.Text("What is in "), events.Binary("image/png", png), events.Text("?")}},
		{Role: agent.RoleAssistant, Content: []events.Part{events.Text("Counting.")}, Calls: []toolkit.Call{
			{ID: "call_a", Name: "count_lines", Args: json.RawMessage(`{"dir":"."}`)},
			{ID: "call_b", Name: "snapshot"},
		}},
		{Role: agent.RoleTool, CallID: "call_a", Tool: "count_lines", Content: []events.Part{jsonPart, events.Binary("application/pdf", []byte("%PDF"))}},
		{Role: agent.RoleTool, CallID: "call_b", Tool: "snapshot", Content: []events.Part{events.Text("shot: "), events.Binary("image/png", png)}},
		{Role: agent.RoleAssistant, Content: []events.Part{events.Text("Retrying.")}, Calls: []toolkit.Call{
			{ID: "call_c", Name: "count_lines", Args: json.RawMessage(`{"dir":`)},
		}},
		{Role: agent.RoleTool, CallID: "call_c", Tool: "count_lines", IsError: true, Content: []events.Part{events.Text("arguments are not valid JSON")}},
	}
}

const pngURL = "data:image/png;base64,iVBORw0KGgpmYWtl"

// TestChatRequestBody checks what the SDK sends, field by field: the
// model, the stream flags, the system prompt and the messages in order
// with their roles, images as data URLs (a tool result's in a user message
// after the tool messages), call ids, the error said in the text, the
// tools with the toolkit's schema byte for byte, and the options.
func TestChatRequestBody(t *testing.T) {
	f := newServer(t, sse(chunk(`{"role":"assistant","content":"ok"}`, ""), chunk(`{}`, "stop"), usageChunk, "[DONE]"))
	m := NewChat(f.client(), "gpt-test", WithTemperature(0.2), WithMaxTokens(300), WithParallelToolCalls(false))
	snapshot := toolkit.Definition{Name: "snapshot", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}
	req, _ := streamed(conversation(), countLines, snapshot)
	req.System = "You are careful."
	if _, err := m.Generate(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	r := f.only()
	if r.method != http.MethodPost || r.path != "/v1/chat/completions" {
		t.Errorf("%s %s", r.method, r.path)
	}
	if got := r.header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q", got)
	}
	if !strings.Contains(string(r.body), `"parameters":`+string(countLines.Parameters)+`}`) {
		t.Errorf("the schema did not reach the wire byte for byte:\n%s", r.body)
	}
	body := decode(t, r.body)
	want := map[string]any{
		"model":                 "gpt-test",
		"stream":                true,
		"stream_options":        map[string]any{"include_usage": true},
		"temperature":           json.Number("0.2"),
		"max_completion_tokens": json.Number("300"),
		"parallel_tool_calls":   false,
		"tools": []any{
			map[string]any{"type": "function", "function": map[string]any{
				"name": "count_lines", "description": "Count the lines of files.", "parameters": jsonValue(t, string(countLines.Parameters))}},
			map[string]any{"type": "function", "function": map[string]any{
				"name": "snapshot", "parameters": map[string]any{"type": "object", "properties": map[string]any{}}}},
		},
		"messages": []any{
			map[string]any{"role": "system", "content": "You are careful."},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "What is in "},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": pngURL}},
				map[string]any{"type": "text", "text": "?"},
			}},
			map[string]any{"role": "assistant", "content": "Counting.", "tool_calls": []any{
				map[string]any{"id": "call_a", "type": "function", "function": map[string]any{"name": "count_lines", "arguments": `{"dir":"."}`}},
				map[string]any{"id": "call_b", "type": "function", "function": map[string]any{"name": "snapshot", "arguments": `{}`}},
			}},
			map[string]any{"role": "tool", "tool_call_id": "call_a",
				"content": "{\"lines\":42}\n[binary content application/pdf (4 bytes) left out: this model's API cannot take it]"},
			map[string]any{"role": "tool", "tool_call_id": "call_b",
				"content": "shot: [image 1: in the user message after the tool results]"},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "The images of the tool results above (a tool message cannot hold images):"},
				map[string]any{"type": "text", "text": "Result of call call_b (snapshot):"},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": pngURL}},
			}},
			map[string]any{"role": "assistant", "content": "Retrying.", "tool_calls": []any{
				map[string]any{"id": "call_c", "type": "function", "function": map[string]any{"name": "count_lines", "arguments": `{"dir":`}},
			}},
			map[string]any{"role": "tool", "tool_call_id": "call_c", "content": "Error: arguments are not valid JSON"},
		},
	}
	for k, w := range want {
		if !reflect.DeepEqual(body[k], w) {
			t.Errorf("%s:\n got %#v\nwant %#v", k, body[k], w)
		}
	}
	for k := range body {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected field %s: %v", k, body[k])
		}
	}
}

// TestChatMinimalRequest checks that a request without tools or options
// sends none of the fields that need them (the API refuses
// parallel_tool_calls without tools), and that an assistant message with
// calls and no words has no content.
func TestChatMinimalRequest(t *testing.T) {
	f := newServer(t, completion("stop", `{"role":"assistant","content":"hi"}`))
	m := NewChat(f.client(), "gpt-test", WithStreaming(false), WithParallelToolCalls(true))
	msgs := []agent.Message{
		agent.UserText("go"),
		{Role: agent.RoleAssistant, Calls: []toolkit.Call{{ID: "c1", Name: "now", Args: json.RawMessage(` `)}}},
		{Role: agent.RoleTool, CallID: "c1", Tool: "now"},
		{Role: agent.RoleAssistant},
		agent.UserText("again"),
	}
	if _, err := m.Generate(t.Context(), &agent.Request{Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	body := decode(t, f.only().body)
	for _, k := range []string{"tools", "parallel_tool_calls", "stream", "stream_options", "temperature", "max_completion_tokens"} {
		if v, ok := body[k]; ok {
			t.Errorf("%s = %v, want it absent", k, v)
		}
	}
	want := []any{
		map[string]any{"role": "user", "content": "go"},
		map[string]any{"role": "assistant", "tool_calls": []any{
			map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "now", "arguments": "{}"}}}},
		map[string]any{"role": "tool", "tool_call_id": "c1", "content": ""},
		map[string]any{"role": "assistant", "content": ""},
		map[string]any{"role": "user", "content": "again"},
	}
	if !reflect.DeepEqual(body["messages"], want) {
		t.Errorf("messages:\n got %#v\nwant %#v", body["messages"], want)
	}
}

// TestChatStreamsText checks a streamed answer: each piece reaches Send as
// it comes, the reply holds the whole text, the usage of the last chunk,
// the model and the finish.
func TestChatStreamsText(t *testing.T) {
	f := newServer(t, sse(
		chunk(`{"role":"assistant","content":""}`, ""),
		chunk(`{"content":"The repository "}`, ""),
		chunk(`{"content":"has 42 "}`, ""),
		chunk(`{"content":"lines."}`, ""),
		chunk(`{}`, "stop"),
		usageChunk,
		"[DONE]"))
	req, chunks := streamed(userText("count"))
	got, err := NewChat(f.client(), "gpt-test").Generate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := &agent.Reply{Text: "The repository has 42 lines.", Finish: agent.FinishStop, Model: "gpt-test",
		Usage: agent.Usage{InputTokens: 11, OutputTokens: 7}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reply:\n got %+v\nwant %+v", got, want)
	}
	wantChunks := []agent.Chunk{{Kind: agent.ChunkText, Text: "The repository "}, {Kind: agent.ChunkText, Text: "has 42 "}, {Kind: agent.ChunkText, Text: "lines."}}
	if !reflect.DeepEqual(*chunks, wantChunks) {
		t.Errorf("chunks:\n got %+v\nwant %+v", *chunks, wantChunks)
	}
}

// TestChatParallelToolCalls streams two calls whose arguments are split
// over many deltas and interleaved, the way a server may send parallel
// calls: each call is announced once with its id and name before its
// arguments, and the pieces add up.
func TestChatParallelToolCalls(t *testing.T) {
	f := newServer(t, sse(
		chunk(`{"role":"assistant","content":"Let me look.","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"count_lines","arguments":""}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"di"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"hash_file","arguments":"{\"pa"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"r\":\"cmd\""}}]}`, ""),
		chunk(`{"tool_calls":[{"index":1,"function":{"arguments":"th\":\"go.mod\"}"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":",\"limit\":9007199254740993}"}}]}`, ""),
		chunk(`{}`, "tool_calls"),
		usageChunk,
		"[DONE]"))
	req, chunks := streamed(userText("look"), countLines)
	got, err := NewChat(f.client(), "gpt-test").Generate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	wantCalls := []toolkit.Call{
		{ID: "call_a", Name: "count_lines", Args: json.RawMessage(`{"dir":"cmd","limit":9007199254740993}`)},
		{ID: "call_b", Name: "hash_file", Args: json.RawMessage(`{"path":"go.mod"}`)},
	}
	if !reflect.DeepEqual(got.Calls, wantCalls) || got.Text != "Let me look." || got.Finish != agent.FinishToolCalls {
		t.Errorf("reply: %+v", got)
	}
	checkChunks(t, *chunks, got)
	wantChunks := []agent.Chunk{
		{Kind: agent.ChunkText, Text: "Let me look."},
		{Kind: agent.ChunkCall, Index: 0, CallID: "call_a", Name: "count_lines"},
		{Kind: agent.ChunkArgs, Index: 0, Text: `{"di`},
		{Kind: agent.ChunkCall, Index: 1, CallID: "call_b", Name: "hash_file"},
		{Kind: agent.ChunkArgs, Index: 1, Text: `{"pa`},
		{Kind: agent.ChunkArgs, Index: 0, Text: `r":"cmd"`},
		{Kind: agent.ChunkArgs, Index: 1, Text: `th":"go.mod"}`},
		{Kind: agent.ChunkArgs, Index: 0, Text: `,"limit":9007199254740993}`},
	}
	if !reflect.DeepEqual(*chunks, wantChunks) {
		t.Errorf("chunks:\n got %+v\nwant %+v", *chunks, wantChunks)
	}
}

// TestChatCompatibleServer plays what OpenAI-compatible servers (vLLM,
// Ollama, LM Studio) do differently: tool calls without "type" and without
// ids, each whole in one delta and all at index 0 or without index,
// finish_reason "stop"
// with tool calls, usage never, empty arguments.
func TestChatCompatibleServer(t *testing.T) {
	f := newServer(t, sse(
		chunk(`{"role":"assistant","tool_calls":[{"index":0,"function":{"name":"count_lines","arguments":"{\"dir\":\".\"}"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"name":"now","arguments":""}}]}`, ""),
		chunk(`{"tool_calls":[{"function":{"name":"count_lines","arguments":"{\"dir\": "}}]}`, ""),
		chunk(`{"tool_calls":[{"function":{"name":"count_lines","arguments":"{\"dir\":\"b\"}"}}]}`, ""),
		chunk(`{}`, "stop"),
		"[DONE]"))
	req, chunks := streamed(userText("go"), countLines)
	got, err := NewChat(f.client(), "local").Generate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got.Finish != agent.FinishToolCalls || got.Usage != (agent.Usage{}) || len(got.Calls) != 4 {
		t.Fatalf("reply: %+v", got)
	}
	wantArgs := []string{`{"dir":"."}`, `{}`, `{"dir": `, `{"dir":"b"}`} // the broken one as written
	ids := map[string]bool{}
	for i, c := range got.Calls {
		if string(c.Args) != wantArgs[i] {
			t.Errorf("call %d args = %s, want %s", i, c.Args, wantArgs[i])
		}
		if !strings.HasPrefix(c.ID, "call_") || len(c.ID) != len("call_")+24 || ids[c.ID] {
			t.Errorf("call %d id = %q, want a made-up unique one", i, c.ID)
		}
		ids[c.ID] = true
	}
	if got.Calls[1].Name != "now" {
		t.Errorf("calls: %+v", got.Calls)
	}
	checkChunks(t, *chunks, got)
}

// TestChatSameToolTwiceAtOneIndex plays a compatible server that sends
// two calls of the same tool whole, without ids, both at index 0: they
// are two calls, not one whose arguments are two objects end to end. A
// server that repeats the name in every delta of one call still makes
// one call.
func TestChatSameToolTwiceAtOneIndex(t *testing.T) {
	f := newServer(t, sse(
		chunk(`{"role":"assistant","tool_calls":[{"index":0,"function":{"name":"weather","arguments":"{\"city\":\"Oslo\"}"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"name":"weather","arguments":" {\"city\":\"Rome\"}"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":1,"function":{"name":"count_lines","arguments":"{\"dir\":"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":1,"function":{"name":"count_lines","arguments":"\"a\"}"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":1,"function":{"name":"count_lines","arguments":""}}]}`, ""),
		chunk(`{}`, "tool_calls"),
		"[DONE]"))
	req, chunks := streamed(userText("go"), countLines)
	got, err := NewChat(f.client(), "local").Generate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`weather {"city":"Oslo"}`, `weather  {"city":"Rome"}`, `count_lines {"dir":"a"}`}
	var have []string
	for _, c := range got.Calls {
		have = append(have, c.Name+" "+string(c.Args))
	}
	if !reflect.DeepEqual(have, want) {
		t.Fatalf("calls %q, want %q", have, want)
	}
	checkChunks(t, *chunks, got)
}

// TestChatDuplicateIDs checks that a server giving two calls the same id
// does not make two calls the loop cannot tell apart.
func TestChatDuplicateIDs(t *testing.T) {
	f := newServer(t, completion("tool_calls", `{"role":"assistant","content":null,"tool_calls":[
		{"id":"call_1","type":"function","function":{"name":"a","arguments":"{}"}},
		{"id":"call_1","type":"function","function":{"name":"b","arguments":"{}"}}]}`))
	got, err := NewChat(f.client(), "m", WithStreaming(false)).Generate(t.Context(), &agent.Request{Messages: userText("go")})
	if err != nil {
		t.Fatal(err)
	}
	if got.Calls[0].ID != "call_1" || got.Calls[1].ID == "call_1" || got.Calls[1].ID == "" {
		t.Errorf("calls: %+v", got.Calls)
	}
}

// TestChatNotStreaming reads whole responses: calls (malformed arguments
// passed on as written, none as {}, a JSON object where a compatible server
// should have sent a string), a refusal, a reply cut by the token
// limit, a filtered one.
func TestChatNotStreaming(t *testing.T) {
	tests := []struct {
		name    string
		finish  string
		message string
		want    agent.Reply
	}{
		{"calls", "tool_calls", `{"role":"assistant","content":null,"tool_calls":[
			{"id":"call_1","type":"function","function":{"name":"count_lines","arguments":"{\"dir\": "}},
			{"id":"call_2","type":"function","function":{"name":"now","arguments":""}}]}`,
			agent.Reply{Finish: agent.FinishToolCalls, Calls: []toolkit.Call{
				{ID: "call_1", Name: "count_lines", Args: json.RawMessage(`{"dir": `)},
				{ID: "call_2", Name: "now", Args: json.RawMessage(`{}`)}}}},
		{"object arguments", "stop", `{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"count_lines","arguments":{"dir":"."}}}]}`,
			agent.Reply{Finish: agent.FinishToolCalls, Calls: []toolkit.Call{{ID: "c", Name: "count_lines", Args: json.RawMessage(`{"dir":"."}`)}}}},
		{"text", "stop", `{"role":"assistant","content":"42 lines."}`, agent.Reply{Text: "42 lines.", Finish: agent.FinishStop}},
		{"refusal", "stop", `{"role":"assistant","content":null,"refusal":"I can't help with that."}`,
			agent.Reply{Text: "I can't help with that.", Finish: agent.FinishFiltered}},
		{"length", "length", `{"role":"assistant","content":"The repos"}`, agent.Reply{Text: "The repos", Finish: agent.FinishLength}},
		{"filtered", "content_filter", `{"role":"assistant","content":""}`, agent.Reply{Finish: agent.FinishFiltered}},
		{"other", "something_new", `{"role":"assistant","content":"x"}`, agent.Reply{Text: "x", Finish: "something_new"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newServer(t, completion(tt.finish, tt.message))
			var sent int
			req := &agent.Request{Messages: userText("go"), Stream: func(agent.Chunk) { sent++ }}
			got, err := NewChat(f.client(), "gpt-test", WithStreaming(false)).Generate(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Model, tt.want.Usage = "gpt-test", agent.Usage{InputTokens: 5, OutputTokens: 3}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("reply:\n got %+v\nwant %+v", *got, tt.want)
			}
			if sent != 0 {
				t.Errorf("%d chunks sent without streaming", sent)
			}
			if _, ok := decode(t, f.only().body)["stream"]; ok {
				t.Error("stream field sent without streaming")
			}
		})
	}
}

// TestChatRefusalStreamed maps a streamed refusal to text and
// FinishFiltered.
func TestChatRefusalStreamed(t *testing.T) {
	f := newServer(t, sse(chunk(`{"role":"assistant","refusal":"I can't "}`, ""), chunk(`{"refusal":"do that."}`, ""), chunk(`{}`, "stop"), "[DONE]"))
	req, chunks := streamed(userText("go"))
	got, err := NewChat(f.client(), "m").Generate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != "I can't do that." || got.Finish != agent.FinishFiltered {
		t.Errorf("reply: %+v", got)
	}
	checkChunks(t, *chunks, got)
}

// TestChatJSONInsteadOfStream reads a server that answers a streamed
// request with one JSON body, and still hands the pieces to Send.
func TestChatJSONInsteadOfStream(t *testing.T) {
	f := newServer(t, completion("stop", `{"role":"assistant","content":"whole","tool_calls":[{"function":{"name":"now","arguments":""}}]}`))
	req, chunks := streamed(userText("go"))
	got, err := NewChat(f.client(), "m").Generate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != "whole" || len(got.Calls) != 1 || got.Finish != agent.FinishToolCalls {
		t.Errorf("reply: %+v", got)
	}
	checkChunks(t, *chunks, got)
	if len(*chunks) != 2 {
		t.Errorf("chunks: %+v", *chunks)
	}
}

// TestErrorWithStatus200 reads an error body a server sent with status
// 200, streaming or not: the server's error, never an empty answer.
func TestErrorWithStatus200(t *testing.T) {
	for _, api := range apis() {
		f := newServer(t, reply(200, nil, `{"error":{"message":"The engine is currently overloaded.","type":"server_error"}}`))
		_, err := api.make(f.client()).Generate(t.Context(), &agent.Request{Messages: userText("go")})
		var e *agent.APIError
		if !errors.As(err, &e) || e.Message != "The engine is currently overloaded." || e.Type != "server_error" || !e.Retryable {
			t.Errorf("%s: err %v (%+v)", api.name, err, e)
		}
		f = newServer(t, reply(200, nil, `{"hello":"world"}`))
		got, err := api.make(f.client()).Generate(t.Context(), &agent.Request{Messages: userText("go")})
		if !errors.As(err, &e) || got != nil || !e.Retryable || !strings.Contains(e.Message, `{"hello":"world"}`) {
			t.Errorf("%s, not an answer: reply %+v, err %v", api.name, got, err)
		}
	}
}

// TestChatStreamErrors checks the ways a stream that began with 200 can
// fail: an error chunk after some text, a stream cut short (no
// finish_reason), a chunk that is not JSON. Each is an *agent.APIError
// without a status that says whether to retry.
func TestChatStreamErrors(t *testing.T) {
	tests := []struct {
		name      string
		events    []string
		retryable bool
		typ       string
		message   string
	}{
		{"error chunk", []string{chunk(`{"content":"Hel"}`, ""), `{"error":{"message":"The server is overloaded.","type":"server_error","code":null}}`},
			true, "server_error", "The server is overloaded."},
		{"error chunk, vLLM", []string{chunk(`{"content":"Hel"}`, ""), `{"error":{"object":"error","message":"prompt too long","type":"BadRequestError","code":400}}`},
			false, "400", "prompt too long"},
		{"cut short", []string{chunk(`{"content":"Hel"}`, ""), chunk(`{"tool_calls":[{"index":0,"id":"c","function":{"name":"a","arguments":"{"}}]}`, "")},
			true, "", "the stream ended before the reply was complete (no finish_reason)"},
		{"not JSON", []string{chunk(`{"content":"Hel"}`, ""), `<html>oops</html>`}, true, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newServer(t, sse(tt.events...))
			req, chunks := streamed(userText("go"))
			got, err := NewChat(f.client(), "m").Generate(t.Context(), req)
			var api *agent.APIError
			if !errors.As(err, &api) {
				t.Fatalf("reply %+v, err %v (%T), want an *agent.APIError", got, err, err)
			}
			if api.Provider != "openai" || api.StatusCode != 0 || api.Type != tt.typ || (tt.message != "" && api.Message != tt.message) {
				t.Errorf("error: %+v", api)
			}
			if api.Retryable != tt.retryable {
				t.Errorf("retryable = %v, want %v (%v)", api.Retryable, tt.retryable, err)
			}
			if len(*chunks) == 0 || (*chunks)[0].Text != "Hel" {
				t.Errorf("chunks before the error: %+v", *chunks)
			}
			if len(f.requests()) != 1 {
				t.Errorf("%d requests, want 1 (no retry by the SDK)", len(f.requests()))
			}
		})
	}
}

// TestChatCancelled cancels the context while the server is streaming: the
// error wraps context.Canceled, and nothing is left running (TestMain
// checks the goroutines).
func TestChatCancelled(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	f := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		writeEvent(w, chunk(`{"content":"Hel"}`, ""))
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req := &agent.Request{Messages: userText("go"), Stream: func(c agent.Chunk) { cancel() }}
	got, err := NewChat(f.client(), "m").Generate(ctx, req)
	if !errors.Is(err, context.Canceled) || got != nil {
		t.Fatalf("reply %+v, err %v, want context.Canceled", got, err)
	}
	// Cancelled before the request: the same.
	_, err = NewChat(f.client(), "m").Generate(ctx, &agent.Request{Messages: userText("go")})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

// TestChatBadInput checks the errors found before any request is sent.
func TestChatBadInput(t *testing.T) {
	f := newServer(t, completion("stop", `{"role":"assistant","content":"x"}`))
	tests := []struct {
		name  string
		model string
		req   *agent.Request
		want  string
	}{
		{"nil request", "m", nil, "nil request"},
		{"no model", " ", &agent.Request{Messages: userText("x")}, "no model id"},
		{"tool without call id", "m", &agent.Request{Messages: []agent.Message{{Role: agent.RoleTool}}}, "without a call id"},
		{"unknown role", "m", &agent.Request{Messages: []agent.Message{{Role: "system"}}}, `unknown role "system"`},
		{"parameters not an object", "m", &agent.Request{Tools: []toolkit.Definition{{Name: "x", Parameters: json.RawMessage(`[1]`)}}}, `tool "x": parameters are not a JSON object`},
		{"parameters not JSON", "m", &agent.Request{Tools: []toolkit.Definition{{Name: "x", Parameters: json.RawMessage(`{"a":`)}}}, `tool "x": parameters are not a JSON object`},
		{"tool without name", "m", &agent.Request{Tools: []toolkit.Definition{{Parameters: json.RawMessage(`{}`)}}}, "has no name"},
	}
	for _, tt := range tests {
		for _, stream := range []bool{true, false} {
			_, err := NewChat(f.client(), tt.model, WithStreaming(stream)).Generate(t.Context(), tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s: err %v, want %q", tt.name, err, tt.want)
			}
		}
		if n := len(f.requests()); n != 0 {
			t.Fatalf("%s: %d requests sent", tt.name, n)
		}
	}
}
