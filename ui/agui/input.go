package agui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/ui/internal/body"
	"github.com/toolstream/toolstream/ui/internal/thread"
)

// runAgentInput is the body of an AG-UI run request (the fields
// toolstream reads; the others are accepted and ignored).
type runAgentInput struct {
	ThreadID       string          `json:"threadId"`
	RunID          string          `json:"runId"`
	ParentRunID    string          `json:"parentRunId,omitempty"`
	State          json.RawMessage `json:"state,omitempty"`
	Messages       []message       `json:"messages"`
	Tools          []tool          `json:"tools,omitempty"`
	Context        json.RawMessage `json:"context,omitempty"`
	ForwardedProps json.RawMessage `json:"forwardedProps,omitempty"`
	Resume         []resumeEntry   `json:"resume,omitempty"`
}

// message is one message of a RunAgentInput. Content is a string, or for
// user messages an array of parts.
type message struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content,omitempty"`
}

// tool is a tool the front end offers (frontend tools are not run by
// toolstream: see docs/ui-protocols.md).
type tool struct {
	Name string `json:"name"`
}

// resumeEntry answers one interrupt of the previous run.
type resumeEntry struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"` // resolved or cancelled
	Payload     json.RawMessage `json:"payload,omitempty"`
}

// approvalAnswer is the payload of a resolved approval interrupt (its
// responseSchema says so). Without a payload a resolved interrupt
// approves.
type approvalAnswer struct {
	Approved bool            `json:"approved"`
	Reason   string          `json:"reason,omitempty"`
	Args     json.RawMessage `json:"args,omitempty"`
}

// maxBody bounds what a request brings that the handler keeps: the
// messages' ids and roles, the user messages' content, the resume
// entries, the tools' names, state, context and forwardedProps. The
// rest of the body, the content of the other messages (the conversation's
// assistant and tool messages, which HttpAgent sends with every run and
// the thread does not read), is read and dropped a message at a time;
// the whole body is bounded by wireLimit.
const maxBody = 4 << 20

// wireLimit bounds a request body as a whole (see maxBody): a conversation
// that outgrows it would outgrow the model providers' request limits
// too (32 MB at Anthropic), and one message of it is held in memory at a
// time while it is read.
const wireLimit = 64 << 20

// maxWire is wireLimit, lowered by tests.
var maxWire int64 = wireLimit

// parseRunAgentInput reads and checks an AG-UI RunAgentInput. Its errors say
// what is wrong in words a client developer can act on.
func parseRunAgentInput(data []byte) (*runAgentInput, error) {
	return readRunAgentInput(bytes.NewReader(data))
}

// readRunAgentInput reads a RunAgentInput from r a value at a time and
// checks it: the content of messages other than the user's is dropped as
// it is read (see maxBody). Fields are matched as encoding/json matches
// them (case-insensitively; the last of a key wins).
func readRunAgentInput(r io.Reader) (*runAgentInput, error) {
	var in runAgentInput
	b := body.New(r, maxBody)
	err := b.Object(func(key string) error {
		switch {
		case strings.EqualFold(key, "threadId"):
			return b.String(&in.ThreadID)
		case strings.EqualFold(key, "runId"):
			return b.String(&in.RunID)
		case strings.EqualFold(key, "parentRunId"):
			return b.String(&in.ParentRunID)
		case strings.EqualFold(key, "state"):
			return b.Raw(&in.State)
		case strings.EqualFold(key, "context"):
			return b.Raw(&in.Context)
		case strings.EqualFold(key, "forwardedProps"):
			return b.Raw(&in.ForwardedProps)
		case strings.EqualFold(key, "messages"):
			in.Messages = nil
			return b.Array(func() error {
				var m message
				if err := b.Decode(&m); err != nil {
					return err
				}
				if m.Role != "user" {
					m.Content = nil // not read: dropped here
				}
				in.Messages = append(in.Messages, m)
				return b.Keep(len(m.ID) + len(m.Role) + len(m.Content) + body.PerValue)
			})
		case strings.EqualFold(key, "tools"):
			in.Tools = nil
			return b.Array(func() error {
				var t tool
				if err := b.Decode(&t); err != nil {
					return err
				}
				in.Tools = append(in.Tools, t)
				return b.Keep(len(t.Name) + body.PerValue)
			})
		case strings.EqualFold(key, "resume"):
			in.Resume = nil
			return b.Array(func() error {
				var e resumeEntry
				if err := b.Decode(&e); err != nil {
					return err
				}
				in.Resume = append(in.Resume, e)
				return b.Keep(len(e.InterruptID) + len(e.Status) + len(e.Payload) + body.PerValue)
			})
		}
		return b.Skip()
	})
	if err == nil {
		err = b.End()
	}
	if errors.Is(err, body.ErrTooMuch) {
		return nil, fmt.Errorf("agui: the request's user messages, ids, resume entries, tools, state and context are %w (the 4 MiB the handler keeps of a request): send less history", err)
	}
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, fmt.Errorf("agui: the body is larger than %d bytes (the request body limit): %w", tooLarge.Limit, err)
		}
		return nil, fmt.Errorf("agui: the body is not a RunAgentInput: %w", err)
	}
	if in.ThreadID == "" || in.RunID == "" {
		return nil, errors.New("agui: threadId and runId are required")
	}
	if !utf8.ValidString(in.ThreadID) || !utf8.ValidString(in.RunID) {
		return nil, errors.New("agui: threadId and runId must be UTF-8")
	}
	for i, m := range in.Messages {
		switch m.Role {
		case "user", "assistant", "system", "developer", "tool", "activity", "reasoning":
		default:
			return nil, fmt.Errorf("agui: messages[%d]: unknown role %q", i, m.Role)
		}
		if m.ID == "" {
			return nil, fmt.Errorf("agui: messages[%d]: an id is required", i)
		}
		if m.Role == "user" {
			if _, err := userText(m.Content); err != nil {
				return nil, fmt.Errorf("agui: messages[%d] (user message %q): %w", i, m.ID, err)
			}
		}
	}
	for i, r := range in.Resume {
		if r.InterruptID == "" {
			return nil, fmt.Errorf("agui: resume[%d]: interruptId is required", i)
		}
		switch r.Status {
		case "resolved":
			if _, err := approvalPayload(r.Payload); err != nil {
				return nil, fmt.Errorf("agui: resume[%d]: %w", i, err)
			}
		case "cancelled":
		default:
			return nil, fmt.Errorf("agui: resume[%d]: status %q: want resolved or cancelled", i, r.Status)
		}
	}
	return &in, nil
}

// userText is a user message's text: a string, or the text parts of an
// array joined. Other parts (images, files) are refused rather than
// dropped, and so is a missing or null content: AG-UI's UserMessage
// requires a string or an array of parts, and a message that says
// nothing is a client's bug, not an empty message.
func userText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", errors.New("content is required: a string or an array of parts (it is missing or null)")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return s, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("content must be a string or an array of parts")
	}
	var b strings.Builder
	for j, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("content[%d]: %q parts are not supported (text only)", j, p.Type)
		}
		if p.Text == nil {
			return "", fmt.Errorf("content[%d]: a text part needs its text (a string)", j)
		}
		b.WriteString(*p.Text)
	}
	return b.String(), nil
}

func approvalPayload(raw json.RawMessage) (approvalAnswer, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return approvalAnswer{Approved: true}, nil
	}
	var p approvalAnswer
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("payload: want {\"approved\":bool,\"reason\"?:string,\"args\"?:object}: %w", err)
	}
	if len(p.Args) > 0 && string(p.Args) != "null" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(p.Args, &obj); err != nil {
			return p, errors.New("payload: args must be a JSON object")
		}
	} else {
		p.Args = nil
	}
	return p, nil
}

// input turns the request into what the thread takes: the user messages
// (the thread skips those it has seen) and the answers to interrupts
// (whose ids are the calls' ids).
func (in *runAgentInput) input() thread.Input {
	var out thread.Input
	for _, m := range in.Messages {
		if m.Role != "user" {
			continue
		}
		text, _ := userText(m.Content)
		out.Messages = append(out.Messages, thread.IDMessage{ID: m.ID, Message: agent.UserText(text)})
	}
	for _, r := range in.Resume {
		a := thread.Answer{Call: r.InterruptID}
		if r.Status == "cancelled" {
			a.Reason = "the user cancelled the request"
		} else {
			p, _ := approvalPayload(r.Payload)
			a.Approve, a.Reason, a.Args = p.Approved, p.Reason, p.Args
		}
		out.Answers = append(out.Answers, a)
	}
	return out
}
