package mcpbridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/events"
)

// octetStream is the media type of binary content that names none.
const octetStream = "application/octet-stream"

// metaText is the Result.Meta key under which a result with
// structuredContent keeps its text blocks (joined by newlines), for code
// and UIs: the model sees the structured value instead.
const metaText = "mcp_text"

// resultParts maps an MCP tool result to toolstream parts (see docs/mcp.md,
// "Content"). An isError result becomes the call's error, with the server's
// text. server and tool name the server and its (MCP) tool for errors;
// structured says the tool is registered with the server's output schema,
// whose result must then carry structuredContent: the engine checks the
// last JSON part, and a resource link or an embedded text resource, mapped
// to a JSON part, would otherwise pass for the structured result.
//
// A result with structuredContent gives the model the structured value
// once, as its last part, and no text blocks: MCP has such a tool return
// its value serialized as text too, for clients that cannot read
// structuredContent, so the text is the same thing a second time (as
// JSON, or worded: server-filesystem's `[FILE] a.txt` beside
// {"content":"[FILE] a.txt"}), and the model read both, glued. Text that
// is not the same JSON value is not lost: setMeta (nil for none) gets it
// under metaText.
func resultParts(res *mcp.CallToolResult, server, tool string, structured bool, setMeta func(key string, value any)) ([]events.Part, error) {
	if res.IsError {
		var texts []string
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok && t.Text != "" {
				texts = append(texts, t.Text)
			}
		}
		if len(texts) == 0 {
			return nil, fmt.Errorf("MCP server %q reported an error without a message (it sent %s)", server, contentKinds(res.Content))
		}
		return nil, errors.New(strings.Join(texts, "\n"))
	}
	if structured && res.StructuredContent == nil {
		return nil, fmt.Errorf("MCP server %q: its tool %q has an output schema but its result has no structuredContent (it sent %s), which MCP requires of such a tool",
			server, tool, contentKinds(res.Content))
	}
	var structuredJSON json.RawMessage
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("the MCP server's structuredContent cannot be encoded: %v", err)
		}
		structuredJSON = b
	}
	var parts []events.Part
	var texts []string // the text blocks beside structuredContent
	for _, c := range res.Content {
		p, err := contentPart(c)
		if err != nil {
			return nil, err
		}
		if structuredJSON != nil && p.Type == events.PartText {
			if p.Text != "" && !sameJSON(p.Text, structuredJSON) {
				texts = append(texts, p.Text)
			}
			continue
		}
		parts = events.AppendPart(parts, p)
	}
	if structuredJSON != nil {
		parts = append(parts, events.Part{Type: events.PartJSON, JSON: structuredJSON})
	}
	if len(texts) > 0 && setMeta != nil {
		setMeta(metaText, strings.Join(texts, "\n"))
	}
	return parts, nil
}

// contentPart maps one content block.
func contentPart(c mcp.Content) (events.Part, error) {
	switch c := c.(type) {
	case *mcp.TextContent:
		return events.Text(c.Text), nil
	case *mcp.ImageContent:
		return events.Binary(orOctet(c.MIMEType), c.Data), nil
	case *mcp.AudioContent:
		return events.Binary(orOctet(c.MIMEType), c.Data), nil
	case *mcp.EmbeddedResource:
		if r := c.Resource; r != nil && r.Blob != nil && r.Text == "" {
			return events.Binary(orOctet(r.MIMEType), r.Blob), nil
		}
	}
	// Resource links, text resources and any other block the SDK decodes
	// (it refuses a result with a type it does not know): the block as MCP
	// sent it, so that nothing (the URI, the name) is lost.
	b, err := c.MarshalJSON()
	if err != nil {
		return events.Part{}, fmt.Errorf("the MCP server's content cannot be encoded: %v", err)
	}
	return events.Part{Type: events.PartJSON, JSON: b}, nil
}

// contentKinds says what blocks a result has, for errors: "no content", or
// the count of each kind in order of appearance ("1 image, 2
// resource_link"; an empty text block is an "empty text").
func contentKinds(content []mcp.Content) string {
	if len(content) == 0 {
		return "no content"
	}
	var kinds []string
	count := map[string]int{}
	for _, c := range content {
		k := contentKind(c)
		if count[k] == 0 {
			kinds = append(kinds, k)
		}
		count[k]++
	}
	for i, k := range kinds {
		kinds[i] = fmt.Sprintf("%d %s", count[k], k)
	}
	return strings.Join(kinds, ", ")
}

// contentKind is the MCP type of a content block.
func contentKind(c mcp.Content) string {
	switch c := c.(type) {
	case *mcp.TextContent:
		if c.Text == "" {
			return "empty text"
		}
		return "text"
	case *mcp.ImageContent:
		return "image"
	case *mcp.AudioContent:
		return "audio"
	case *mcp.ResourceLink:
		return "resource_link"
	case *mcp.EmbeddedResource:
		return "resource"
	}
	var typed struct{ Type string }
	if b, err := c.MarshalJSON(); err == nil && json.Unmarshal(b, &typed) == nil && typed.Type != "" {
		return typed.Type
	}
	return fmt.Sprintf("%T", c)
}

func orOctet(mediaType string) string {
	if mediaType == "" {
		return octetStream
	}
	return mediaType
}

// sameJSON reports whether text is the JSON value v (formatting aside).
func sameJSON(text string, v json.RawMessage) bool {
	var a, b bytes.Buffer
	if json.Compact(&a, []byte(text)) != nil || json.Compact(&b, v) != nil {
		return false
	}
	if bytes.Equal(a.Bytes(), b.Bytes()) {
		return true
	}
	// Key order may differ: compare decoded values.
	var x, y any
	if json.Unmarshal(a.Bytes(), &x) != nil || json.Unmarshal(b.Bytes(), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}
