package anthropicmodel

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// history builds a valid conversation (Conversation.Check) from fuzz
// bytes: ops choose the messages and their parts, texts (cut at '|')
// their words, ids and arguments.
func history(ops []byte, texts string) []agent.Message {
	words := strings.Split(texts, "|")
	w := 0
	word := func() string {
		s := words[w%len(words)]
		w++
		return s
	}
	part := func(op byte) events.Part {
		switch op % 7 {
		case 0, 1:
			return events.Text(word())
		case 2:
			return events.Text(strings.Repeat(" \n", int(op)%3))
		case 3:
			b, _ := json.Marshal(word())
			return events.Part{Type: events.PartJSON, JSON: b}
		case 4:
			return events.Binary("image/png", []byte(strings.TrimSpace(word())))
		case 5:
			return events.Binary("application/pdf", []byte(word()))
		default:
			return events.Binary(word(), []byte{1})
		}
	}
	var msgs []agent.Message
	for i := 0; i < len(ops); i++ {
		op := ops[i]
		next := func() byte {
			if i+1 < len(ops) {
				i++
				return ops[i]
			}
			return 0
		}
		switch op % 4 {
		case 0:
			msgs = append(msgs, agent.Message{Role: agent.RoleUser, Content: []events.Part{part(next()), part(next())}})
		case 1:
			msgs = append(msgs, agent.Message{Role: agent.RoleAssistant, Content: []events.Part{part(next())}})
		default: // an assistant's calls and their results
			n := 1 + int(next()%3)
			a := agent.Message{Role: agent.RoleAssistant}
			if op%8 < 4 {
				a.Content = []events.Part{part(next())}
			}
			for k := range n {
				id := word()
				if id == "" {
					id = "c"
				}
				a.Calls = append(a.Calls, toolkit.Call{ID: fmt.Sprintf("%s%d_%d", id, len(msgs), k), Name: "t", Args: json.RawMessage(word())})
			}
			msgs = append(msgs, a)
			for _, c := range a.Calls {
				flags := next()
				r := agent.Message{Role: agent.RoleTool, CallID: c.ID, Tool: c.Name, IsError: flags&1 == 1}
				for range int(flags>>1) % 3 {
					r.Content = append(r.Content, part(next()))
				}
				msgs = append(msgs, r)
			}
		}
	}
	return msgs
}

var wireIDPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// FuzzHistory: any valid conversation goes out as a history the Messages
// API accepts: no message without content, no text block that is blank,
// no failed tool_result without content, no image or document without
// data, every tool_use input a JSON object under an id the API accepts,
// and every tool_use answered by a tool_result at the start of the very
// next message, a user one (the API refuses a call split from its result).
func FuzzHistory(f *testing.F) {
	f.Add([]byte{0, 0, 0, 2, 1, 1, 0, 1, 2}, "hi|c|{}|ok")
	f.Add([]byte{2, 2, 3, 5, 0, 1, 2, 1, 3}, "|  |\n|x|{\"a\":")
	f.Add([]byte{3, 1, 4, 7, 4, 5, 6, 0, 0}, "a.b|[1]| |image/png")
	f.Fuzz(func(t *testing.T, ops []byte, texts string) {
		if len(ops) > 64 {
			return
		}
		msgs := history(ops, texts)
		if err := (&agent.Conversation{Messages: msgs}).Check(); err != nil {
			t.Fatalf("the generator made an invalid conversation: %v", err)
		}
		params, err := messages(msgs)
		if err != nil {
			t.Fatalf("messages: %v", err)
		}
		b, err := json.Marshal(params)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		var wire []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		}
		if err := json.Unmarshal(b, &wire); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		var open []string // tool_use ids the next message must answer first
		for i, m := range wire {
			if len(m.Content) == 0 {
				t.Fatalf("message %d (%s) has no content: %s", i, m.Role, b)
			}
			if len(open) > 0 && m.Role != "user" {
				t.Fatalf("message %d is %s, but tool_use %v wait for results: %s", i, m.Role, open, b)
			}
			answered := map[string]bool{}
			results := true // still in the leading tool_result blocks
			var uses []string
			var check func(where string, blocks []map[string]any)
			check = func(where string, blocks []map[string]any) {
				for j, blk := range blocks {
					at := fmt.Sprintf("%s block %d", where, j)
					switch blk["type"] {
					case "text":
						if s, _ := blk["text"].(string); strings.TrimSpace(s) == "" {
							t.Fatalf("%s: blank text %q: %s", at, s, b)
						}
					case "image", "document":
						if src, _ := blk["source"].(map[string]any); src == nil || src["data"] == "" {
							t.Fatalf("%s: %s without data: %s", at, blk["type"], b)
						}
					case "tool_use":
						id, _ := blk["id"].(string)
						if !wireIDPattern.MatchString(id) {
							t.Fatalf("%s: tool_use id %q: %s", at, id, b)
						}
						if _, ok := blk["input"].(map[string]any); !ok {
							t.Fatalf("%s: input %v is not an object: %s", at, blk["input"], b)
						}
						uses = append(uses, id)
					case "tool_result":
						inner, _ := json.Marshal(blk["content"])
						var content []map[string]any
						_ = json.Unmarshal(inner, &content)
						if blk["is_error"] == true && len(content) == 0 {
							t.Fatalf("%s: failed tool_result without content: %s", at, b)
						}
						check(at, content)
					}
				}
			}
			check(fmt.Sprintf("message %d", i), m.Content)
			for _, blk := range m.Content {
				if blk["type"] != "tool_result" {
					results = false
					continue
				}
				if !results {
					t.Fatalf("message %d: a tool_result after other content: %s", i, b)
				}
				answered[blk["tool_use_id"].(string)] = true
			}
			for _, id := range open {
				if !answered[id] {
					t.Fatalf("message %d does not answer tool_use %s first: %s", i, id, b)
				}
				delete(answered, id)
			}
			if len(answered) > 0 {
				t.Fatalf("message %d answers tool_use %v of no message before it: %s", i, answered, b)
			}
			open = uses
		}
		if len(open) > 0 {
			t.Fatalf("tool_use %v without results: %s", open, b)
		}
	})
}
