package interceptors

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Text an approval request shows a person is partly the model's (a
// command in a label, a folder, a path in a reason, the arguments). A
// character that changes how text reads without showing itself would let
// a label read differently from what it grants: a right-to-left override
// (U+202E) turns "~ fr- mr" around ("Trojan Source", CVE-2021-42574), a
// newline shown as a space joins two commands into one harmless-looking
// line. Such characters are shown escaped, \u202e (\U000e0041 beyond the
// BMP), in every text a request shows; the arguments keep their value.

// hidden reports whether r changes how text reads without showing itself:
// control characters (C0 with tab and newline, DEL, C1), format
// characters (bidirectional controls, zero-width characters, U+FEFF, tag
// characters, ...), line and paragraph separators, spaces other than
// U+0020 (a no-break space is not a word break for a shell), other
// default-ignorable code points (Hangul fillers, ...) and variation
// selectors.
func hidden(r rune) bool {
	if r < 0x7f {
		return r < 0x20
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zs, unicode.Zl, unicode.Zp,
		unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}

// visibleText returns s with the characters hidden reports, and bytes that
// are not UTF-8 (\xff), escaped. It returns s itself when nothing is
// hidden, and is idempotent: an escape is plain ASCII. A backslash the
// text had is kept as it is.
func visibleText(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return r == utf8.RuneError || hidden(r) })
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case hidden(r) && r > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, r)
		case hidden(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// visibleJSON returns raw JSON with the hidden characters in its strings
// (and bytes that are not UTF-8, which a decoder reads as U+FFFD) written
// as JSON escapes: the same value for every decoder, and text a person
// reading the JSON sees them in. It returns raw itself when nothing
// changes. Outside strings, valid JSON is ASCII: nothing there changes.
func visibleJSON(raw json.RawMessage) json.RawMessage {
	if !slices.ContainsFunc(raw, func(c byte) bool { return c >= 0x7f }) {
		return raw // ASCII: C0 controls cannot stand in a JSON string unescaped
	}
	out := make([]byte, 0, len(raw)+16)
	inString, escaped := false, false
	changed := false
	for i := 0; i < len(raw); {
		c := raw[i]
		if !inString {
			if c == '"' {
				inString = true
			}
			out = append(out, c)
			i++
			continue
		}
		if escaped {
			escaped = false
			out = append(out, c)
			i++
			continue
		}
		switch {
		case c == '\\':
			escaped = true
		case c == '"':
			inString = false
		case c >= 0x7f:
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n == 1 {
				out = append(out, `\ufffd`...)
				changed = true
				i++
				continue
			}
			if hidden(r) {
				if r > 0xffff {
					r1, r2 := utf16.EncodeRune(r)
					out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
				} else {
					out = fmt.Appendf(out, `\u%04x`, r)
				}
				changed = true
				i += n
				continue
			}
			out = append(out, raw[i:i+n]...)
			i += n
			continue
		}
		out = append(out, c)
		i++
	}
	if !changed {
		return raw
	}
	return out
}

// shown returns req as a person is shown it: its tool, reason, note and
// suggestion labels through visibleText, its arguments through
// visibleJSON, and its calls (a batch's) likewise. Ids and grants are
// left as they are: code answers with them.
func (req ApprovalRequest) shown() ApprovalRequest {
	req.Tool = visibleText(req.Tool)
	req.Reason = visibleText(req.Reason)
	req.Note = visibleText(req.Note)
	req.Args = visibleJSON(req.Args)
	if len(req.Suggestions) > 0 {
		s := make([]Suggestion, len(req.Suggestions))
		for i, x := range req.Suggestions {
			x.Label = visibleText(x.Label)
			s[i] = x
		}
		req.Suggestions = s
	}
	if len(req.Calls) > 0 {
		c := make([]ApprovalRequest, len(req.Calls))
		for i, x := range req.Calls {
			c[i] = x.shown()
		}
		req.Calls = c
	}
	return req
}

// VisibleText returns s as an approval request shows it: the characters
// that change how text reads without showing themselves (bidirectional
// controls, zero-width and other invisible characters, control
// characters, spaces other than U+0020) and bytes that are not UTF-8
// escaped, as \u202e or \xff. Code that builds an [ApprovalRequest] from
// text it did not write (an MCP server's elicitation, in package
// mcpbridge) shows it this way, as Permissions does.
func VisibleText(s string) string { return visibleText(s) }

// VisibleJSON returns raw JSON with those characters in its strings
// written as JSON escapes: the same value for every decoder, and text in
// which a person reading the JSON sees them.
func VisibleJSON(raw json.RawMessage) json.RawMessage { return visibleJSON(raw) }
