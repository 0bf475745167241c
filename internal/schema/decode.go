package schema

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Decode parses JSON tool arguments the way Validate expects them: objects
// as map[string]any, arrays as []any, numbers as json.Number (so integers
// keep their exact text), and strings, bools and nil. Trailing data after the
// value is rejected, and errors give the byte offset of the mistake so a
// model can find it.
//
// The result is exactly what encoding/json's Decoder with UseNumber produces
// (invalid UTF-8 and lone surrogates become U+FFFD, later duplicate keys win,
// nesting is limited to 10000 levels; FuzzDecode checks this), but parsing is
// done in one pass without reflection, several times faster for the small
// objects tool calls carry.
func Decode(data []byte) (any, error) {
	var v any
	s := pass{decoder: decoder{data: data}}
	return v, s.top(nil, treePlan, reflect.ValueOf(&v).Elem())
}

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

type decoder struct {
	data  []byte
	pos   int
	depth int
	buf   []byte // scratch for strings with escapes
}

// errorf, badChar and literal are not inlined: what their errors need on
// the stack would otherwise grow the frames of the parsing functions.
//
//go:noinline
func (d *decoder) errorf(msg string) error {
	if d.pos >= len(d.data) {
		return fmt.Errorf("invalid JSON at byte offset %d: unexpected end of input", len(d.data))
	}
	return fmt.Errorf("invalid JSON at byte offset %d: %s", d.pos, msg)
}

// badChar reports the byte at d.pos as invalid in the given context, in
// encoding/json's wording.
//
//go:noinline
func (d *decoder) badChar(context string) error {
	if d.pos >= len(d.data) {
		return d.errorf("")
	}
	return d.errorf("invalid character " + quoteChar(d.data[d.pos]) + " " + context)
}

func quoteChar(c byte) string {
	switch c {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	q := strconv.Quote(string(rune(c)))
	if c >= utf8.RuneSelf {
		q = strconv.Quote(string([]byte{c}))
	}
	return "'" + q[1:len(q)-1] + "'"
}

// plain marks the bytes a string holds as they are: ASCII but '"', '\\'
// and control characters.
var plain = func() (t [256]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// skipSpace moves past the bytes JSON skips between tokens (a bit each).
func (d *decoder) skipSpace() {
	for d.pos < len(d.data) && d.data[d.pos] <= ' ' && uint64(1<<' '|1<<'\t'|1<<'\n'|1<<'\r')>>d.data[d.pos]&1 != 0 {
		d.pos++
	}
}

//go:noinline
func (d *decoder) literal(word string) error {
	for i := 0; i < len(word); i++ {
		if d.pos >= len(d.data) || d.data[d.pos] != word[i] {
			return d.badChar("in literal " + word + " (expecting " + quoteChar(word[i]) + ")")
		}
		d.pos++
	}
	return nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanNumber moves past a number.
func (d *decoder) scanNumber() error {
	if d.data[d.pos] == '-' {
		d.pos++
		if d.pos >= len(d.data) || !isDigit(d.data[d.pos]) {
			return d.badChar("in numeric literal")
		}
	}
	if d.data[d.pos] == '0' {
		d.pos++
	} else {
		for d.pos < len(d.data) && isDigit(d.data[d.pos]) {
			d.pos++
		}
	}
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		d.pos++
		if d.pos >= len(d.data) || !isDigit(d.data[d.pos]) {
			return d.badChar("after decimal point in numeric literal")
		}
		for d.pos < len(d.data) && isDigit(d.data[d.pos]) {
			d.pos++
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if d.pos >= len(d.data) || !isDigit(d.data[d.pos]) {
			return d.badChar("in exponent of numeric literal")
		}
		for d.pos < len(d.data) && isDigit(d.data[d.pos]) {
			d.pos++
		}
	}
	return nil
}

// strBytes parses a string starting at the opening quote and returns its
// text: a slice of the input when it has no escapes and is valid UTF-8
// (esc false), else the decoded text in d.buf, valid until the next string.
func (d *decoder) strBytes() (text []byte, esc bool, err error) {
	data := d.data
	start := d.pos + 1 // after '"'
	for i := start; ; {
		for i < len(data) && plain[data[i]] {
			i++
		}
		switch d.pos = i; {
		case i == len(data):
			return nil, false, d.errorf("")
		case data[i] == '"':
			d.pos++
			return data[start:i], false, nil
		case data[i] == '\\' || data[i] < ' ':
			b, err := d.slowStr(start)
			return b, true, err
		}
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			b, err := d.slowStr(start)
			return b, true, err
		}
		i += size
	}
}

// slowStr decodes a string with escapes or invalid UTF-8, as encoding/json
// does: invalid bytes and unpaired surrogates become U+FFFD.
func (d *decoder) slowStr(start int) ([]byte, error) {
	b := append(d.buf[:0], d.data[start:d.pos]...)
	defer func() { d.buf = b }()
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			return b, nil
		case c < ' ':
			return nil, d.badChar("in string literal")
		case c == '\\':
			d.pos++
			if d.pos >= len(d.data) {
				return nil, d.errorf("")
			}
			switch j := strings.IndexByte(`"\/bfnrtu`, d.data[d.pos]); {
			case j >= 0 && j < 8:
				b = append(b, "\"\\/\b\f\n\r\t"[j])
			case j == 8: // \uXXXX
				d.pos++
				r, err := d.hex4()
				if err != nil {
					return nil, err
				}
				if utf16.IsSurrogate(r) {
					// Take the next \uXXXX only if it completes a pair.
					if r2, ok := d.peekHex4(); ok {
						if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
							d.pos += 6
							b = utf8.AppendRune(b, dec)
							continue
						}
					}
					r = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, r)
				continue
			default:
				return nil, d.badChar("in string escape code")
			}
			d.pos++
		case c < utf8.RuneSelf:
			b = append(b, c)
			d.pos++
		default:
			r, size := utf8.DecodeRune(d.data[d.pos:])
			d.pos += size
			b = utf8.AppendRune(b, r) // RuneError for invalid bytes
		}
	}
	return nil, d.errorf("")
}

// hex4 reads the four hex digits of a \u escape.
func (d *decoder) hex4() (rune, error) {
	var r rune
	for range 4 {
		if d.pos >= len(d.data) {
			return 0, d.errorf("")
		}
		h, ok := hexVal(d.data[d.pos])
		if !ok {
			return 0, d.badChar("in \\u hexadecimal character escape")
		}
		r = r<<4 | h
		d.pos++
	}
	return r, nil
}

// peekHex4 reads a following `\uXXXX` without consuming it.
func (d *decoder) peekHex4() (rune, bool) {
	if d.pos+6 > len(d.data) || d.data[d.pos] != '\\' || d.data[d.pos+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range d.data[d.pos+2 : d.pos+6] {
		h, ok := hexVal(c)
		if !ok {
			return 0, false
		}
		r = r<<4 | h
	}
	return r, true
}

func hexVal(c byte) (rune, bool) {
	i := strings.IndexByte("0123456789abcdef0123456789ABCDEF", c)
	return rune(i % 16), i >= 0
}
