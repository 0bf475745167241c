package anthropicmodel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

func thinkingStart(i int) ev {
	return event("content_block_start", obj{"type": "content_block_start", "index": i, "content_block": obj{"type": "thinking", "thinking": "", "signature": ""}})
}

func thinkingDelta(i int, typ, field, s string) ev {
	return event("content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": obj{"type": typ, field: s}})
}

// End to end without the loop: a streamed turn with thinking and two tool
// calls, the calls run by a real toolkit (one fails its arguments), then
// the follow-up request: the assistant turn comes back as the model wrote
// it (thinking blocks first, unchanged), the results in one user message
// with their ids and error flags.
func TestEndToEndTwoToolCalls(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 0 {
			writeSSE(w, msgStart("claude-test-1", 50),
				thinkingStart(0),
				thinkingDelta(0, "thinking_delta", "thinking", "I should add "),
				thinkingDelta(0, "thinking_delta", "thinking", "and greet."),
				thinkingDelta(0, "signature_delta", "signature", "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"),
				blockStop(0),
				event("content_block_start", obj{"type": "content_block_start", "index": 1, "content_block": obj{"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}}),
				blockStop(1),
				textStart(2), textDelta(2, "Working on it."), blockStop(2),
				toolStart(3, "toolu_add", "add"), jsonDelta(3, ""), jsonDelta(3, `{"a": 2, `), jsonDelta(3, `"b": 3}`), blockStop(3),
				toolStart(4, "toolu_greet", "greet"), jsonDelta(4, `{"name": 7}`), blockStop(4),
				msgDelta("tool_use", 40), msgStop())
			return
		}
		okStream(w, r, n)
	})
	type addIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	type greetIn struct {
		Name string `json:"name"`
	}
	tk := testutil.Kit(t)
	testutil.Add(t, tk,
		testutil.Tool(t, toolkit.Spec{Name: "add", Description: "Add two numbers."}, func(_ context.Context, in addIn) (string, error) {
			return fmt.Sprint(in.A + in.B), nil
		}),
		testutil.Tool(t, toolkit.Spec{Name: "greet"}, func(_ context.Context, in greetIn) (string, error) { return "Hello " + in.Name, nil }),
	)
	session := testutil.Session(t, tk, "e2e")
	defs, err := session.Definitions(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	m := s.model()
	conv := agent.NewConversation("You are terse.", "Add 2 and 3, and greet.")

	var c collect
	reply, err := m.Generate(ctx(t), &agent.Request{System: conv.System, Messages: conv.Messages, Tools: defs, Stream: c.send})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Finish != agent.FinishToolCalls || len(reply.Calls) != 2 || reply.Extra == nil {
		t.Fatalf("reply = %+v", reply)
	}
	conv.Add(agent.Message{Role: agent.RoleAssistant, Content: []events.Part{{Type: "text", Text: reply.Text}}, Calls: reply.Calls, Extra: reply.Extra})
	results := session.Run(ctx(t), reply.Calls)
	for _, r := range results {
		conv.Add(agent.Message{Role: agent.RoleTool, CallID: r.Call.ID, Tool: r.Call.Name, IsError: r.IsError(), Content: r.Content})
	}
	if err := conv.Check(); err != nil {
		t.Fatal(err)
	}
	// The conversation survives being stored as JSON.
	stored, err := json.Marshal(conv)
	if err != nil {
		t.Fatal(err)
	}
	var again agent.Conversation
	if err := json.Unmarshal(stored, &again); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(ctx(t), &agent.Request{System: again.System, Messages: again.Messages, Tools: defs}); err != nil {
		t.Fatal(err)
	}

	b := s.body(t, 1)
	same(t, "system", b["system"], []any{obj{"type": "text", "text": "You are terse."}})
	msgs := b["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("%d messages: %v", len(msgs), msgs)
	}
	same(t, "first user", msgs[0], obj{"role": "user", "content": []any{obj{"type": "text", "text": "Add 2 and 3, and greet."}}})
	same(t, "assistant", msgs[1], obj{"role": "assistant", "content": []any{
		obj{"type": "thinking", "thinking": "I should add and greet.", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"},
		obj{"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
		obj{"type": "text", "text": "Working on it."},
		obj{"type": "tool_use", "id": "toolu_add", "name": "add", "input": obj{"a": 2, "b": 3}},
		obj{"type": "tool_use", "id": "toolu_greet", "name": "greet", "input": obj{"name": 7}},
	}})
	if get(t, msgs, 2, "role") != "user" {
		t.Errorf("results in a %v message", get(t, msgs, 2, "role"))
	}
	results2 := get(t, msgs, 2, "content").([]any)
	if len(results2) != 2 {
		t.Fatalf("results = %v", results2)
	}
	same(t, "add result", results2[0], obj{"type": "tool_result", "tool_use_id": "toolu_add", "content": []any{obj{"type": "text", "text": "5"}}})
	if get(t, results2, 1, "tool_use_id") != "toolu_greet" || get(t, results2, 1, "is_error") != true ||
		!strings.Contains(get(t, results2, 1, "content", 0, "text").(string), "name") {
		t.Errorf("greet result = %v", results2[1])
	}
	// Tools went out both times, byte for byte.
	if string(s.raw(t, 0)["tools"]) != string(s.raw(t, 1)["tools"]) {
		t.Errorf("tools differ between turns")
	}
}
