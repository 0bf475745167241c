package events

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// appendStringBytewise is the escaper before words (kept to compare with:
// BenchmarkAppendString8K and FuzzAppendString).
func appendStringBytewise(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0 // s[start:i] is pending, needing no escape
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonPlain[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			// Valid JSON, but line terminators in JavaScript; encoding/json
			// escapes them unconditionally.
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func benchTexts() map[string]string {
	code := "\tif err := json.Unmarshal(data, &v); err != nil { return fmt.Errorf(\"decoding %s: %w\", name, err) }\n"
	prose := "The quick brown fox jumps over the lazy dog, and then it rests for a while in the sun. "
	cjk := "日本語のテキストと English words mixed together, with some 😀 emoji. "
	var listing strings.Builder // tool output: a newline every ~45 bytes
	for i := 0; listing.Len() < 8<<10; i++ {
		fmt.Fprintf(&listing, "src/pkg%d/file_%d.go: %d lines, %d bytes\n", i%7, i, i*13%900, i*977%40000)
	}
	return map[string]string{
		"output": listing.String()[:8<<10],
		"code":   strings.Repeat(code, 8<<10/len(code)+1)[:8<<10],
		"prose":  strings.Repeat(prose, 8<<10/len(prose)+1)[:8<<10],
		"cjk":    strings.ToValidUTF8(strings.Repeat(cjk, 8<<10/len(cjk)+1)[:8<<10], ""),
	}
}

// BenchmarkAppendString8K compares the escaper with its portable word loop
// (what appendString runs without the SSE2 blocks of escape_amd64.s, as on
// other platforms) and with the byte-at-a-time escaper before both,
// interleaved in blocks of 20 strings. ns/string is the escaper's time per
// 8 KiB string; speedup-vs-words and speedup-vs-bytewise are the others'
// times over it.
func BenchmarkAppendString8K(b *testing.B) {
	words := func(dst []byte, s string) []byte { return escapeString(dst, s, false) }
	escapers := []func([]byte, string) []byte{appendString, words, appendStringBytewise}
	for name, s := range benchTexts() {
		b.Run(name, func(b *testing.B) {
			buf := make([]byte, 0, 64<<10)
			var took [3]time.Duration
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				for k, escape := range escapers {
					t0 := time.Now()
					for range 20 {
						buf = escape(buf[:0], s)
					}
					took[k] += time.Since(t0)
				}
			}
			b.ReportMetric(float64(took[0].Nanoseconds())/float64(20*b.N), "ns/string")
			b.ReportMetric(float64(took[1])/float64(took[0]), "speedup-vs-words")
			b.ReportMetric(float64(took[2])/float64(took[0]), "speedup-vs-bytewise")
		})
	}
}

// FuzzAppendString: the word-at-a-time escaper writes what encoding/json
// writes, for any string, special bytes at any offset in a word included.
func FuzzAppendString(f *testing.F) {
	for _, s := range nastyStrings() {
		f.Add(s)
	}
	for off := range 9 {
		for _, c := range []string{"\"", "\\", "<", ">", "&", "\x00", "\x1f", "\x7f", "é", "\u2028", "\xff", "日"} {
			f.Add(strings.Repeat("a", off) + c + strings.Repeat("b", 16-off))
			// Past 32 bytes, in the fast path's blocks (escape_amd64.s).
			f.Add(strings.Repeat("a", 4*off) + c + strings.Repeat("b", 64-4*off))
		}
	}
	for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 100} {
		f.Add(strings.Repeat("\x01", n)) // every byte escaped: 6 bytes out for 1 in
		f.Add(strings.Repeat("\xff", n))
		f.Add(strings.Repeat("\u2028", n))
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		// After what is already in dst, with no room to spare or some.
		prefix := strings.Repeat("p", len(s)%11)
		for _, room := range []int{0, len(s) % 23} {
			dst := make([]byte, len(prefix), len(prefix)+room)
			copy(dst, prefix)
			got := appendString(dst, s)
			if string(got) != prefix+string(want) {
				t.Fatalf("appendString(%q, %q)\n got %s\nwant %s%s", prefix, s, got, prefix, want)
			}
		}
		got := appendString(nil, s)
		if old := appendStringBytewise(nil, s); string(old) != string(got) {
			t.Fatalf("differs from the bytewise escaper: %s vs %s", got, old)
		}
		if w := escapeString(nil, s, false); string(w) != string(got) {
			t.Fatalf("the word loop alone writes %s, the escaper %s", w, got)
		}
	})
}
