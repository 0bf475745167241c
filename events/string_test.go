package events

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// appendString writes s as a JSON string with encoding/json's escapes;
// invalid UTF-8 becomes U+FFFD.
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
	return map[string]string{
		"code":  strings.Repeat(code, 8<<10/len(code)+1)[:8<<10],
		"prose": strings.Repeat(prose, 8<<10/len(prose)+1)[:8<<10],
		"cjk":   strings.ToValidUTF8(strings.Repeat(cjk, 8<<10/len(cjk)+1)[:8<<10], ""),
	}
}

// BenchmarkAppendString8K compares the word-at-a-time escaper with the
// byte-at-a-time one it replaced, interleaved in blocks.
func BenchmarkAppendString8K(b *testing.B) {
	for name, s := range benchTexts() {
		b.Run(name, func(b *testing.B) {
			buf := make([]byte, 0, 64<<10)
			var now, before time.Duration
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				t0 := time.Now()
				for range 20 {
					buf = appendString(buf[:0], s)
				}
				t1 := time.Now()
				for range 20 {
					buf = appendStringBytewise(buf[:0], s)
				}
				now += t1.Sub(t0)
				before += time.Since(t1)
			}
			b.ReportMetric(float64(now.Nanoseconds())/float64(20*b.N), "ns/string")
			b.ReportMetric(float64(before.Nanoseconds())/float64(20*b.N), "bytewise-ns/string")
			b.ReportMetric(float64(before)/float64(now), "speedup")
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
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := appendString(nil, s)
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("appendString(%q)\n got %s\nwant %s", s, got, want)
		}
		if old := appendStringBytewise(nil, s); string(old) != string(got) {
			t.Fatalf("differs from the bytewise escaper: %s vs %s", got, old)
		}
	})
}
