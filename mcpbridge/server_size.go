package mcpbridge

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/toolkit"
)

// defaultMaxResultSize is the largest tools/call result a Server sends by
// default, in bytes of its JSON encoding: 1 MiB under the 16 MiB frame the
// go-sdk's clients read by default (a line on stdio, an event on streamable
// HTTP), room for the JSON-RPC envelope around it. A client that gets a
// larger frame closes the connection, failing every call on it.
const defaultMaxResultSize = 15 << 20

// WithMaxResultSize sets the largest tools/call result the server sends, in
// bytes of the result's JSON encoding as the SDK writes it (0:
// the default, 15 MiB; negative: no limit). Set it to what the clients
// served can read. A larger result goes out as the model can use it: a
// JSON result is not repeated as text when that copy alone puts it over
// the limit (the JSON goes once, as structuredContent, with a text block
// that says so), and a result still too large is replaced by an isError
// result that gives its size and the limit and says the call ran. The
// toolkit's result and events are the tool's, unchanged.
func WithMaxResultSize(n int) ServerOption {
	return func(o *serverOptions) { o.maxResult = n }
}

// fit returns out, or what is sent instead when out is over the server's
// limit. copyAt is the index in out.Content of the text copy of
// out.StructuredContent, or -1.
func (s *Server) fit(res toolkit.Result, out *mcp.CallToolResult, copyAt int) *mcp.CallToolResult {
	limit := s.opts.maxResult
	if limit == 0 {
		limit = defaultMaxResultSize
	}
	if limit < 0 {
		return out
	}
	size, err := encodedSize(out, limit)
	if err != nil {
		return errorResult(fmt.Sprintf("the result of tool %q cannot be sent over MCP: %v", res.Call.Name, err))
	}
	if size <= limit {
		return out
	}
	if copyAt >= 0 && out.StructuredContent != nil {
		// MCP asks for structuredContent when there is an output schema
		// (MUST) and for its text copy for older clients (SHOULD): the copy
		// gives way.
		once := *out
		once.Content = append([]mcp.Content(nil), out.Content...)
		once.Content[copyAt] = &mcp.TextContent{Text: fmt.Sprintf(
			"The JSON result is in structuredContent only: with its copy here as text, the result would be %s, over this server's limit of %s.",
			bytesText(size), bytesText(limit))}
		n, err := encodedSize(&once, limit)
		if err == nil && n <= limit {
			s.warn("mcpbridge: a JSON result sent without its text copy, which would put it over the limit", res, size, limit)
			return &once
		}
		if err == nil {
			size = n // the smallest it could be sent as
		}
	}
	s.warn("mcpbridge: a result over the limit replaced by an error", res, size, limit)
	what := "The call ran and succeeded, but its result is not sent"
	if res.IsError() {
		// A failure's output ends with its error: that much is told.
		why := string(res.State)
		if res.Err != nil {
			why = trimQuote(res.Err.Error(), 500)
		}
		what = fmt.Sprintf("The call failed (%s), and its output is not sent", why)
	}
	return errorResult(fmt.Sprintf(
		"The result of tool %q is too large to send over MCP: %s encoded, over this server's limit of %s. %s: if you call it again, ask for less (a narrower query, a page, a summary).",
		res.Call.Name, bytesText(size), bytesText(limit), what))
}

// warn logs a result changed for its size, with the server's logger if
// one was set (WithLogger).
func (s *Server) warn(msg string, res toolkit.Result, size, limit int) {
	if l := s.opts.logger; l != nil {
		l.Warn(msg, "tool", res.Call.Name, "call", res.Call.ID, "bytes", size, "limit", limit)
	}
}

// encodedSize returns the size of out's JSON encoding as the SDK writes it
// (encoding/json). A result under the limit by a cheap bound is not
// measured further; otherwise its large fields (texts, binary data, the
// structured content) are counted as encoding/json would write them, and
// the rest is encoded with a one-byte placeholder in each: a result of
// megabytes is not encoded twice to be measured.
func encodedSize(out *mcp.CallToolResult, limit int) (int, error) {
	if n, ok := sizeBound(out); ok && n <= limit {
		return n, nil
	}
	shell := *out
	shell.Content = make([]mcp.Content, len(out.Content))
	extra := 0
	for i, c := range out.Content {
		shell.Content[i] = c
		switch c := c.(type) {
		case *mcp.TextContent:
			t := *c
			t.Text, extra = "x", extra+stringSize(c.Text)-len(`"x"`)
			shell.Content[i] = &t
		case *mcp.ImageContent:
			if len(c.Data) > 0 {
				t := *c
				t.Data, extra = placeholder, extra+base64.StdEncoding.EncodedLen(len(c.Data))-len("AA==")
				shell.Content[i] = &t
			}
		case *mcp.AudioContent:
			if len(c.Data) > 0 {
				t := *c
				t.Data, extra = placeholder, extra+base64.StdEncoding.EncodedLen(len(c.Data))-len("AA==")
				shell.Content[i] = &t
			}
		case *mcp.EmbeddedResource:
			// mcpContent's resources hold a blob, never a text.
			if c.Resource != nil && len(c.Resource.Blob) > 0 {
				t, r := *c, *c.Resource
				r.Blob, extra = placeholder, extra+base64.StdEncoding.EncodedLen(len(c.Resource.Blob))-len("AA==")
				t.Resource = &r
				shell.Content[i] = &t
			}
		}
	}
	if raw, ok := out.StructuredContent.(json.RawMessage); ok && len(raw) > 0 {
		shell.StructuredContent, extra = json.RawMessage("0"), extra+compactSize(raw)-1
	}
	b, err := json.Marshal(&shell)
	return len(b) + extra, err
}

// placeholder is one byte of data: "AA==" in base64.
var placeholder = []byte{0}

// asciiSize is how many bytes encoding/json writes for an ASCII byte in a
// string, escaping HTML as json.Marshal does.
var asciiSize = func() (t [utf8.RuneSelf]uint8) {
	for b := range t {
		switch {
		case b == '\\' || b == '"' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
			t[b] = 2
		case b < 0x20 || b == '<' || b == '>' || b == '&':
			t[b] = 6 // \u00XX
		default:
			t[b] = 1
		}
	}
	return t
}()

// stringSize is the size of s encoded as a JSON string by json.Marshal.
func stringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			n += int(asciiSize[b])
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029':
			n += 6 // \ufffd, \u2028, \u2029
		default:
			n += size
		}
		i += size
	}
	return n
}

// compactSize is the size of the valid JSON raw as json.Marshal writes a
// json.RawMessage: without the whitespace between tokens, with <, >, & and
// U+2028, U+2029 escaped.
func compactSize(raw []byte) int {
	n := 0
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '<' || c == '>' || c == '&':
			n += 6
			continue
		case c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8:
			n += 6
			i += 2
			continue
		}
		if inString {
			n++
			switch c {
			case '\\':
				i++ // the escaped byte: ASCII, kept
				n++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
		case '"':
			inString = true
			n++
		default:
			n++
		}
	}
	return n
}

// sizeBound bounds out's JSON encoding from above, if it can: encoding/json
// writes a byte of a string or of raw JSON as at most 6 ("\u003c"), binary
// data in base64, and the fields around them take less than the room
// counted for each.
func sizeBound(out *mcp.CallToolResult) (int, bool) {
	n := 64
	for _, c := range out.Content {
		// Only the content this package makes: no meta, no annotations.
		switch c := c.(type) {
		case *mcp.TextContent:
			if c.Meta != nil || c.Annotations != nil {
				return 0, false
			}
			n += 32 + 6*len(c.Text)
		case *mcp.ImageContent:
			if c.Meta != nil || c.Annotations != nil {
				return 0, false
			}
			n += 64 + 6*len(c.MIMEType) + base64.StdEncoding.EncodedLen(len(c.Data))
		case *mcp.AudioContent:
			if c.Meta != nil || c.Annotations != nil {
				return 0, false
			}
			n += 64 + 6*len(c.MIMEType) + base64.StdEncoding.EncodedLen(len(c.Data))
		case *mcp.EmbeddedResource:
			r := c.Resource
			if r == nil || r.Meta != nil || c.Meta != nil || c.Annotations != nil {
				return 0, false
			}
			n += 128 + 6*(len(r.URI)+len(r.MIMEType)+len(r.Text)) + base64.StdEncoding.EncodedLen(len(r.Blob))
		default:
			return 0, false
		}
	}
	switch sc := out.StructuredContent.(type) {
	case nil:
	case json.RawMessage:
		n += 32 + 6*len(sc)
	default:
		return 0, false
	}
	return n, true
}

// bytesText says a size in bytes and in KiB or MiB.
func bytesText(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%d bytes (%s MiB)", n, trimFloat(float64(n)/(1<<20)))
	case n >= 1<<10:
		return fmt.Sprintf("%d bytes (%s KiB)", n, trimFloat(float64(n)/(1<<10)))
	}
	return fmt.Sprintf("%d bytes", n)
}

// trimFloat writes f with one decimal, none when it is whole.
func trimFloat(f float64) string {
	s := fmt.Sprintf("%.1f", f)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		return s[:len(s)-2]
	}
	return s
}
