package anthropicmodel_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// TestBlankContentNotSent: the Messages API refuses a text block that is
// only whitespace ("text content blocks must contain non-whitespace
// text"), a failed tool_result without content ("content cannot be empty
// if is_error is true") and an image or document without data. Each is
// a 400 that no retry cures, for every later turn of the conversation:
// a model's "\n\n" before its call (Claude writes them), a command that
// printed a blank line, a failure with nothing to say, an empty
// screenshot. None may reach the wire as such.
func TestBlankContentNotSent(t *testing.T) {
	conv := []agent.Message{
		{Role: agent.RoleUser, Content: []toolkit.Part{events.Text(" \n"), events.Text("Go")}},
		{Role: agent.RoleAssistant, Content: []toolkit.Part{events.Text("\n\n")}, Calls: []toolkit.Call{
			{ID: "toolu_1", Name: "sh", Args: json.RawMessage(`{}`)},
			{ID: "toolu_2", Name: "sh", Args: json.RawMessage(`{}`)},
			{ID: "toolu_3", Name: "shot", Args: json.RawMessage(`{}`)},
		}},
		{Role: agent.RoleTool, CallID: "toolu_1", Tool: "sh", Content: []toolkit.Part{events.Text("\n")}},
		{Role: agent.RoleTool, CallID: "toolu_2", Tool: "sh", IsError: true, Content: []toolkit.Part{events.Text("  ")}},
		{Role: agent.RoleTool, CallID: "toolu_3", Tool: "shot", Content: []toolkit.Part{events.Binary("image/png", nil), events.Binary("application/pdf", nil)}},
		{Role: agent.RoleAssistant, Content: []toolkit.Part{events.Text(" \t\n")}},
		agent.UserText("\n"),
		agent.UserText("And now?"),
	}
	if err := (&agent.Conversation{Messages: conv}).Check(); err != nil {
		t.Fatalf("the test's conversation is not valid: %v", err)
	}
	s := newServer(t, okStream)
	if _, err := s.model().Generate(ctx(t), &agent.Request{System: "\n", Messages: conv}); err != nil {
		t.Fatal(err)
	}
	if sys, ok := s.body(t, 0)["system"]; ok {
		t.Errorf("a blank system prompt went out: %v", sys)
	}
	msgs := get(t, s.body(t, 0), "messages").([]any)
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case []any:
			for i, e := range v {
				walk(path+"."+string(rune('0'+i)), e)
			}
		case map[string]any:
			switch v["type"] {
			case "text":
				if strings.TrimSpace(v["text"].(string)) == "" {
					t.Errorf("%s: a blank text block went out: %q", path, v["text"])
				}
			case "tool_result":
				if c, _ := v["content"].([]any); v["is_error"] == true && len(c) == 0 {
					t.Errorf("%s: a failed tool_result without content went out", path)
				}
			case "image", "document":
				if src, _ := v["source"].(map[string]any); src["data"] == "" {
					t.Errorf("%s: an %s block without data went out", path, v["type"])
				}
			}
			if c, ok := v["content"].([]any); ok && len(c) == 0 && v["role"] != nil {
				t.Errorf("%s: a message without content went out", path)
			}
			for k, e := range v {
				walk(path+"."+k, e)
			}
		}
	}
	walk("messages", msgs)
	if t.Failed() {
		b, _ := json.MarshalIndent(msgs, "", " ")
		t.Logf("sent: %s", b)
	}
	// What is left says what it must: the calls, the results in order,
	// the user's words.
	same(t, "messages", msgs, []any{
		obj{"role": "user", "content": []any{obj{"type": "text", "text": "Go"}}},
		obj{"role": "assistant", "content": []any{
			obj{"type": "tool_use", "id": "toolu_1", "name": "sh", "input": obj{}},
			obj{"type": "tool_use", "id": "toolu_2", "name": "sh", "input": obj{}},
			obj{"type": "tool_use", "id": "toolu_3", "name": "shot", "input": obj{}},
		}},
		obj{"role": "user", "content": []any{
			obj{"type": "tool_result", "tool_use_id": "toolu_1"},
			obj{"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true, "content": []any{obj{"type": "text", "text": "Error: the tool failed without saying why"}}},
			obj{"type": "tool_result", "tool_use_id": "toolu_3", "content": []any{
				obj{"type": "text", "text": "[empty image/png left out: 0 bytes]"},
				obj{"type": "text", "text": "[empty application/pdf left out: 0 bytes]"},
			}},
			obj{"type": "text", "text": "And now?"},
		}},
	})
}
