package jsonpiece

import (
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Cut cuts text into pieces as a server may stream it, for tests: each
// piece a JSON string literal, quotes included. cuts gives the pieces'
// lengths (each byte mod 8; the rest is the last piece). byBytes cuts the
// UTF-8 bytes and writes bytes above ASCII as they are (a character may be
// cut between two pieces, raw); otherwise it cuts the UTF-16 units, as a
// JavaScript server would, and writes every unit above ASCII as a \u
// escape (a surrogate pair may be cut between two pieces, each half
// escaped alone).
func Cut(text string, cuts []byte, byBytes bool) []string {
	var out []string
	if byBytes {
		for _, c := range cuts {
			n := min(int(c)%8, len(text))
			out = append(out, literalBytes(text[:n]))
			text = text[n:]
		}
		return append(out, literalBytes(text))
	}
	units := utf16.Encode([]rune(text))
	for _, c := range cuts {
		n := min(int(c)%8, len(units))
		out = append(out, literalUnits(units[:n]))
		units = units[n:]
	}
	return append(out, literalUnits(units))
}

// CutArgs are the pieces of CutWhole as a server may stream them, for
// tests: each the body of a JSON string in an event. An emoji cut between
// its UTF-16 halves (lone surrogates, escaped, as a JavaScript server
// writes them), the arguments' own escapes cut (a backslash alone, \u00
// without its digits, an escaped pair cut in two) and an emoji cut between
// its UTF-8 bytes (raw).
var CutArgs = []string{
	`{\"s\":\"\ud83d`,
	`\ude00 \\`,
	`n\\u00`,
	`e9 \\ud83d`,
	`\\ude00 ` + "\xf0\x9f",
	"\x98\x80" + `\"}`,
}

// CutWhole is the arguments the model wrote, which CutArgs add up to.
const CutWhole = `{"s":"😀 \n\u00e9 \ud83d\ude00 😀"}`

// Args makes valid tool-call arguments of a fuzz string, for tests: the
// string itself when it is JSON, else an object holding it.
func Args(s string) string {
	if json.Valid([]byte(s)) {
		return s
	}
	b, _ := json.Marshal(map[string]string{"s": s})
	return string(b)
}

func literalUnits(units []uint16) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, u := range units {
		if u >= 0x20 && u < utf8.RuneSelf && u != '\\' && u != '"' {
			b.WriteByte(byte(u))
			continue
		}
		b.WriteString(`\u` + hex(u))
	}
	b.WriteByte('"')
	return b.String()
}

func literalBytes(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			b.WriteString(`\u` + hex(uint16(c)))
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func hex(u uint16) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[u>>12], digits[u>>8&15], digits[u>>4&15], digits[u&15]})
}
