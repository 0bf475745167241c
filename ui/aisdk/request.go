package aisdk

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/ui/internal/body"
	"github.com/toolstream/toolstream/ui/internal/thread"
)

// chatRequest is the body useChat's default transport posts: the chat's
// id and its whole message list (the fields toolstream reads).
type chatRequest struct {
	ID        string      `json:"id"`
	Messages  []uiMessage `json:"messages"`
	Trigger   string      `json:"trigger,omitempty"` // submit-message (regenerate-message is refused)
	MessageID string      `json:"messageId,omitempty"`
}

// uiMessage is one message of the chat.
type uiMessage struct {
	ID    string   `json:"id"`
	Role  string   `json:"role"`
	Parts []uiPart `json:"parts"`
}

// uiPart is one part of a message: text, a tool part (type "dynamic-tool"
// or "tool-<name>") with its state and approval, or another part
// (ignored).
type uiPart struct {
	Type       string    `json:"type"`
	Text       string    `json:"text,omitempty"`
	ToolCallID string    `json:"toolCallId,omitempty"`
	State      string    `json:"state,omitempty"`
	Approval   *approval `json:"approval,omitempty"`
}

// approval is a tool part's approval: the request's id and, once the
// person answered (state approval-responded), the answer.
type approval struct {
	ID       string `json:"id"`
	Approved *bool  `json:"approved,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// maxBody bounds what a request brings that the handler keeps: the
// chat's and the messages' ids, roles and parts, the user messages'
// text. The rest of the body, the text of the other messages and the
// tool parts' inputs and outputs (useChat sends the whole conversation
// with every request; the thread does not read them), is read and
// dropped a message at a time; the whole body is bounded by wireLimit.
const maxBody = 4 << 20

// wireLimit bounds a request body as a whole (see maxBody): a conversation
// that outgrows it would outgrow the model providers' request limits
// too (32 MB at Anthropic), and one message of it is held in memory at a
// time while it is read.
const wireLimit = 64 << 20

// maxWire is wireLimit, lowered by tests.
var maxWire int64 = wireLimit

// parseChatRequest reads and checks a useChat request.
func parseChatRequest(data []byte) (*chatRequest, error) {
	return readChatRequest(bytes.NewReader(data))
}

// readChatRequest reads a useChat request from r a message at a time and
// checks it: what the thread does not read is dropped as it is read (see
// maxBody). Fields are matched as encoding/json matches them
// (case-insensitively; the last of a key wins).
func readChatRequest(r io.Reader) (*chatRequest, error) {
	var req chatRequest
	b := body.New(r, maxBody)
	err := b.Object(func(key string) error {
		switch {
		case strings.EqualFold(key, "id"):
			return b.String(&req.ID)
		case strings.EqualFold(key, "trigger"):
			return b.String(&req.Trigger)
		case strings.EqualFold(key, "messageId"):
			return b.String(&req.MessageID)
		case strings.EqualFold(key, "messages"):
			req.Messages = nil
			return b.Array(func() error {
				var m uiMessage
				if err := b.Decode(&m); err != nil {
					return err
				}
				n := len(m.ID) + len(m.Role) + body.PerValue
				for i := range m.Parts {
					p := &m.Parts[i]
					if m.Role != "user" {
						p.Text = "" // not read: dropped here
					}
					n += len(p.Type) + len(p.Text) + len(p.ToolCallID) + len(p.State) + body.PerValue
					if p.Approval != nil {
						n += len(p.Approval.ID) + len(p.Approval.Reason) + body.PerValue
					}
				}
				req.Messages = append(req.Messages, m)
				return b.Keep(n)
			})
		}
		return b.Skip()
	})
	if err == nil {
		err = b.End()
	}
	if errors.Is(err, body.ErrTooMuch) {
		return nil, fmt.Errorf("aisdk: the request's ids, parts and user messages' text are %w (the 4 MiB the handler keeps of a request): send less history", err)
	}
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, fmt.Errorf("aisdk: the body is larger than %d bytes (the request body limit): %w", tooLarge.Limit, err)
		}
		return nil, fmt.Errorf("aisdk: the body is not a useChat request ({id, messages}): %w", err)
	}
	if req.ID == "" {
		return nil, errors.New("aisdk: the chat id (id) is required")
	}
	switch req.Trigger {
	case "", "submit-message":
	case "regenerate-message":
		return nil, errors.New("aisdk: regenerate-message is not supported: send a new message instead")
	default:
		return nil, fmt.Errorf("aisdk: unknown trigger %q", req.Trigger)
	}
	for i, m := range req.Messages {
		switch m.Role {
		case "user", "assistant", "system":
		default:
			return nil, fmt.Errorf("aisdk: messages[%d]: unknown role %q", i, m.Role)
		}
		if m.ID == "" {
			return nil, fmt.Errorf("aisdk: messages[%d]: an id is required", i)
		}
		for j, p := range m.Parts {
			if m.Role == "user" && p.Type != "text" && p.Type != "step-start" && !strings.HasPrefix(p.Type, "data-") {
				return nil, fmt.Errorf("aisdk: messages[%d].parts[%d]: %q parts are not supported in user messages (text only)", i, j, p.Type)
			}
			if isTool(p.Type) && p.State == "approval-responded" {
				if p.ToolCallID == "" || p.Approval == nil || p.Approval.Approved == nil {
					return nil, fmt.Errorf("aisdk: messages[%d].parts[%d]: an approval-responded tool part needs toolCallId and approval.approved", i, j)
				}
			}
		}
	}
	return &req, nil
}

func isTool(typ string) bool { return typ == "dynamic-tool" || strings.HasPrefix(typ, "tool-") }

// input is what the request brings to the thread: its user messages (the
// thread skips those it took before) and the answers of the last
// assistant message's tool parts that were answered (approval-responded).
func (req *chatRequest) input() thread.Input {
	var in thread.Input
	lastAssistant := -1
	for i, m := range req.Messages {
		switch m.Role {
		case "user":
			var b strings.Builder
			for _, p := range m.Parts {
				if p.Type == "text" {
					b.WriteString(p.Text)
				}
			}
			in.Messages = append(in.Messages, thread.IDMessage{ID: m.ID, Message: agent.UserText(b.String())})
		case "assistant":
			lastAssistant = i
		}
	}
	if lastAssistant >= 0 && lastAssistant == len(req.Messages)-1 {
		for _, p := range req.Messages[lastAssistant].Parts {
			if isTool(p.Type) && p.State == "approval-responded" && p.Approval != nil && p.Approval.Approved != nil {
				in.Answers = append(in.Answers, thread.Answer{Call: p.ToolCallID, Approve: *p.Approval.Approved, Reason: p.Approval.Reason})
			}
		}
	}
	return in
}
