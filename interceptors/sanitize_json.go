package interceptors

import (
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// redactJSON redacts the strings (keys and values) of one JSON value in a
// single pass over raw, with no limit on nesting: it checks the syntax as it
// goes, copies everything but changed strings byte for byte (so formatting
// and key order stay), and re-encodes only the strings a redaction changed.
// It returns the new bytes (nil when nothing changed), how many matches it
// replaced, and ok false when raw is not one valid JSON value: such a part
// cannot be inspected and the caller must not pass it on.
func (cfg *sanitizeConfig) redactJSON(raw []byte) (out []byte, n int, ok bool) {
	j := jsonRedactor{cfg: cfg, raw: raw}
	if !j.run() {
		return nil, 0, false
	}
	if j.n == 0 {
		return nil, 0, true
	}
	return append(j.out, raw[j.copied:]...), j.n, true
}

type jsonRedactor struct {
	cfg     *sanitizeConfig
	raw     []byte
	i       int
	out     []byte // nil until a string changes
	copied  int    // raw[:copied] is in out (when out is in use)
	n       int
	scratch []byte // a decoded string with escapes
	stack   []bool // open containers: true for an object
}

// run checks and redacts the value: a loop over tokens with an explicit
// stack of open containers, so nesting depth costs a byte per level and no
// recursion.
func (j *jsonRedactor) run() bool {
	const (
		wantValue = iota // a value (or, right after '[', the end of the array)
		wantKey          // a key (or, right after '{', the end of the object)
		wantColon
		wantMore // ',' or the end of the container; at top level, the end
	)
	state, first := wantValue, false
	for {
		j.skipSpace()
		if j.i == len(j.raw) {
			return state == wantMore && len(j.stack) == 0
		}
		c := j.raw[j.i]
		switch state {
		case wantValue:
			switch {
			case c == ']' && first && !j.top():
				j.i++
				j.stack = j.stack[:len(j.stack)-1]
				state = wantMore
			case c == '{' || c == '[':
				j.i++
				j.stack = append(j.stack, c == '{')
				state, first = wantValue, true
				if c == '{' {
					state = wantKey
				}
				continue
			case c == '"':
				if !j.str() {
					return false
				}
				state = wantMore
			default:
				if !j.scalar() {
					return false
				}
				state = wantMore
			}
		case wantKey:
			switch {
			case c == '}' && first:
				j.i++
				j.stack = j.stack[:len(j.stack)-1]
				state = wantMore
			case c == '"':
				if !j.str() {
					return false
				}
				state = wantColon
			default:
				return false
			}
		case wantColon:
			if c != ':' {
				return false
			}
			j.i++
			state = wantValue
		case wantMore:
			if len(j.stack) == 0 {
				return false // something after the value
			}
			obj := j.stack[len(j.stack)-1]
			switch {
			case c == ',':
				j.i++
				state = wantValue
				if obj {
					state = wantKey
				}
			case c == '}' && obj || c == ']' && !obj:
				j.i++
				j.stack = j.stack[:len(j.stack)-1]
			default:
				return false
			}
		}
		first = false
	}
}

// top reports whether no container is open, or the innermost is an object
// (where ']' cannot end anything).
func (j *jsonRedactor) top() bool { return len(j.stack) == 0 || j.stack[len(j.stack)-1] }

func (j *jsonRedactor) skipSpace() {
	for j.i < len(j.raw) {
		switch j.raw[j.i] {
		case ' ', '\t', '\n', '\r':
			j.i++
		default:
			return
		}
	}
}

// scalar checks a number, true, false or null.
func (j *jsonRedactor) scalar() bool {
	raw, i := j.raw, j.i
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(raw)-i >= len(lit) && string(raw[i:i+len(lit)]) == lit {
			j.i += len(lit)
			return true
		}
	}
	digits := func() bool {
		start := i
		for i < len(raw) && raw[i] >= '0' && raw[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(raw) && raw[i] == '-' {
		i++
	}
	switch {
	case i < len(raw) && raw[i] == '0':
		i++
	case !digits():
		return false
	}
	if i < len(raw) && raw[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(raw) && (raw[i] == 'e' || raw[i] == 'E') {
		i++
		if i < len(raw) && (raw[i] == '+' || raw[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	j.i = i
	return true
}

// str checks the string starting at j.i (a '"'), redacts its decoded text
// and, if that changed it, writes it re-encoded to the output.
func (j *jsonRedactor) str() bool {
	raw := j.raw
	start := j.i
	i := start + 1
	escaped := false
	for {
		if i >= len(raw) {
			return false
		}
		c := raw[i]
		if c == '"' {
			break
		}
		if c < 0x20 {
			return false
		}
		if c == '\\' {
			escaped = true
			if i+1 >= len(raw) {
				return false
			}
			switch raw[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(raw) || !isHex4(raw[i+2:i+6]) {
					return false
				}
				i += 6
			default:
				return false
			}
			continue
		}
		i++
	}
	end := i + 1 // after the closing quote
	j.i = end
	body := raw[start+1 : i]
	if escaped {
		j.scratch = unescapeJSON(j.scratch[:0], body)
		body = j.scratch
	}
	// A read-only view: neither raw nor scratch changes while it is used,
	// and a changed string is a new one.
	text := unsafe.String(unsafe.SliceData(body), len(body))
	red, n := j.cfg.redact(text)
	if n == 0 {
		return true
	}
	if j.out == nil {
		j.out = make([]byte, 0, len(raw)+len(raw)/8+64)
	}
	j.out = append(j.out, raw[j.copied:start]...)
	j.out = appendJSONString(j.out, red)
	j.copied = end
	j.n += n
	return true
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func hexVal(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// unescapeJSON appends the text of a string body whose escapes were
// checked, as encoding/json decodes it (a lone surrogate becomes U+FFFD).
func unescapeJSON(dst, body []byte) []byte {
	for i := 0; i < len(body); {
		c := body[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		switch body[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hexVal(body[i+2 : i+6])
			i += 6
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				if i+6 <= len(body) && body[i] == '\\' && body[i+1] == 'u' {
					r2 = hexVal(body[i+2 : i+6])
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, body[i+1])
		}
		i += 2
	}
	return dst
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, everything else as it is.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	last := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[last:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		last = i + 1
	}
	dst = append(dst, s[last:]...)
	return append(dst, '"')
}
