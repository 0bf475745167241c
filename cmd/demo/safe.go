package main

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text that reaches the terminal from outside the program (file names and
// contents, tool results, a model's words, a reason typed on the page, an
// API's error message) could carry escape sequences that retitle the
// window, clear the screen or move the cursor over the demo's own output.
// Every such text goes through safeLine or safeText, which show those
// characters as visible escapes instead of sending them.

// safeLine returns s fit for one line of a terminal: every control
// character (newlines and tabs too), C1 control, bidirectional override or
// isolate, line or paragraph separator and invalid UTF-8 byte is written as
// a visible escape such as \x1b, \n, \u202e or \xff.
func safeLine(s string) string { return escapeTerm(s, false) }

// safeText is safeLine for text of several lines: newlines and tabs stay.
func safeText(s string) string { return escapeTerm(s, true) }

// escapeTerm escapes what a terminal would act on; layout keeps \n and \t.
func escapeTerm(s string, layout bool) string {
	if isPlain(s, layout) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case layout && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case dangerous(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isPlain reports whether s is printable ASCII (plus \n and \t with
// layout): the common case, returned as it is.
func isPlain(s string, layout bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c < 0x7f || layout && (c == '\n' || c == '\t') {
			continue
		}
		if c < 0x80 {
			return false
		}
		// Non-ASCII: look at the runes.
		for _, r := range s[i:] {
			if r < 0x20 && !(layout && (r == '\n' || r == '\t')) || r == 0x7f || r == utf8.RuneError || dangerous(r) {
				return false
			}
		}
		return utf8.ValidString(s[i:])
	}
	return true
}

// dangerous reports the non-ASCII runes a terminal acts on or that reorder
// what is shown: C1 controls (U+0080-U+009F, which some terminals take as
// escape sequences), the bidirectional marks, embeddings, overrides and
// isolates, and the line and paragraph separators.
func dangerous(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// safeArgs escapes, with safeLine, every argument of a printf that is text
// (strings and types made of strings, byte slices, errors, Stringers): the
// format is the program's own, the arguments may come from anywhere.
func safeArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if v := reflect.ValueOf(a); !v.IsValid() || v.Kind() == reflect.Pointer && v.IsNil() {
			out[i] = a // fmt prints <nil>; calling a method could panic
			continue
		}
		switch x := a.(type) {
		case error:
			out[i] = safeLine(x.Error())
		case fmt.Stringer:
			out[i] = safeLine(x.String())
		case []byte:
			out[i] = safeLine(string(x))
		default:
			v := reflect.ValueOf(a)
			switch {
			case v.Kind() == reflect.String:
				out[i] = safeLine(v.String())
			case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
				out[i] = safeLine(string(v.Bytes()))
			default:
				out[i] = a
			}
		}
	}
	return out
}

// safeWriter escapes, with safeText, what is written through it; for the
// log on stderr, whose entries quote tool names, arguments and errors.
// Each Write must hold whole runes (a log entry does).
type safeWriter struct{ w io.Writer }

func (s safeWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, safeText(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Display width: how many terminal columns text takes, to fit lines to the
// terminal. Text measured here has been through safeLine or safeText, so it
// holds no control characters but tabs.

// runeWidth is the number of columns r takes: 0 for combining marks and
// zero-width characters, 2 for East Asian wide and fullwidth characters
// and most emoji, 1 otherwise.
func runeWidth(r rune) int {
	switch {
	case r < 0x300:
		return 1
	case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || unicode.Is(unicode.Cf, r):
		return 0
	case r >= 0xfe00 && r <= 0xfe0f, r >= 0xe0100 && r <= 0xe01ef: // variation selectors
		return 0
	case wide(r):
		return 2
	}
	return 1
}

// wideRanges are the East Asian Wide (W) and Fullwidth (F) blocks of
// Unicode's EastAsianWidth.txt, coarsely: whole blocks, emoji included.
var wideRanges = [][2]rune{
	{0x1100, 0x115f}, {0x231a, 0x231b}, {0x2329, 0x232a}, {0x23e9, 0x23ec}, {0x23f0, 0x23f0}, {0x23f3, 0x23f3},
	{0x25fd, 0x25fe}, {0x2614, 0x2615}, {0x2648, 0x2653}, {0x267f, 0x267f}, {0x2693, 0x2693}, {0x26a1, 0x26a1},
	{0x26aa, 0x26ab}, {0x26bd, 0x26be}, {0x26c4, 0x26c5}, {0x26ce, 0x26ce}, {0x26d4, 0x26d4}, {0x26ea, 0x26ea},
	{0x26f2, 0x26f3}, {0x26f5, 0x26f5}, {0x26fa, 0x26fa}, {0x26fd, 0x26fd}, {0x2705, 0x2705}, {0x270a, 0x270b},
	{0x2728, 0x2728}, {0x274c, 0x274c}, {0x274e, 0x274e}, {0x2753, 0x2755}, {0x2757, 0x2757}, {0x2795, 0x2797},
	{0x27b0, 0x27b0}, {0x27bf, 0x27bf}, {0x2b1b, 0x2b1c}, {0x2b50, 0x2b50}, {0x2b55, 0x2b55},
	{0x2e80, 0x303e}, {0x3041, 0x33ff}, {0x3400, 0x4dbf}, {0x4e00, 0x9fff}, {0xa000, 0xa4cf}, {0xa960, 0xa97f},
	{0xac00, 0xd7a3}, {0xf900, 0xfaff}, {0xfe10, 0xfe19}, {0xfe30, 0xfe6f}, {0xff00, 0xff60}, {0xffe0, 0xffe6},
	{0x16fe0, 0x16fe4}, {0x17000, 0x18cff}, {0x1b000, 0x1b2ff}, {0x1f004, 0x1f004}, {0x1f0cf, 0x1f0cf},
	{0x1f18e, 0x1f18e}, {0x1f191, 0x1f19a}, {0x1f200, 0x1f2ff}, {0x1f300, 0x1f64f}, {0x1f680, 0x1f6ff},
	{0x1f7e0, 0x1f7eb}, {0x1f90c, 0x1f9ff}, {0x1fa70, 0x1faff}, {0x20000, 0x2fffd}, {0x30000, 0x3fffd},
}

func wide(r rune) bool {
	lo, hi := 0, len(wideRanges)
	for lo < hi {
		m := (lo + hi) / 2
		switch {
		case r < wideRanges[m][0]:
			hi = m
		case r > wideRanges[m][1]:
			lo = m + 1
		default:
			return true
		}
	}
	return false
}

// tabWidth is where the terminal's tab stops are.
const tabWidth = 8

// displayWidth is the number of columns s takes on one line, tabs at their
// stops from column 0.
func displayWidth(s string) int {
	w := 0
	for _, r := range s {
		if r == '\t' {
			w += tabWidth - w%tabWidth
			continue
		}
		w += runeWidth(r)
	}
	return w
}

// fitWidth returns the line s cut to at most cols columns, with an ellipsis
// where it was cut; tabs become spaces up to their stop. cols <= 0 means no
// limit.
func fitWidth(s string, cols int) string {
	if cols <= 0 {
		return s
	}
	if strings.Contains(s, "\t") {
		s = expandTabs(s)
	}
	if displayWidth(s) <= cols {
		return s
	}
	w := 0
	for i, r := range s {
		if w+runeWidth(r) > cols-1 {
			return s[:i] + "…"
		}
		w += runeWidth(r)
	}
	return s // not reached: s is wider than cols
}

// expandTabs replaces each tab by spaces up to the next tab stop.
func expandTabs(s string) string {
	var b strings.Builder
	w := 0
	for _, r := range s {
		if r == '\t' {
			n := tabWidth - w%tabWidth
			b.WriteString(strings.Repeat(" ", n))
			w += n
			continue
		}
		b.WriteRune(r)
		w += runeWidth(r)
	}
	return b.String()
}

// padRight pads s with spaces to n columns (no cut).
func padRight(s string, n int) string {
	if w := displayWidth(s); w < n {
		return s + strings.Repeat(" ", n-w)
	}
	return s
}

// wrapWords breaks a line of text into lines of at most cols columns, at
// spaces where it can and inside a word longer than a line, so that
// nothing is lost; the lines after the first start with indent. Tabs
// become spaces. cols <= 0 returns the text as one line.
func wrapWords(text string, cols int, indent string) []string {
	if strings.Contains(text, "\t") {
		text = expandTabs(text)
	}
	if cols <= 0 || displayWidth(text) <= cols {
		return []string{text}
	}
	if displayWidth(indent) >= cols/2 {
		indent = ""
	}
	iw := displayWidth(indent)
	var lines []string
	var line strings.Builder
	lw := 0
	newLine := func() {
		lines = append(lines, line.String())
		line.Reset()
		line.WriteString(indent)
		lw = iw
	}
	for i, word := range strings.Split(text, " ") {
		ww := displayWidth(word)
		if i > 0 {
			switch {
			case lw+1+ww <= cols: // on this line
				line.WriteByte(' ')
				lw++
			case ww <= cols-iw: // on the next
				newLine()
			case lw+1 < cols: // longer than a line: begins here
				line.WriteByte(' ')
				lw++
			default:
				newLine()
			}
		}
		for _, r := range word {
			rw := runeWidth(r)
			if rw > cols { // a wide character on a one-column line
				r, rw = '…', 1
			}
			if lw+rw > cols && lw > iw {
				newLine()
			}
			line.WriteRune(r)
			lw += rw
		}
	}
	return append(lines, line.String())
}
