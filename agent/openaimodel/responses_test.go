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

// event is a Responses API stream event.
func event(typ, fields string) string {
	if fields != "" {
		fields = "," + fields
	}
	return `{"type":"` + typ + `","sequence_number":1` + fields + `}`
}

// response is a Response object.
func response(status, output, extra string) string {
	// extra holds error and incomplete_details when they are not null.
	if !strings.Contains(extra, `"error"`) {
		extra += `,"error":null`
	}
	if !strings.Contains(extra, `"incomplete_details"`) {
		extra += `,"incomplete_details":null`
	}
	extra = strings.TrimPrefix(extra, ",")
	return `{"id":"resp_1","object":"response","created_at":1,"status":"` + status + `","model":"gpt-test-2025","output":[` + output +
		`],` + extra + `,"usage":{"input_tokens":20,"input_tokens_details":{"cached_tokens":0},"output_tokens":9,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":29}}`
}

func created() string {
	return event("response.created", `"response":`+response("in_progress", "", ""))
}

const (
	msgItem   = `{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"The repository has 42 lines."}]}`
	fcA       = `{"type":"function_call","id":"fc_1","call_id":"call_a","name":"count_lines","arguments":"{\"dir\":\"cmd\",\"limit\":9007199254740993}","status":"completed"}`
	fcB       = `{"type":"function_call","id":"fc_2","call_id":"call_b","name":"hash_file","arguments":"{\"path\":\"go.mod\"}","status":"completed"}`
	reasoning = `{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Count first."}],"encrypted_content":"gAAAAB"}`
)

// TestResponsesRequestBody checks what the SDK sends, field by field: the
// instructions, the input items in order (user images as input_image, the
// assistant's words and function_call items, tool results as
// function_call_output with their call ids and images), the tools with the
// toolkit's schema byte for byte and strict off, and the options.
func TestResponsesRequestBody(t *testing.T) {
	f := newServer(t, sse(created(), event("response.completed", `"response":`+response("completed", "", ""))))
	m := NewResponses(f.client(), "gpt-test", WithTemperature(0.5), WithMaxTokens(900), WithParallelToolCalls(true))
	req, _ := streamed(conversation(), countLines)
	req.System = "You are careful."
	if _, err := m.Generate(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	r := f.only()
	if r.method != http.MethodPost || r.path != "/v1/responses" {
		t.Errorf("%s %s", r.method, r.path)
	}
	if !strings.Contains(string(r.body), `"parameters":`+string(countLines.Parameters)+`,"strict":false}`) {
		t.Errorf("the schema did not reach the wire byte for byte:\n%s", r.body)
	}
	body := decode(t, r.body)
	image := map[string]any{"type": "input_image", "image_url": pngURL, "detail": "auto"}
	want := map[string]any{
		"model":               "gpt-test",
		"stream":              true,
		"instructions":        "You are careful.",
		"temperature":         json.Number("0.5"),
		"max_output_tokens":   json.Number("900"),
		"parallel_tool_calls": true,
		"tools": []any{map[string]any{"type": "function", "name": "count_lines", "description": "Count the lines of files.",
			"parameters": jsonValue(t, string(countLines.Parameters)), "strict": false}},
		"input": []any{
			map[string]any{"type": "message", "role": "user", "content": []any{
				map[string]any{"type": "input_text", "text": "What is in "}, image, map[string]any{"type": "input_text", "text": "?"}}},
			map[string]any{"type": "message", "role": "assistant", "content": "Counting."},
			map[string]any{"type": "function_call", "call_id": "call_a", "name": "count_lines", "arguments": `{"dir":"."}`},
			map[string]any{"type": "function_call", "call_id": "call_b", "name": "snapshot", "arguments": `{}`},
			map[string]any{"type": "function_call_output", "call_id": "call_a",
				"output": "{\"lines\":42}\n[binary content application/pdf (4 bytes) left out: this model's API cannot take it]"},
			map[string]any{"type": "function_call_output", "call_id": "call_b", "output": []any{
				map[string]any{"type": "input_text", "text": "shot: "}, image}},
			map[string]any{"type": "message", "role": "assistant", "content": "Retrying."},
			map[string]any{"type": "function_call", "call_id": "call_c", "name": "count_lines", "arguments": `{"dir":`},
			map[string]any{"type": "function_call_output", "call_id": "call_c", "output": "Error: arguments are not valid JSON"},
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

// TestResponsesStreamsText streams a message in the documented event
// sequence: each delta reaches Send, the reply has the text, the usage and
// the model of response.completed.
func TestResponsesStreamsText(t *testing.T) {
	f := newServer(t, sse(
		created(),
		event("response.in_progress", `"response":`+response("in_progress", "", "")),
		event("response.output_item.added", `"output_index":0,"item":{"type":"message","id":"msg_1","status":"in_progress","role":"assistant","content":[]}`),
		event("response.content_part.added", `"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}`),
		event("response.output_text.delta", `"item_id":"msg_1","output_index":0,"content_index":0,"delta":"The repository ","logprobs":[]`),
		event("response.output_text.delta", `"item_id":"msg_1","output_index":0,"content_index":0,"delta":"has 42 lines.","logprobs":[]`),
		event("response.output_text.done", `"item_id":"msg_1","output_index":0,"content_index":0,"text":"The repository has 42 lines.","logprobs":[]`),
		event("response.content_part.done", `"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":"The repository has 42 lines."}`),
		event("response.output_item.done", `"output_index":0,"item":`+msgItem),
		event("response.completed", `"response":`+response("completed", msgItem, ""))))
	req, chunks := streamed(userText("count"))
	got, err := NewResponses(f.client(), "gpt-test").Generate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := &agent.Reply{Text: "The repository has 42 lines.", Finish: agent.FinishStop, Model: "gpt-test-2025",
		Usage: agent.Usage{InputTokens: 20, OutputTokens: 9}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reply:\n got %+v\nwant %+v", got, want)
	}
	wantChunks := []agent.Chunk{{Kind: agent.ChunkText, Text: "The repository "}, {Kind: agent.ChunkText, Text: "has 42 lines."}}
	if !reflect.DeepEqual(*chunks, wantChunks) {
		t.Errorf("chunks: %+v", *chunks)
	}
}

// parallelCalls is a stream of two function calls whose argument deltas
// interleave.
func parallelCalls(prefix ...string) http.HandlerFunc {
	added := func(i, id, call, name string) string {
		return event("response.output_item.added", `"output_index":`+i+`,"item":{"type":"function_call","id":"`+id+`","call_id":"`+call+`","name":"`+name+`","arguments":"","status":"in_progress"}`)
	}
	delta := func(i, id, d string) string {
		return event("response.function_call_arguments.delta", `"item_id":"`+id+`","output_index":`+i+`,"delta":`+d)
	}
	n := len(prefix)
	idx := func(k int) string { return string(rune('0' + n + k)) }
	evs := append([]string{created()}, prefix...)
	evs = append(evs,
		added(idx(0), "fc_1", "call_a", "count_lines"),
		delta(idx(0), "fc_1", `"{\"di"`),
		added(idx(1), "fc_2", "call_b", "hash_file"),
		delta(idx(1), "fc_2", `"{\"pa"`),
		delta(idx(0), "fc_1", `"r\":\"cmd\""`),
		delta(idx(1), "fc_2", `"th\":\"go.mod\"}"`),
		delta(idx(0), "fc_1", `",\"limit\":9007199254740993}"`),
		event("response.function_call_arguments.done", `"item_id":"fc_1","output_index":`+idx(0)+`,"arguments":"{\"dir\":\"cmd\",\"limit\":9007199254740993}"`),
		event("response.output_item.done", `"output_index":`+idx(0)+`,"item":`+fcA),
		event("response.function_call_arguments.done", `"item_id":"fc_2","output_index":`+idx(1)+`,"arguments":"{\"path\":\"go.mod\"}"`),
		event("response.output_item.done", `"output_index":`+idx(1)+`,"item":`+fcB),
	)
	var output []string
	for _, ev := range prefix {
		var e struct {
			Type string          `json:"type"`
			Item json.RawMessage `json:"item"`
		}
		if json.Unmarshal([]byte(ev), &e) == nil && e.Type == "response.output_item.done" {
			output = append(output, string(e.Item))
		}
	}
	output = append(output, fcA, fcB)
	evs = append(evs, event("response.completed", `"response":`+response("completed", strings.Join(output, ","), "")))
	return sse(evs...)
}

var wantParallel = []toolkit.Call{
	{ID: "call_a", Name: "count_lines", Args: json.RawMessage(`{"dir":"cmd","limit":9007199254740993}`)},
	{ID: "call_b", Name: "hash_file", Args: json.RawMessage(`{"path":"go.mod"}`)},
}

// TestResponsesParallelToolCalls streams two calls whose argument deltas
// interleave: each is announced once with its call_id before its
// arguments, and the pieces add up.
func TestResponsesParallelToolCalls(t *testing.T) {
	f := newServer(t, parallelCalls())
	req, chunks := streamed(userText("look"), countLines)
	got, err := NewResponses(f.client(), "gpt-test").Generate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Calls, wantParallel) || got.Finish != agent.FinishToolCalls || got.Extra != nil {
		t.Errorf("reply: %+v", got)
	}
	checkChunks(t, *chunks, got)
	wantChunks := []agent.Chunk{
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

// TestResponsesReasoningGoesBack checks that a reasoning model's output
// items travel in Reply.Extra and go back, as the API sent them, before
// the tool results in the next request; and that an assistant message
// whose calls no longer match them is rebuilt without them (the API
// refuses a reasoning item without the items that followed it).
func TestResponsesReasoningGoesBack(t *testing.T) {
	reasoningDone := event("response.output_item.done", `"output_index":0,"item":`+reasoning)
	f := newServer(t,
		parallelCalls(event("response.output_item.added", `"output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[]}`), reasoningDone),
		sse(created(), event("response.completed", `"response":`+response("completed", msgItem, ""))))
	m := NewResponses(f.client(), "gpt-test")
	req, _ := streamed(userText("look"), countLines)
	first, err := m.Generate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first.Calls, wantParallel) || first.Extra == nil {
		t.Fatalf("reply: %+v", first)
	}
	assistant := agent.Message{Role: agent.RoleAssistant, Calls: first.Calls, Extra: first.Extra}
	results := []agent.Message{
		{Role: agent.RoleTool, CallID: "call_a", Tool: "count_lines", Content: []events.Part{{Type: "text", Text: "42"}}},
		{Role: agent.RoleTool, CallID: "call_b", Tool: "hash_file", Content: []events.Part{{Type: "text", Text: "abc"}}},
	}
	// The conversation goes through JSON, as a stored one would.
	conv := append(append(userText("look"), assistant), results...)
	raw, err := json.Marshal(agent.Conversation{Messages: conv})
	if err != nil {
		t.Fatal(err)
	}
	var stored agent.Conversation
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(t.Context(), &agent.Request{Messages: stored.Messages}); err != nil {
		t.Fatal(err)
	}
	input := decode(t, f.requests()[1].body)["input"]
	want := []any{
		map[string]any{"type": "message", "role": "user", "content": "look"},
		jsonValue(t, reasoning), jsonValue(t, fcA), jsonValue(t, fcB),
		map[string]any{"type": "function_call_output", "call_id": "call_a", "output": "42"},
		map[string]any{"type": "function_call_output", "call_id": "call_b", "output": "abc"},
	}
	if !reflect.DeepEqual(input, want) {
		t.Errorf("input:\n got %#v\nwant %#v", input, want)
	}

	// Calls changed since: rebuilt from the message, no reasoning.
	changed := assistant
	changed.Calls = []toolkit.Call{wantParallel[0], {ID: "call_x", Name: "hash_file", Args: json.RawMessage(`{}`)}}
	conv = []agent.Message{agent.UserText("look"), changed,
		{Role: agent.RoleTool, CallID: "call_a", Content: []events.Part{{Type: "text", Text: "42"}}},
		{Role: agent.RoleTool, CallID: "call_x", Content: []events.Part{{Type: "text", Text: "abc"}}}}
	if _, err := m.Generate(t.Context(), &agent.Request{Messages: conv}); err != nil {
		t.Fatal(err)
	}
	input = decode(t, f.requests()[2].body)["input"]
	want = []any{
		map[string]any{"type": "message", "role": "user", "content": "look"},
		map[string]any{"type": "function_call", "call_id": "call_a", "name": "count_lines", "arguments": `{"dir":"cmd","limit":9007199254740993}`},
		map[string]any{"type": "function_call", "call_id": "call_x", "name": "hash_file", "arguments": `{}`},
		map[string]any{"type": "function_call_output", "call_id": "call_a", "output": "42"},
		map[string]any{"type": "function_call_output", "call_id": "call_x", "output": "abc"},
	}
	if !reflect.DeepEqual(input, want) {
		t.Errorf("input, calls changed:\n got %#v\nwant %#v", input, want)
	}
}

// TestResponsesCompatibleServer plays a server that skips events: a
// function call without output_item.added or call_id (its arguments
// arrive by item id only, and are empty), then only response.completed
// for the rest; and a server that sends no item events at all.
func TestResponsesCompatibleServer(t *testing.T) {
	t.Run("sparse events", func(t *testing.T) {
		f := newServer(t, sse(
			event("response.function_call_arguments.delta", `"item_id":"fc_9","output_index":0,"delta":""`),
			event("response.output_item.done", `"output_index":0,"item":{"type":"function_call","id":"fc_9","name":"now","arguments":""}`),
			event("response.output_text.delta", `"item_id":"msg_2","output_index":1,"delta":"Checking."`),
			event("response.completed", `"response":{"status":"completed","output":[]}`)))
		req, chunks := streamed(userText("go"))
		got, err := NewResponses(f.client(), "m").Generate(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Calls) != 1 || got.Calls[0].Name != "now" || string(got.Calls[0].Args) != "{}" ||
			!strings.HasPrefix(got.Calls[0].ID, "call_") || got.Text != "Checking." || got.Finish != agent.FinishToolCalls {
			t.Errorf("reply: %+v", got)
		}
		checkChunks(t, *chunks, got)
	})
	t.Run("text deltas without item id", func(t *testing.T) {
		f := newServer(t, sse(
			event("response.output_text.delta", `"output_index":0,"content_index":0,"delta":"The repository "`),
			event("response.output_text.delta", `"output_index":0,"content_index":0,"delta":"has 42 lines."`),
			event("response.output_item.done", `"output_index":0,"item":`+msgItem),
			event("response.completed", `"response":`+response("completed", msgItem, ""))))
		got, err := NewResponses(f.client(), "m").Generate(t.Context(), &agent.Request{Messages: userText("go")})
		if err != nil || got.Text != "The repository has 42 lines." {
			t.Errorf("reply %+v, err %v: the text must come once", got, err)
		}
	})
	t.Run("completed only", func(t *testing.T) {
		f := newServer(t, sse(event("response.completed", `"response":`+response("completed", msgItem+","+fcB, ""))))
		req, chunks := streamed(userText("go"))
		got, err := NewResponses(f.client(), "m").Generate(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if got.Text != "The repository has 42 lines." || !reflect.DeepEqual(got.Calls, wantParallel[1:]) {
			t.Errorf("reply: %+v", got)
		}
		checkChunks(t, *chunks, got)
	})
}

// TestResponsesNotStreaming reads whole responses: text, calls, a refusal,
// a reply cut by the token limit, a reasoning model's reply (Extra).
func TestResponsesNotStreaming(t *testing.T) {
	refusal := `{"type":"message","id":"msg_3","status":"completed","role":"assistant","content":[{"type":"refusal","refusal":"I can't help with that."}]}`
	tests := []struct {
		name, body string
		want       agent.Reply
		extra      bool
	}{
		{"text", response("completed", msgItem, ""), agent.Reply{Text: "The repository has 42 lines.", Finish: agent.FinishStop}, false},
		{"calls", response("completed", msgItem+","+fcA+","+fcB, ""),
			agent.Reply{Text: "The repository has 42 lines.", Calls: wantParallel, Finish: agent.FinishToolCalls}, false},
		{"refusal", response("completed", refusal, ""), agent.Reply{Text: "I can't help with that.", Finish: agent.FinishFiltered}, false},
		{"length", response("incomplete", msgItem, `"incomplete_details":{"reason":"max_output_tokens"}`),
			agent.Reply{Text: "The repository has 42 lines.", Finish: agent.FinishLength}, false},
		{"filtered", response("incomplete", "", `"incomplete_details":{"reason":"content_filter"}`), agent.Reply{Finish: agent.FinishFiltered}, false},
		{"reasoning", response("completed", reasoning+","+fcB, ""), agent.Reply{Calls: wantParallel[1:], Finish: agent.FinishToolCalls}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newServer(t, reply(200, nil, tt.body))
			got, err := NewResponses(f.client(), "gpt-test", WithStreaming(false)).Generate(t.Context(), &agent.Request{Messages: userText("go")})
			if err != nil {
				t.Fatal(err)
			}
			if (got.Extra != nil) != tt.extra {
				t.Errorf("extra = %s", got.Extra)
			}
			got.Extra = nil
			tt.want.Model, tt.want.Usage = "gpt-test-2025", agent.Usage{InputTokens: 20, OutputTokens: 9}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("reply:\n got %+v\nwant %+v", *got, tt.want)
			}
			if _, ok := decode(t, f.only().body)["stream"]; ok {
				t.Error("stream field sent without streaming")
			}
		})
	}
}

// TestResponsesStreamErrors checks the ways a Responses stream can fail
// after 200: an error event after some text, response.failed, a stream
// cut short; and that an incomplete response is a reply, not an error.
func TestResponsesStreamErrors(t *testing.T) {
	text := event("response.output_text.delta", `"item_id":"msg_1","output_index":0,"delta":"Hel"`)
	tests := []struct {
		name      string
		events    []string
		typ, msg  string
		retryable bool
	}{
		{"error event", []string{created(), text, event("error", `"code":"server_error","message":"The server had an error.","param":null`)},
			"server_error", "The server had an error.", true},
		{"error event, bad request", []string{created(), text, event("error", `"code":"invalid_prompt","message":"Invalid prompt.","param":null`)},
			"invalid_prompt", "Invalid prompt.", false},
		{"failed", []string{created(), text, event("response.failed", `"response":`+response("failed", "", `"error":{"code":"server_error","message":"Something went wrong."}`))},
			"server_error", "Something went wrong.", true},
		{"cut short", []string{created(), text}, "", "the stream ended before the reply was complete (no response.completed event)", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newServer(t, sse(tt.events...))
			req, chunks := streamed(userText("go"))
			got, err := NewResponses(f.client(), "m").Generate(t.Context(), req)
			var e *agent.APIError
			if !errors.As(err, &e) || got != nil {
				t.Fatalf("reply %+v, err %v (%T)", got, err, err)
			}
			if e.Provider != "openai" || e.StatusCode != 0 || e.Type != tt.typ || e.Message != tt.msg || e.Retryable != tt.retryable {
				t.Errorf("error: %+v", e)
			}
			if len(*chunks) != 1 || (*chunks)[0].Text != "Hel" {
				t.Errorf("chunks: %+v", *chunks)
			}
		})
	}
	t.Run("incomplete", func(t *testing.T) {
		f := newServer(t, sse(created(), text,
			event("response.incomplete", `"response":`+response("incomplete", "", `"incomplete_details":{"reason":"max_output_tokens"}`))))
		got, err := NewResponses(f.client(), "m").Generate(t.Context(), &agent.Request{Messages: userText("go")})
		if err != nil || got.Text != "Hel" || got.Finish != agent.FinishLength {
			t.Errorf("reply %+v, err %v", got, err)
		}
	})
}

// TestResponsesCancelled cancels the context mid-stream.
func TestResponsesCancelled(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	f := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		writeEvent(w, created())
		writeEvent(w, event("response.output_text.delta", `"item_id":"msg_1","output_index":0,"delta":"Hel"`))
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req := &agent.Request{Messages: userText("go"), Stream: func(agent.Chunk) { cancel() }}
	got, err := NewResponses(f.client(), "m").Generate(ctx, req)
	if !errors.Is(err, context.Canceled) || got != nil {
		t.Fatalf("reply %+v, err %v, want context.Canceled", got, err)
	}
}
