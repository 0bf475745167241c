package openaimodel

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// e2eToolkit is a real toolkit with two tools: count_lines answers text,
// snapshot an image.
func e2eToolkit(t *testing.T) *toolkit.Session {
	t.Helper()
	tk := toolkit.New()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tk.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	type countIn struct {
		Dir   string `json:"dir" jsonschema:"the folder"`
		Limit int    `json:"limit,omitempty" tool:"minimum=1,maximum=9007199254740993,default=100"`
	}
	count, err := toolkit.NewTool(toolkit.Spec{Name: "count_lines", Description: "Count the lines of files."},
		func(ctx context.Context, in countIn) (string, error) {
			return "42 lines in " + in.Dir, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := toolkit.NewTool(toolkit.Spec{Name: "snapshot", Description: "Take a picture."},
		func(ctx context.Context, in struct{}) ([]events.Part, error) {
			return []events.Part{events.Text("here:"), events.Binary("image/png", png)}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.Add(count, snap); err != nil {
		t.Fatal(err)
	}
	s, err := tk.Session("e2e")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestEndToEnd runs what the agent loop will do, without it: a streamed
// model turn with two tool calls (from a server that sends no call ids,
// for Chat), the calls run by a real toolkit session, then a follow-up
// request holding the results. The server must receive the toolkit's
// schemas byte for byte, the calls under the ids the adapter made up, and
// each result under its call's id, the image where the API can take it.
func TestEndToEnd(t *testing.T) {
	chatTurn := sse(
		chunk(`{"role":"assistant","content":"Looking.","tool_calls":[{"index":0,"function":{"name":"count_lines","arguments":"{\"dir\":"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":1,"function":{"name":"snapshot","arguments":""}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"cmd\"}"}}]}`, ""),
		chunk(`{}`, "stop"),
		"[DONE]")
	fc1 := `{"type":"function_call","id":"fc_1","call_id":"call_a","name":"count_lines","arguments":"{\"dir\":\"cmd\"}","status":"completed"}`
	fc2 := `{"type":"function_call","id":"fc_2","call_id":"call_b","name":"snapshot","arguments":"","status":"completed"}`
	respTurn := sse(created(),
		event("response.output_item.added", `"output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_a","name":"count_lines","arguments":""}`),
		event("response.function_call_arguments.delta", `"item_id":"fc_1","output_index":0,"delta":"{\"dir\":"`),
		event("response.output_item.added", `"output_index":1,"item":{"type":"function_call","id":"fc_2","call_id":"call_b","name":"snapshot","arguments":""}`),
		event("response.function_call_arguments.delta", `"item_id":"fc_1","output_index":0,"delta":"\"cmd\"}"`),
		event("response.output_item.done", `"output_index":0,"item":`+fc1),
		event("response.output_item.done", `"output_index":1,"item":`+fc2),
		event("response.completed", `"response":`+response("completed", fc1+","+fc2, "")))

	for _, tt := range []struct {
		name  string
		turn  http.HandlerFunc
		model func(openai.Client) agent.Model
	}{
		{"chat", chatTurn, func(c openai.Client) agent.Model { return NewChat(c, "gpt-test") }},
		{"responses", respTurn, func(c openai.Client) agent.Model { return NewResponses(c, "gpt-test") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var final http.HandlerFunc
			if tt.name == "responses" {
				final = sse(created(), event("response.completed", `"response":`+response("completed", msgItem, "")))
			} else {
				final = sse(chunk(`{"content":"Done."}`, ""), chunk(`{}`, "stop"), "[DONE]")
			}
			f := newServer(t, tt.turn, final)
			model := tt.model(f.client())
			session := e2eToolkit(t)
			ctx := t.Context()
			defs, err := session.Definitions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conv := agent.NewConversation("Be brief.", "Count the lines in cmd and show me.")

			req, chunks := streamed(conv.Messages, defs...)
			req.System = conv.System
			turn, err := model.Generate(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			checkChunks(t, *chunks, turn)
			if len(turn.Calls) != 2 || turn.Finish != agent.FinishToolCalls {
				t.Fatalf("turn: %+v", turn)
			}
			conv.Add(agent.Message{Role: agent.RoleAssistant, Content: []events.Part{events.Text(turn.Text)}, Calls: turn.Calls, Extra: turn.Extra})
			for _, r := range session.Run(ctx, turn.Calls) {
				conv.Add(agent.Message{Role: agent.RoleTool, CallID: r.Call.ID, Tool: r.Call.Name, IsError: r.IsError(), Content: r.Content})
			}
			if err := conv.Check(); err != nil {
				t.Fatal(err)
			}
			last, err := model.Generate(ctx, &agent.Request{System: conv.System, Messages: conv.Messages, Tools: defs})
			if err != nil {
				t.Fatal(err)
			}
			if last.Finish != agent.FinishStop || last.Text == "" {
				t.Errorf("last turn: %+v", last)
			}

			reqs := f.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			for i, r := range reqs {
				for _, d := range defs {
					if !strings.Contains(string(r.body), `"parameters":`+string(d.Parameters)) {
						t.Errorf("request %d: the schema of %s is not on the wire byte for byte:\n%s\n%s", i, d.Name, d.Parameters, r.body)
					}
				}
			}
			a, b := turn.Calls[0], turn.Calls[1]
			if string(a.Args) != `{"dir":"cmd"}` || string(b.Args) != `{}` {
				t.Errorf("calls: %+v", turn.Calls)
			}
			body := decode(t, reqs[1].body)
			var got any
			var want []any
			if tt.name == "chat" {
				if !strings.HasPrefix(a.ID, "call_") || !strings.HasPrefix(b.ID, "call_") || a.ID == b.ID {
					t.Errorf("made-up ids: %q %q", a.ID, b.ID)
				}
				got = body["messages"]
				want = []any{
					map[string]any{"role": "system", "content": "Be brief."},
					map[string]any{"role": "user", "content": "Count the lines in cmd and show me."},
					map[string]any{"role": "assistant", "content": "Looking.", "tool_calls": []any{
						map[string]any{"id": a.ID, "type": "function", "function": map[string]any{"name": "count_lines", "arguments": `{"dir":"cmd"}`}},
						map[string]any{"id": b.ID, "type": "function", "function": map[string]any{"name": "snapshot", "arguments": `{}`}},
					}},
					map[string]any{"role": "tool", "tool_call_id": a.ID, "content": "42 lines in cmd"},
					map[string]any{"role": "tool", "tool_call_id": b.ID, "content": "here:[image 1: in the user message after the tool results]"},
					map[string]any{"role": "user", "content": []any{
						map[string]any{"type": "text", "text": "The images of the tool results above (a tool message cannot hold images):"},
						map[string]any{"type": "text", "text": "Result of call " + b.ID + " (snapshot):"},
						map[string]any{"type": "image_url", "image_url": map[string]any{"url": pngURL}},
					}},
				}
			} else {
				if a.ID != "call_a" || b.ID != "call_b" {
					t.Errorf("ids: %q %q", a.ID, b.ID)
				}
				if body["instructions"] != "Be brief." {
					t.Errorf("instructions = %v", body["instructions"])
				}
				got = body["input"]
				want = []any{
					map[string]any{"type": "message", "role": "user", "content": "Count the lines in cmd and show me."},
					map[string]any{"type": "function_call", "call_id": "call_a", "name": "count_lines", "arguments": `{"dir":"cmd"}`},
					map[string]any{"type": "function_call", "call_id": "call_b", "name": "snapshot", "arguments": `{}`},
					map[string]any{"type": "function_call_output", "call_id": "call_a", "output": "42 lines in cmd"},
					map[string]any{"type": "function_call_output", "call_id": "call_b", "output": []any{
						map[string]any{"type": "input_text", "text": "here:"},
						map[string]any{"type": "input_image", "image_url": pngURL, "detail": "auto"},
					}},
				}
			}
			if !reflect.DeepEqual(got, any(want)) {
				gj, _ := json.MarshalIndent(got, "", " ")
				t.Errorf("follow-up request:\n got %s\nwant %#v", gj, want)
			}
		})
	}
}

// TestModelInterfaces keeps both adapters agent.Models that name
// themselves.
func TestModelInterfaces(t *testing.T) {
	var c openai.Client
	for _, m := range []agent.Model{NewChat(c, "a"), NewResponses(c, "b")} {
		if n, ok := m.(agent.Namer); !ok || n.Name() == "" {
			t.Errorf("%T is not a Namer", m)
		}
	}
}
