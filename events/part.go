package events

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// PartType names the kind of a content part.
type PartType string

// Content part types.
const (
	PartText   PartType = "text"
	PartJSON   PartType = "json"
	PartBinary PartType = "binary"
)

// Part is one piece of model-visible content: text, a JSON value, or binary
// data with a media type.
type Part struct {
	Type PartType `json:"type"`
	// Text is set for text parts.
	Text string `json:"text,omitempty"`
	// JSON is set for JSON parts; it holds one valid JSON value.
	JSON json.RawMessage `json:"json,omitempty"`
	// Data is set for binary parts (base64 on the wire).
	Data []byte `json:"data,omitempty"`
	// MediaType describes Data, for example "image/png".
	MediaType string `json:"media_type,omitempty"`
}

// Equal reports whether p and q are the same part, byte for byte (JSON is
// compared as written, not by value).
func (p Part) Equal(q Part) bool {
	return p.Type == q.Type && p.Text == q.Text && p.MediaType == q.MediaType &&
		string(p.JSON) == string(q.JSON) && string(p.Data) == string(q.Data)
}

// EqualContent reports whether two contents are the same parts in the same
// order. Compare contents after [Concat] when adjacent text parts may be
// split differently.
func EqualContent(a, b []Part) bool { return slices.EqualFunc(a, b, Part.Equal) }

// Text returns a text part.
func Text(s string) Part { return Part{Type: PartText, Text: s} }

// JSON returns a JSON part holding v marshalled with encoding/json.
func JSON(v any) (Part, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Part{}, err
	}
	return Part{Type: PartJSON, JSON: b}, nil
}

// Binary returns a binary part.
func Binary(mediaType string, data []byte) Part {
	if mediaType == "" {
		mediaType = "application/octet-stream"
	}
	return Part{Type: PartBinary, Data: data, MediaType: mediaType}
}

// IsEmpty reports whether the part adds nothing to a result.
func (p Part) IsEmpty() bool {
	switch p.Type {
	case PartText:
		return p.Text == ""
	case PartJSON:
		return len(p.JSON) == 0
	case PartBinary:
		return len(p.Data) == 0
	}
	return true
}

// String renders the part as text for a model that only takes text: text as
// is, JSON as compact JSON, binary as a short placeholder.
func (p Part) String() string {
	switch p.Type {
	case PartText:
		return p.Text
	case PartJSON:
		return string(p.JSON)
	case PartBinary:
		return fmt.Sprintf("[binary %s, %d bytes]", p.MediaType, len(p.Data))
	}
	return ""
}

// AppendPart appends a delta to accumulated content. It is the one rule by
// which deltas add up to a result: adjacent text parts merge into one, other
// parts are kept as they are, empty parts add nothing. Merging copies the
// text so far: to add up a long stream of text deltas, use a [Reassembler],
// which follows the same rule in linear time.
func AppendPart(content []Part, p Part) []Part {
	if p.IsEmpty() {
		return content
	}
	if n := len(content); n > 0 && p.Type == PartText && content[n-1].Type == PartText {
		content[n-1].Text += p.Text
		return content
	}
	return append(content, p)
}

// Concat returns the content that the given deltas add up to.
func Concat(deltas ...Part) []Part {
	var out []Part
	for _, d := range deltas {
		out = AppendPart(out, d)
	}
	return out
}

// ContentText renders content as one string (see [Part.String]). A JSON or
// binary part is set off from its neighbours by a newline (see
// [PartBreak]), so that a model never reads one value glued to the next
// (`a.txt{"files":1}`); adjacent text parts, the pieces of one stream, join
// as they are.
func ContentText(content []Part) string {
	if len(content) == 1 {
		return content[0].String()
	}
	var b strings.Builder
	var prev Part
	for _, p := range content {
		if p.IsEmpty() {
			continue
		}
		if PartBreak(prev, p) {
			b.WriteByte('\n')
		}
		b.WriteString(p.String())
		prev = p
	}
	return b.String()
}

// PartBreak reports whether a rendering of content as one string puts a
// newline between the non-empty parts prev and next: when either is a
// JSON or binary part and no newline is there already (at the end of a
// text prev or the start of a text next). It is false when prev is the
// zero Part (next comes first).
func PartBreak(prev, next Part) bool {
	switch {
	case prev.IsEmpty() || next.IsEmpty(), prev.Type == PartText && next.Type == PartText:
		return false
	case prev.Type == PartText && strings.HasSuffix(prev.Text, "\n"),
		next.Type == PartText && strings.HasPrefix(next.Text, "\n"):
		return false
	}
	return true
}
