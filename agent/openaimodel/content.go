package openaimodel

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime"
	"strings"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// segment is a piece of a message's content as both APIs take it: text,
// or an image as a data URL.
type segment struct {
	text  string
	image string // data URL; empty for text
}

// imageTypes are the image formats both APIs accept as input.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// segments turns parts into text and images: text parts as they are, JSON
// parts as their JSON text, images as data URLs, and any other binary part
// as a short text saying what was left out (never silently dropped).
// Adjacent text is merged; a JSON value or a note is set off from the text
// beside it by a newline, as events.ContentText does, so that the model
// never reads two values glued together (`{"a":1}{"b":2}`).
func segments(parts []events.Part) []segment {
	var out []segment
	var prev events.Part                                          // the last part in the text segment at the end
	note := events.Part{Type: events.PartBinary, Data: []byte{0}} // a note is set off like a value
	addText := func(p events.Part, s string) {
		if s == "" {
			return
		}
		if n := len(out); n > 0 && out[n-1].image == "" {
			if events.PartBreak(prev, p) {
				s = "\n" + s
			}
			out[n-1].text += s
		} else {
			out = append(out, segment{text: s})
		}
		prev = p
	}
	for _, p := range parts {
		switch p.Type {
		case events.PartText:
			addText(p, p.Text)
		case events.PartJSON:
			addText(p, string(p.JSON))
		case events.PartBinary:
			if mt := mediaType(p.MediaType); imageTypes[mt] && len(p.Data) > 0 {
				out = append(out, segment{image: "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(p.Data)})
			} else {
				addText(note, leftOut(p))
			}
		default:
			addText(note, fmt.Sprintf("[content of unknown type %q left out]", p.Type))
		}
	}
	return out
}

// mediaType is the media type without parameters, in lower case.
func mediaType(s string) string {
	if mt, _, err := mime.ParseMediaType(s); err == nil {
		return mt
	}
	return strings.ToLower(strings.TrimSpace(s))
}

// leftOut is the text that stands for binary content the API cannot take.
func leftOut(p events.Part) string {
	mt := p.MediaType
	if mt == "" {
		mt = "of unknown type"
	}
	return fmt.Sprintf("[binary content %s (%d bytes) left out: this model's API cannot take it]", mt, len(p.Data))
}

// hasImage reports whether segs hold an image.
func hasImage(segs []segment) bool {
	for _, s := range segs {
		if s.image != "" {
			return true
		}
	}
	return false
}

// joinText returns the text of segs, with placeholder for each image (for
// an API that takes only text here).
func joinText(segs []segment, placeholder func(n int) string) string {
	var b strings.Builder
	n := 0
	for _, s := range segs {
		if s.image == "" {
			b.WriteString(s.text)
			continue
		}
		n++
		if placeholder != nil {
			b.WriteString(placeholder(n))
		}
	}
	return b.String()
}

// toolSegments is a tool message's content. OpenAI's APIs have no error
// flag for a tool result; the toolkit already writes a failure as
// "Error: <message>", and a failed result that does not say so gets that
// prefix, so that the model can tell.
func toolSegments(m agent.Message) []segment {
	segs := segments(m.Content)
	if !m.IsError {
		return segs
	}
	for _, s := range segs {
		if strings.Contains(s.text, "Error:") {
			return segs
		}
	}
	if len(segs) > 0 && segs[0].image == "" {
		segs[0].text = "Error: " + segs[0].text
		return segs
	}
	return append([]segment{{text: "Error: the tool failed"}}, segs...)
}

// orEmptyObject returns args, or {} when they are blank: a tool without
// parameters is often called with "", and the APIs want JSON back.
func orEmptyObject(args json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(args)) == 0 {
		return json.RawMessage("{}")
	}
	return args
}

// functionJSON is a tool definition as a function object, its parameters
// the toolkit's bytes (json.RawMessage is written as it is, compacted:
// decoding the schema would turn large integers into floats and sort its
// keys). strict is added for the Responses API, whose functions are strict
// unless told otherwise.
func functionJSON(d toolkit.Definition, responses bool) (json.RawMessage, error) {
	params := json.RawMessage(bytes.TrimSpace(d.Parameters))
	if len(params) == 0 {
		params = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	if params[0] != '{' || !json.Valid(params) {
		return nil, fmt.Errorf("openaimodel: tool %q: parameters are not a JSON object: %s", d.Name, snippet(string(params)))
	}
	if d.Name == "" {
		return nil, fmt.Errorf("openaimodel: a tool definition has no name")
	}
	var fn struct {
		Type        string          `json:"type,omitempty"`
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict,omitempty"`
	}
	fn.Name, fn.Description, fn.Parameters = d.Name, d.Description, params
	if responses {
		fn.Type = "function"
		fn.Strict = new(bool)
	}
	return json.Marshal(fn)
}

// The longest call ids the APIs take back: Chat Completions refuses a
// tool_calls id (and tool_call_id) over 40 characters, the Responses API a
// call_id over 64 (400 string_above_max_length). The toolkit carries ids up
// to toolkit.MaxCallIDLen; a conversation from another provider, a store or
// a UI may have longer ones.
const (
	chatIDLimit      = 40
	responsesIDLimit = 64
)

// wireID returns the id a call goes out with: id itself when the API takes
// it, else "call_" and 24 hex digits of its SHA-256, the same for the call
// and its result.
func wireID(id string, limit int) string {
	if len(id) <= limit {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "call_" + hex.EncodeToString(sum[:12])
}
