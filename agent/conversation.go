package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// Role is who a message is from.
type Role string

// The roles of a conversation. The system prompt is not a message: it is
// Conversation.System (some providers take it only apart from the
// messages).
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of a conversation, in a form no provider owns.
type Message struct {
	Role Role `json:"role"`
	// Content is the message's content: a user's text and images, an
	// assistant's words, a tool's model-visible result (text, JSON and
	// binary parts, exactly the call's result content).
	Content []toolkit.Part `json:"content,omitempty"`
	// Calls are the tool calls of an assistant message.
	Calls []toolkit.Call `json:"calls,omitempty"`
	// CallID is the call a tool message answers, and Tool its tool.
	CallID string `json:"call_id,omitempty"`
	Tool   string `json:"tool,omitempty"`
	// IsError marks a tool message whose call failed (Anthropic's
	// is_error; other providers see it in the text).
	IsError bool `json:"is_error,omitempty"`
	// Extra is the Reply.Extra of an assistant message: adapter data kept
	// for the next request.
	Extra json.RawMessage `json:"extra,omitempty"`
}

// UserText returns a user message holding text.
func UserText(text string) Message {
	return Message{Role: RoleUser, Content: []toolkit.Part{events.Text(text)}}
}

// Text returns the message's text parts joined, and JSON parts as their
// JSON text: what a provider that takes only text sees.
func (m Message) Text() string {
	var b strings.Builder
	for _, p := range m.Content {
		switch p.Type {
		case events.PartText:
			b.WriteString(p.Text)
		case events.PartJSON:
			b.Write(p.JSON)
		}
	}
	return b.String()
}

// Conversation is a message history in a provider-neutral form, with
// its system prompt. It marshals to JSON and back unchanged, so a caller
// can store it between runs (binary parts as base64):
//
//	{"system":"...","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}
//
// The loop appends to Messages as it runs and leaves the conversation
// valid (see Check) whenever Run returns, even when it fails or is
// cancelled, so that it can be sent to a model again.
type Conversation struct {
	System   string    `json:"system,omitempty"`
	Messages []Message `json:"messages"`
}

// NewConversation returns a conversation with a system prompt and, if
// prompt is not empty, a first user message.
func NewConversation(system, prompt string) *Conversation {
	c := &Conversation{System: system}
	if prompt != "" {
		c.Messages = append(c.Messages, UserText(prompt))
	}
	return c
}

// Add appends messages.
func (c *Conversation) Add(msgs ...Message) { c.Messages = append(c.Messages, msgs...) }

// Check reports the first way the conversation breaks the rules every
// provider shares: known roles; an assistant message's calls have
// distinct, non-empty ids and names; each is answered by exactly one tool
// message, and the answers come right after the assistant message before
// anything else; no tool message answers anything else.
func (c *Conversation) Check() error {
	open := map[string]bool{} // calls of the last assistant message not yet answered
	for i, m := range c.Messages {
		switch m.Role {
		case RoleUser, RoleAssistant:
			if len(open) > 0 {
				return fmt.Errorf("agent: message %d (%s): %d tool calls before it have no result", i, m.Role, len(open))
			}
			for j, call := range m.Calls {
				if m.Role == RoleUser {
					return fmt.Errorf("agent: message %d: a user message has tool calls", i)
				}
				if call.ID == "" || call.Name == "" {
					return fmt.Errorf("agent: message %d: call %d has no id or no name", i, j)
				}
				if open[call.ID] {
					return fmt.Errorf("agent: message %d: call id %q is used twice", i, call.ID)
				}
				open[call.ID] = true
			}
		case RoleTool:
			if !open[m.CallID] {
				return fmt.Errorf("agent: message %d: tool result for call %q, which the assistant message before it did not make (or another result answered)", i, m.CallID)
			}
			delete(open, m.CallID)
		default:
			return fmt.Errorf("agent: message %d: unknown role %q", i, m.Role)
		}
	}
	if len(open) > 0 {
		return errors.New("agent: the last assistant message has tool calls without results")
	}
	return nil
}
