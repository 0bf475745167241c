// Package jsonpiece reassembles text that a server streams as a sequence of
// JSON strings (tool-call arguments, words, thinking), for the LLM adapters.
//
// A server may cut its text anywhere, also inside a character: between the
// two halves of a UTF-16 surrogate pair (a server whose strings are UTF-16,
// as in JavaScript, writes "\ud83d" at the end of one event and "\ude00" at
// the start of the next), or between the bytes of a UTF-8 character. Each
// piece decoded alone turns such halves into U+FFFD (or, for bytes, into
// invalid UTF-8 in the chunks streamed to UIs); decoded against the pieces
// around it, the emoji comes back.
package jsonpiece

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Joiner reassembles one stream of text. Its zero value is ready to use.
// Each piece's text is handed over as soon as it is known; only a half of a
// character at the end of a piece waits for the next piece (or Flush).
type Joiner struct {
	held string // the end of the last piece, raw: a high-surrogate escape, or the first bytes of a UTF-8 character
}

// Piece returns the text of the next piece. raw is the piece as the server
// wrote it, a JSON string literal with its quotes (the SDKs keep it:
// respjson.Field.Raw); text is the SDK's decoding of it, used as it is when
// raw is not a string literal (a piece an SDK made up, or none).
func (j *Joiner) Piece(raw, text string) string {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return j.Flush() + text
	}
	body := raw[1 : len(raw)-1]
	if j.held == "" && !highAtEnd(body) && incompleteTail(body) == len(body) {
		// Nothing cut at either end: the SDK's decoding is the text (a
		// lone surrogate inside a piece is U+FFFD either way).
		return text
	}
	s := j.held + body
	var tail string
	// The first bytes of a UTF-8 character at the very end wait for the
	// rest (bytes above 0x7f are never part of an escape).
	if i := incompleteTail(s); i < len(s) {
		s, tail = s[:i], s[i:]
	}
	out, rest, ok := decode(s)
	if !ok {
		// Not the JSON the SDK decoded: its decoding stands.
		return j.Flush() + text
	}
	j.held = rest + tail
	return out
}

// Flush returns what the last piece held back, decoded as the end of the
// text (a lone high surrogate is U+FFFD, bytes of a cut character stay as
// they came), and forgets it.
func (j *Joiner) Flush() string {
	if j.held == "" {
		return ""
	}
	s := j.held
	j.held = ""
	if s[0] != '\\' {
		return s
	}
	out, rest, ok := decode(s)
	if !ok {
		return s
	}
	if rest != "" {
		out += string(utf8.RuneError)
	}
	return out
}

// Reset forgets what the last piece held back: the server has restated the
// whole text.
func (j *Joiner) Reset() { j.held = "" }

// Held reports whether the last piece ended inside a character.
func (j *Joiner) Held() bool { return j.held != "" }

// highAtEnd reports whether the body of a JSON string ends with the
// escape of a high surrogate (a backslash before it would make it text).
func highAtEnd(body string) bool {
	n := len(body)
	if n < 6 || body[n-6] != '\\' || body[n-5] != 'u' || body[n-4]|0x20 != 'd' {
		return false
	}
	if c := body[n-3] | 0x20; c != '8' && c != '9' && c != 'a' && c != 'b' {
		return false
	}
	escaped := false // whether body[n-6] is itself escaped
	for i := n - 7; i >= 0 && body[i] == '\\'; i-- {
		escaped = !escaped
	}
	return !escaped
}

// incompleteTail returns where a UTF-8 character that s ends before its
// last byte begins, or len(s) when s does not end inside one.
func incompleteTail(s string) int {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax+1; i-- {
		c := s[i]
		if c < utf8.RuneSelf {
			return len(s) // ASCII: no character is open
		}
		if c >= 0xC0 { // a lead byte
			if utf8.FullRuneInString(s[i:]) {
				return len(s)
			}
			return i
		}
	}
	return len(s)
}

// decode decodes the body of a JSON string literal. A high-surrogate escape
// at its very end is not decoded but returned as rest, for the next piece
// to complete. Bytes outside escapes are copied as they are. ok is false
// for an escape JSON does not have.
func decode(s string) (out, rest string, ok bool) {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			j := strings.IndexByte(s[i:], '\\')
			if j < 0 {
				j = len(s) - i
			}
			b.WriteString(s[i : i+j])
			i += j
			continue
		}
		if i+1 >= len(s) {
			return "", "", false
		}
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := hex4(s, i+2)
			if !ok {
				return "", "", false
			}
			i += 6
			switch {
			case r >= 0xD800 && r < 0xDC00: // high surrogate
				if i == len(s) {
					return b.String(), s[i-6:], true
				}
				if r2, ok := lowSurrogate(s, i); ok {
					b.WriteRune(utf16.DecodeRune(r, r2))
					i += 6
					continue
				}
				b.WriteRune(utf8.RuneError)
			case r >= 0xDC00 && r < 0xE000: // a low one alone
				b.WriteRune(utf8.RuneError)
			default:
				b.WriteRune(r)
			}
			continue
		default:
			return "", "", false
		}
		i += 2
	}
	return b.String(), "", true
}

// lowSurrogate returns the low surrogate of an escape at s[i:], if there is
// one.
func lowSurrogate(s string, i int) (rune, bool) {
	if i+6 > len(s) || s[i] != '\\' || s[i+1] != 'u' {
		return 0, false
	}
	r, ok := hex4(s, i+2)
	return r, ok && r >= 0xDC00 && r < 0xE000
}

// hex4 reads the four hex digits of a \u escape at s[i:].
func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
