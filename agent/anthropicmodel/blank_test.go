package anthropicmodel_test

import (
	"encoding/base64"
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
		{Role: agent.RoleUser, Content: []events.Part{events.Text(" \n"), events.Text("Go")}},
		{Role: agent.RoleAssistant, Content: []events.Part{events.Text("\n\n")}, Calls: []toolkit.Call{
			{ID: "toolu_1", Name: "sh", Args: json.RawMessage(`{}`)},
			{ID: "toolu_2", Name: "sh", Args: json.RawMessage(`{}`)},
			{ID: "toolu_3", Name: "shot", Args: json.RawMessage(`{}`)},
		}},
		{Role: agent.RoleTool, CallID: "toolu_1", Tool: "sh", Content: []events.Part{events.Text("\n")}},
		{Role: agent.RoleTool, CallID: "toolu_2", Tool: "sh", IsError: true, Content: []events.Part{events.Text("  ")}},
		{Role: agent.RoleTool, CallID: "toolu_3", Tool: "shot", Content: []events.Part{events.Binary("image/png", nil), events.Binary("application/pdf", nil)}},
		{Role: agent.RoleAssistant, Content: []events.Part{events.Text(" \t\n")}},
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

// TestMediaLimits: the Messages API refuses an image over 5 MB of base64
// ("image exceeds 5 MB maximum: ... bytes > 5242880 bytes") and a request
// with more than 100 images and documents ("too many images and
// documents: 104 + 1 > 100"), each a 400 that every later turn of the
// conversation repeats: a large screenshot, or a long conversation with a
// screenshot per turn. The large image becomes a note saying so; of too
// many, the oldest do, and the newest 100 go.
func TestMediaLimits(t *testing.T) {
	big := make([]byte, 4<<20) // 5.6 MB as base64
	conv := []agent.Message{agent.UserText("Look.")}
	for i := range 52 {
		id := "toolu_" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		conv = append(conv,
			agent.Message{Role: agent.RoleAssistant, Calls: []toolkit.Call{{ID: id, Name: "shot", Args: json.RawMessage(`{}`)}}},
			agent.Message{Role: agent.RoleTool, CallID: id, Tool: "shot", Content: []events.Part{
				events.Binary("image/png", []byte{byte(i)}), events.Binary("application/pdf", []byte{byte(i)})}})
	}
	conv = append(conv, agent.Message{Role: agent.RoleAssistant, Calls: []toolkit.Call{{ID: "toolu_big", Name: "shot", Args: json.RawMessage(`{}`)}}},
		agent.Message{Role: agent.RoleTool, CallID: "toolu_big", Tool: "shot", Content: []events.Part{events.Binary("image/png", big)}})
	s := newServer(t, okStream)
	if _, err := s.model().Generate(ctx(t), &agent.Request{Messages: conv}); err != nil {
		t.Fatal(err)
	}
	var media, notes []string // in order: the parts that went as blocks, and as notes
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			switch v["type"] {
			case "image", "document":
				data := v["source"].(map[string]any)["data"].(string)
				if len(data) > 5<<20 {
					t.Errorf("an image of %d bytes of base64 went out", len(data))
				}
				media = append(media, data)
			case "text":
				if s, _ := v["text"].(string); strings.Contains(s, "left out") {
					notes = append(notes, s)
				}
			}
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(get(t, s.body(t, 0), "messages"))
	if len(media) != 100 {
		t.Errorf("%d images and documents went out, want the API's 100", len(media))
	}
	if len(notes) != 5 || !strings.Contains(notes[4], "image/png") || !strings.Contains(notes[4], "5 MB") {
		t.Fatalf("notes %q, want the 4 oldest and the large image", notes)
	}
	if want := base64.StdEncoding.EncodeToString([]byte{2}); len(media) > 0 && media[0] != want {
		t.Errorf("the oldest part that went is %q, want the third turn's image %q", media[0], want)
	}
}
