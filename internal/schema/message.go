package schema

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// path is one step of an instance path. Paths live on the stack while
// validating and are rendered only when a problem is reported.
type path struct {
	parent  *path
	key     string
	index   int
	isIndex bool
}

// String renders the display path: `a.b`, `a[0]`, `["a.b"]`; "" for the root.
func (p *path) String() string {
	if p == nil {
		return ""
	}
	var b strings.Builder
	p.write(&b)
	return b.String()
}

// write renders the parents first. It must not retain p: paths live on the
// validator's stack.
func (p *path) write(b *strings.Builder) {
	if p.parent != nil {
		p.parent.write(b)
	}
	switch {
	case p.isIndex && p.index < 0:
		b.WriteString("[*]") // any item
	case p.isIndex:
		b.WriteByte('[')
		b.WriteString(strconv.Itoa(p.index))
		b.WriteByte(']')
	case isIdentifier(p.key) && len(p.key) <= maxKeyShown:
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p.key)
	default:
		b.WriteByte('[')
		writeQuoted(b, p.key, maxKeyShown) // a model's key may be megabytes long
		b.WriteByte(']')
	}
}

// maxKeyShown is how much of a key a path shows (in runes; more is "...").
const maxKeyShown = 128

// isIdentifier reports whether a key can be shown bare: ASCII letters,
// digits and underscores, not starting with a digit.
func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9':
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// maxStored bounds the problems kept in memory; beyond it they are only counted.
const maxStored = 1000

// collector accumulates problems during one Validate call.
type collector struct {
	list    []Problem
	dropped int
}

func (c *collector) add(at *path, msg string) {
	if len(c.list) >= maxStored {
		c.dropped++
		return
	}
	c.list = append(c.list, Problem{Path: at.String(), Message: msg})
}

// result removes duplicates (allOf branches may repeat a complaint) and caps
// the list at MaxProblems.
func (c *collector) result() []Problem {
	out := c.list
	if len(out) > 1 {
		seen := make(map[Problem]bool, len(out))
		out = out[:0]
		for _, p := range c.list {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	if extra := len(out) + c.dropped - MaxProblems; extra > 0 {
		out = append(out[:MaxProblems-1], Problem{Message: fmt.Sprintf("... and %d more problems", extra+1)})
	}
	return out
}

// typeOrder is the order in which allowed types are listed; null goes last
// so that nullable types read "a string or null".
var typeOrder = []struct {
	bit    typeMask
	phrase string
}{
	{tObject, "an object"},
	{tArray, "an array"},
	{tString, "a string"},
	{tInteger, "an integer"},
	{tNumber, "a number"},
	{tBoolean, "a boolean"},
	{tNull, "null"},
}

// typePhrase lists the allowed types: "an integer", "a string or null".
func typePhrase(m typeMask) string {
	if m&tNumber != 0 {
		m &^= tInteger // every integer is a number
	}
	var parts []string
	for _, t := range typeOrder {
		if m&t.bit != 0 {
			parts = append(parts, t.phrase)
		}
	}
	switch len(parts) {
	case 0:
		return "of a type the schema allows (it allows none)"
	case 1:
		return parts[0]
	default:
		return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
	}
}

// describe names the JSON type of v and previews it: `string "ten"`, `number 3`.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean " + preview(v)
	case string:
		return "string " + preview(v)
	case []any:
		return "array " + preview(v)
	case map[string]any:
		return "object " + preview(v)
	default:
		return "number " + preview(v)
	}
}

// previewLimit is roughly how many bytes of a value a message shows.
const previewLimit = 40

// preview renders v as compact JSON, truncated to about previewLimit bytes.
func preview(v any) string {
	var b strings.Builder
	writePreview(&b, v)
	if b.Len() <= previewLimit {
		return b.String()
	}
	s := b.String()
	cut := previewLimit - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

func writePreview(b *strings.Builder, v any) {
	if b.Len() > previewLimit {
		return
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		if utf8.RuneCountInString(x) > previewLimit-8 {
			// Keep the closing quote visible for long strings.
			writeQuoted(b, x, previewLimit-8)
			return
		}
		writeQuoted(b, x, -1)
	case json.Number:
		b.WriteString(string(x))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if b.Len() > previewLimit {
				break
			}
			writePreview(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if i > 0 {
				b.WriteByte(',')
			}
			if b.Len() > previewLimit {
				break
			}
			writeQuoted(b, k, previewLimit)
			b.WriteByte(':')
			writePreview(b, x[k])
		}
		b.WriteByte('}')
	default:
		if f, ok := numberOf(v); ok {
			b.WriteString(formatNum(f))
			return
		}
		fmt.Fprintf(b, "%v", v)
	}
}

// writeQuoted writes s as a JSON string; maxRunes >= 0 truncates it with "...".
func writeQuoted(b *strings.Builder, s string, maxRunes int) {
	b.WriteByte('"')
	n := 0
	for _, r := range s {
		if maxRunes >= 0 && n == maxRunes {
			b.WriteString("...")
			break
		}
		n++
		switch i := strings.IndexRune("\"\\\n\r\t", r); {
		case i >= 0:
			b.WriteByte('\\')
			b.WriteByte(`"\nrt`[i])
		case r < 0x20:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// formatNum formats a float like encoding/json does: 3, 0.5, 1e+21.
func formatNum(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	return strconv.FormatFloat(f, format, -1, 64)
}

// enumList joins enum value previews, eliding the middle of long lists.
func enumList(texts []string) string {
	const maxShown = 12
	if len(texts) <= maxShown {
		return strings.Join(texts, ", ")
	}
	return strings.Join(texts[:maxShown-2], ", ") + fmt.Sprintf(", ... (%d values)", len(texts))
}
