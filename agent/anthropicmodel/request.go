package anthropicmodel

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// InvalidArgumentsKey is the one property of the input a tool_use block of
// the history carries when the call's stored arguments are not a JSON
// object (the model wrote malformed JSON, or an array, a number...): the
// Messages API accepts only an object there, so the adapter sends
// {"_invalid_arguments": "<the arguments as the model wrote them>"}. The
// model then sees what it wrote next to the tool's error result, instead of
// a request the API refuses.
const InvalidArgumentsKey = "_invalid_arguments"

// params builds the request for one turn.
func (m *Model) params(req *agent.Request) (anthropic.MessageNewParams, error) {
	p := anthropic.MessageNewParams{Model: anthropic.Model(m.model), MaxTokens: m.cfg.maxTokens}
	if nonBlank(req.System) != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	msgs, err := messages(req.Messages)
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	for _, d := range req.Tools {
		t, err := tool(d)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, t)
	}
	if len(p.Tools) > 0 && m.cfg.noParallel {
		// tool_choice is refused without tools.
		p.ToolChoice = anthropic.ToolChoiceUnionParam{OfAuto: &anthropic.ToolChoiceAutoParam{DisableParallelToolUse: param.NewOpt(true)}}
	}
	for _, edit := range m.cfg.paramsEditors {
		edit(&p)
	}
	return p, nil
}

// tool turns a definition into a custom tool. The input schema goes out as
// the toolkit wrote it (a json.RawMessage override: property order and
// every keyword kept; the SDK only compacts it).
func tool(d toolkit.Definition) (anthropic.ToolUnionParam, error) {
	schema := bytes.TrimSpace(d.Parameters)
	if len(schema) == 0 || string(schema) == "null" {
		schema = []byte(`{"type":"object"}`)
	}
	if len(schema) == 0 || schema[0] != '{' || !json.Valid(schema) {
		return anthropic.ToolUnionParam{}, fmt.Errorf("anthropicmodel: tool %q: the input schema is not a JSON object: %.80q", d.Name, d.Parameters)
	}
	t := &anthropic.ToolParam{
		Name:        d.Name,
		InputSchema: param.Override[anthropic.ToolInputSchemaParam](json.RawMessage(schema)),
	}
	if d.Description != "" {
		t.Description = param.NewOpt(d.Description)
	}
	return anthropic.ToolUnionParam{OfTool: t}, nil
}

// messages maps the conversation. Tool messages become tool_result blocks
// of a user message; consecutive messages that go out as the user's (the
// results of one turn, and a user message after them) become one user
// message, results first, as the API requires. Messages with nothing to
// send (no content and no calls) are left out: the API refuses empty
// messages.
func messages(msgs []agent.Message) ([]anthropic.MessageParam, error) {
	out := make([]anthropic.MessageParam, 0, len(msgs))
	b := &mediaBudget{skip: max(0, countMedia(msgs)-maxMediaBlocks)}
	var user []anthropic.ContentBlockParamUnion
	flush := func() {
		if len(user) > 0 {
			out = append(out, anthropic.MessageParam{OfUser: &anthropic.UserMessageParam{Content: user}})
			user = nil
		}
	}
	for i, m := range msgs {
		switch m.Role {
		case agent.RoleUser:
			user = append(user, userContent(m.Content, b)...)
		case agent.RoleTool:
			user = append(user, anthropic.ContentBlockParamUnion{OfToolResult: toolResult(m, b)})
		case agent.RoleAssistant:
			// One with nothing to send does not split the user's content
			// around it.
			if blocks := assistantContent(m); len(blocks) > 0 {
				flush()
				out = append(out, anthropic.MessageParam{OfAssistant: &anthropic.AssistantMessageParam{Content: blocks}})
			}
		default:
			return nil, fmt.Errorf("anthropicmodel: message %d has role %q, which the adapter does not know (user, assistant or tool)", i, m.Role)
		}
	}
	flush()
	return out, nil
}

// userContent maps a user message's parts: text, JSON as its text, images
// and PDFs as base64 blocks, other binary as a note saying what was left
// out. Blank text is dropped (the API refuses a text block that is empty
// or only whitespace).
func userContent(parts []events.Part, budget *mediaBudget) []anthropic.ContentBlockParamUnion {
	var out []anthropic.ContentBlockParamUnion
	for _, p := range parts {
		switch b := budget.media(p); {
		case b.text != "":
			out = append(out, anthropic.ContentBlockParamUnion{OfText: &anthropic.TextBlockParam{Text: b.text}})
		case b.image != nil:
			out = append(out, anthropic.ContentBlockParamUnion{OfImage: b.image})
		case b.document != nil:
			out = append(out, anthropic.ContentBlockParamUnion{OfDocument: b.document})
		}
	}
	return out
}

// failedWithoutContent is the content of a failed tool_result that has
// none to send: the API refuses is_error without content.
const failedWithoutContent = "Error: the tool failed without saying why"

// toolResult maps a tool message: its content as text, image and document
// blocks (blank text dropped, as for a user), is_error for a failed call.
func toolResult(m agent.Message, budget *mediaBudget) *anthropic.ToolResultBlockParam {
	r := &anthropic.ToolResultBlockParam{ToolUseID: wireID(m.CallID)}
	if m.IsError {
		r.IsError = param.NewOpt(true)
	}
	for _, p := range m.Content {
		switch b := budget.media(p); {
		case b.text != "":
			r.Content = append(r.Content, anthropic.ToolResultBlockParamContentUnion{OfText: &anthropic.TextBlockParam{Text: b.text}})
		case b.image != nil:
			r.Content = append(r.Content, anthropic.ToolResultBlockParamContentUnion{OfImage: b.image})
		case b.document != nil:
			r.Content = append(r.Content, anthropic.ToolResultBlockParamContentUnion{OfDocument: b.document})
		}
	}
	if m.IsError && len(r.Content) == 0 {
		r.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: failedWithoutContent}}}
	}
	return r
}

// mapped is one part as the API takes it: text, an image or a document.
type mapped struct {
	text     string
	image    *anthropic.ImageBlockParam
	document *anthropic.DocumentBlockParam
}

// The API's limits on images and documents: an image's base64 is at most
// 5 MB ("image exceeds 5 MB maximum"), and a request holds at most 100
// images and documents ("too many images and documents"). Each refusal is
// a 400 that every later turn would repeat.
const (
	maxImageBase64 = 5 << 20
	maxMediaBlocks = 100
)

// mediaBudget says how many of a request's images and documents, the
// oldest first, go as notes so that the newest maxMediaBlocks go.
type mediaBudget struct{ skip int }

// countMedia counts the parts of msgs that go as image or document blocks.
func countMedia(msgs []agent.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role != agent.RoleUser && m.Role != agent.RoleTool {
			continue // an assistant's binary parts go as notes
		}
		for _, p := range m.Content {
			if isMedia, note := sendable(p); p.Type == events.PartBinary && isMedia && note == "" {
				n++
			}
		}
	}
	return n
}

// sendable reports whether a binary part is of a type the API takes as an
// image or document block, and if so, the note that stands for it when the
// API would refuse it anyway ("" when it can go).
func sendable(p events.Part) (isMedia bool, note string) {
	switch p.MediaType {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		if n := base64.StdEncoding.EncodedLen(len(p.Data)); n > maxImageBase64 {
			return true, fmt.Sprintf("[%s of %d bytes left out: the Anthropic Messages API takes images up to 5 MB (base64), this one is %d bytes]", p.MediaType, len(p.Data), n)
		}
	case "application/pdf":
	default:
		return false, ""
	}
	if len(p.Data) == 0 {
		return true, fmt.Sprintf("[empty %s left out: 0 bytes]", p.MediaType)
	}
	return true, ""
}

// media maps one part. Blank text maps to nothing: the API refuses text
// blocks that are empty or only whitespace. An image or a document the API
// would refuse (without data, an image over 5 MB) becomes a note, and so
// does one of the oldest when the request has more than the API takes.
func (budget *mediaBudget) media(p events.Part) mapped {
	switch p.Type {
	case events.PartText:
		return mapped{text: nonBlank(p.Text)}
	case events.PartJSON:
		return mapped{text: nonBlank(string(p.JSON))}
	case events.PartBinary:
		if isMedia, note := sendable(p); note != "" {
			return mapped{text: note}
		} else if isMedia && budget.skip > 0 {
			budget.skip--
			return mapped{text: fmt.Sprintf("[%s of %d bytes left out: a request to the Anthropic Messages API holds at most %d images and documents, and this is one of the oldest]", p.MediaType, len(p.Data), maxMediaBlocks)}
		}
		switch p.MediaType {
		case "image/png", "image/jpeg", "image/gif", "image/webp":
			return mapped{image: &anthropic.ImageBlockParam{Source: anthropic.ImageBlockParamSourceUnion{
				OfBase64: &anthropic.Base64ImageSourceParam{
					Data:      base64.StdEncoding.EncodeToString(p.Data),
					MediaType: anthropic.Base64ImageSourceMediaType(p.MediaType),
				}}}}
		case "application/pdf":
			return mapped{document: &anthropic.DocumentBlockParam{Source: anthropic.DocumentBlockParamSourceUnion{
				OfBase64: &anthropic.Base64PDFSourceParam{Data: base64.StdEncoding.EncodeToString(p.Data)},
			}}}
		}
		mt := p.MediaType
		if mt == "" {
			mt = "unknown type"
		}
		return mapped{text: fmt.Sprintf("[binary content left out: %s, %d bytes; the Anthropic Messages API takes images (png, jpeg, gif, webp) and PDF documents only]", mt, len(p.Data))}
	}
	return mapped{}
}

// assistantContent maps an assistant message: thinking blocks kept in its
// Extra first (unchanged, as the API requires them back with tool use),
// then its text, then one tool_use block per call.
func assistantContent(m agent.Message) []anthropic.ContentBlockParamUnion {
	var out []anthropic.ContentBlockParamUnion
	for _, t := range thinkingFromExtra(m.Extra) {
		if t == nil {
			continue
		}
		switch t.Type {
		case "thinking":
			out = append(out, anthropic.ContentBlockParamUnion{OfThinking: &anthropic.ThinkingBlockParam{Thinking: t.Thinking, Signature: t.Signature}})
		case "redacted_thinking":
			out = append(out, anthropic.ContentBlockParamUnion{OfRedactedThinking: &anthropic.RedactedThinkingBlockParam{Data: t.Data}})
		}
	}
	if text := assistantText(m.Content); nonBlank(text) != "" {
		out = append(out, anthropic.ContentBlockParamUnion{OfText: &anthropic.TextBlockParam{Text: text}})
	}
	for _, c := range m.Calls {
		out = append(out, anthropic.ContentBlockParamUnion{OfToolUse: &anthropic.ToolUseBlockParam{
			ID:    wireID(c.ID),
			Name:  c.Name,
			Input: wireInput(c.Args),
		}})
	}
	return out
}

// nonBlank returns s, or "" when it is only whitespace (which the API
// refuses as a text block). Anything else goes as it is: a blank line
// around words is part of them.
func nonBlank(s string) string {
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return s
}

// assistantText joins an assistant message's text and JSON parts; binary
// parts (a stored conversation may hold some) become a note saying what was
// left out, since the adapter sends an assistant's words as text only.
func assistantText(parts []events.Part) string {
	var b strings.Builder
	for _, p := range parts {
		switch p.Type {
		case events.PartText:
			b.WriteString(p.Text)
		case events.PartJSON:
			b.Write(p.JSON)
		case events.PartBinary:
			mt := p.MediaType
			if mt == "" {
				mt = "unknown type"
			}
			fmt.Fprintf(&b, "[binary content left out: %s, %d bytes; an assistant message is sent as text]", mt, len(p.Data))
		}
	}
	return b.String()
}

// wireInput is what a stored call's arguments become in a tool_use block,
// whose input must be a JSON object:
//   - blank arguments: {};
//   - a JSON object: itself, as written;
//   - a JSON string holding an object (arguments encoded twice, which the
//     toolkit unwraps and runs): that object;
//   - anything else: {"_invalid_arguments": "<the text>"} (see
//     [InvalidArgumentsKey]).
func wireInput(args json.RawMessage) json.RawMessage {
	a := bytes.TrimSpace(args)
	if len(a) == 0 {
		return json.RawMessage(`{}`)
	}
	if json.Valid(a) {
		switch a[0] {
		case '{':
			return json.RawMessage(a)
		case '"':
			var s string
			if json.Unmarshal(a, &s) == nil {
				inner := bytes.TrimSpace([]byte(s))
				if len(inner) > 0 && inner[0] == '{' && json.Valid(inner) {
					return json.RawMessage(inner)
				}
			}
		}
	}
	// json.Marshal of a map with a string value cannot fail; invalid UTF-8
	// becomes U+FFFD.
	b, _ := json.Marshal(map[string]string{InvalidArgumentsKey: string(args)})
	return b
}

// wireID returns a call id the API accepts (^[a-zA-Z0-9_-]+$): the id
// itself when it does, else "toolu_" and a hash of it, the same for the
// tool_use block and its tool_result. Ids from other providers or stored
// conversations thus keep their pairs.
func wireID(id string) string {
	ok := id != ""
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = c == '_' || c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
	}
	if ok {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "toolu_" + hex.EncodeToString(sum[:12])
}

// thinkingBlock is a thinking or redacted_thinking block of a reply, kept
// in Reply.Extra so that it goes back unchanged with the tool results.
type thinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

// extra is the adapter's Reply.Extra.
type extra struct {
	Thinking []*thinkingBlock `json:"anthropic_thinking"`
}

func thinkingExtra(blocks []*thinkingBlock) json.RawMessage {
	if len(blocks) == 0 {
		return nil
	}
	b, err := json.Marshal(extra{Thinking: blocks})
	if err != nil {
		return nil
	}
	return b
}

// thinkingFromExtra reads the thinking blocks back; Extra written by
// another adapter (or nothing) gives none.
func thinkingFromExtra(raw json.RawMessage) []*thinkingBlock {
	if len(raw) == 0 {
		return nil
	}
	var e extra
	if json.Unmarshal(raw, &e) != nil {
		return nil
	}
	return e.Thinking
}
