package openaimodel

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// longIDs is a conversation whose calls have ids another provider or a
// store gave them: one short, two long ones that share their first 64
// bytes (the toolkit carries ids up to toolkit.MaxCallIDLen, 256).
func longIDs() ([]agent.Message, []string) {
	long := strings.Repeat("x", 64)
	ids := []string{"call_1", long + "-first-of-the-turn", long + "-second"}
	a := agent.Message{Role: agent.RoleAssistant}
	msgs := []agent.Message{agent.UserText("go")}
	for _, id := range ids {
		a.Calls = append(a.Calls, toolkit.Call{ID: id, Name: "count_lines", Args: json.RawMessage(`{}`)})
	}
	msgs = append(msgs, a)
	for _, id := range ids {
		msgs = append(msgs, agent.Message{Role: agent.RoleTool, CallID: id, Tool: "count_lines", Content: []events.Part{events.Text("3")}})
	}
	return msgs, ids
}

// TestLongCallIDs: Chat Completions refuses a tool call id over 40
// characters (400 string_above_max_length on tool_calls[].id), the
// Responses API a call_id over 64: a conversation carried over from
// another provider, or with ids a UI made, could never be sent again. Such
// an id goes out as one the API takes, the same for the call and its
// result, distinct for distinct ids; the others as they are.
func TestLongCallIDs(t *testing.T) {
	msgs, ids := longIDs()
	t.Run("chat", func(t *testing.T) {
		f := newServer(t, sse(chunk(`{"role":"assistant","content":"ok"}`, ""), chunk(`{}`, "stop"), "[DONE]"))
		req, _ := streamed(msgs)
		if _, err := NewChat(f.client(), "gpt-test").Generate(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		var body struct {
			Messages []struct {
				Role       string `json:"role"`
				ToolCallID string `json:"tool_call_id"`
				ToolCalls  []struct {
					ID string `json:"id"`
				} `json:"tool_calls"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(f.only().body, &body); err != nil {
			t.Fatal(err)
		}
		var calls, results []string
		for _, m := range body.Messages {
			for _, c := range m.ToolCalls {
				calls = append(calls, c.ID)
			}
			if m.Role == "tool" {
				results = append(results, m.ToolCallID)
			}
		}
		checkWireIDs(t, ids, calls, results, 40)
	})
	t.Run("responses", func(t *testing.T) {
		f := newServer(t, sse(created(), event("response.completed", `"response":`+response("completed", "", ""))))
		req, _ := streamed(msgs)
		if _, err := NewResponses(f.client(), "gpt-test").Generate(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		var body struct {
			Input []struct {
				Type   string `json:"type"`
				CallID string `json:"call_id"`
			} `json:"input"`
		}
		if err := json.Unmarshal(f.only().body, &body); err != nil {
			t.Fatal(err)
		}
		var calls, results []string
		for _, it := range body.Input {
			switch it.Type {
			case "function_call":
				calls = append(calls, it.CallID)
			case "function_call_output":
				results = append(results, it.CallID)
			}
		}
		checkWireIDs(t, ids, calls, results, 64)
	})
}

func checkWireIDs(t *testing.T, ids, calls, results []string, limit int) {
	t.Helper()
	if len(calls) != len(ids) || len(results) != len(ids) {
		t.Fatalf("%d calls and %d results went out, want %d each", len(calls), len(results), len(ids))
	}
	seen := map[string]bool{}
	for i, id := range calls {
		if len(id) > limit {
			t.Errorf("call %d went out with an id of %d characters (the API takes %d): %q", i, len(id), limit, id)
		}
		if results[i] != id {
			t.Errorf("call %d went out as %q, its result as %q", i, id, results[i])
		}
		if seen[id] {
			t.Errorf("two calls went out as %q", id)
		}
		seen[id] = true
	}
	if calls[0] != ids[0] {
		t.Errorf("a short id went out as %q, want it as it is", calls[0])
	}
}
