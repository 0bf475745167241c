package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

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
	Content []events.Part `json:"content,omitempty"`
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

// MarshalJSON writes the message as its fields say, except that a call's
// arguments that are not JSON (a model's mistake, a call cut at the token
// limit) go as "arguments_text", a string holding them, which
// json.RawMessage cannot write: the conversation stores whatever the model
// wrote.
func (m Message) MarshalJSON() ([]byte, error) {
	type plain Message
	invalid := false
	for _, c := range m.Calls {
		invalid = invalid || !argsJSON(c.Args)
	}
	if !invalid {
		return json.Marshal(plain(m))
	}
	w := struct {
		plain
		Calls []storedCall `json:"calls,omitempty"`
	}{plain: plain(m), Calls: make([]storedCall, len(m.Calls))}
	for i, c := range m.Calls {
		w.Calls[i] = storedCall{ID: c.ID, Name: c.Name, Args: c.Args}
		if !argsJSON(c.Args) {
			text := string(c.Args)
			w.Calls[i].Args, w.Calls[i].Text = nil, &text
		}
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (m *Message) UnmarshalJSON(b []byte) error {
	type plain Message
	w := struct {
		*plain
		Calls []storedCall `json:"calls,omitempty"`
	}{plain: (*plain)(m)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	m.Calls = nil
	if w.Calls != nil {
		m.Calls = make([]toolkit.Call, len(w.Calls))
	}
	for i, c := range w.Calls {
		m.Calls[i] = toolkit.Call{ID: c.ID, Name: c.Name, Args: c.Args}
		if c.Text != nil && len(c.Args) == 0 {
			m.Calls[i].Args = json.RawMessage(*c.Text)
		}
	}
	return nil
}

// storedCall is a call as a stored message writes it (toolkit.Call's
// fields): arguments that are JSON as "arguments", others as
// "arguments_text".
type storedCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"arguments,omitempty"`
	Text *string         `json:"arguments_text,omitempty"`
}

// argsJSON reports whether args can be written as JSON: blank (left out)
// or valid.
func argsJSON(args json.RawMessage) bool {
	return len(args) == 0 || json.Valid(args)
}

// UserText returns a user message holding text.
func UserText(text string) Message {
	return Message{Role: RoleUser, Content: []events.Part{events.Text(text)}}
}

// Text returns the message's text and JSON parts as events.ContentText
// renders them (a value set off from its neighbours by a newline, never
// glued to the next), its binary parts left out: what a provider that
// takes only text sees.
func (m Message) Text() string {
	binary := func(p events.Part) bool { return p.Type == events.PartBinary }
	parts := m.Content
	if slices.ContainsFunc(parts, binary) {
		parts = slices.DeleteFunc(slices.Clone(parts), binary)
	}
	return events.ContentText(parts)
}

// Conversation is a message history in a provider-neutral form, with
// its system prompt. It marshals to JSON and back unchanged, so a caller
// can store it between runs (binary parts as base64, a call's arguments
// that are not JSON as "arguments_text"):
//
//	{"system":"...","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}
//
// The loop appends to Messages as it runs and leaves the conversation
// valid (see Check) whenever Run returns, even when it fails or is
// cancelled, so that it can be sent to a model again.
type Conversation struct {
	System   string    `json:"system,omitempty"`
	Messages []Message `json:"messages"`
	// State is the runs' typed state ([State]) by key, as JSON: what the
	// tools wrote, kept for the next run. Run brings it up to date after
	// each batch (so a store saving the conversation when a turn's calls
	// start has the state of the turns before) and when it returns.
	State map[string]json.RawMessage `json:"state,omitempty"`
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
