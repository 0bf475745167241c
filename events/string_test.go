package events

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"
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

// appendStringBreak is the escaper of c066813, which left its word loop at
// every byte to escape, kept to compare with: BenchmarkAppendString8K.
func appendStringBreak(dst []byte, s string) []byte {
	n := len(dst)
	out := growRoom(dst, len(s)+wordRoom)
	out[n] = '"'
	n++
	// A read-only view of s as bytes.
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	i := 0
	for {
		// Escapes take more room than what they stand for.
		if len(out)-n < len(b)-i+wordRoom {
			out = growRoom(out[:n], len(b)-i+wordRoom)
		}
		// Words without a byte to look at. n-i does not change in this
		// loop, and the room just checked makes n+8 <= len(out) whenever
		// i+8 <= len(b): the unchecked loads and stores stay in s and out.
		if i+8 <= len(b) {
			src := unsafe.Pointer(unsafe.StringData(s))
			to := unsafe.Pointer(unsafe.SliceData(out))
			for i+8 <= len(b) {
				x := binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(src, i))[:])
				binary.LittleEndian.PutUint64((*[8]byte)(unsafe.Add(to, n))[:], x)
				if m := specialBytes(x); m != 0 {
					k := bits.TrailingZeros64(m) >> 3 // exact for the lowest
					i += k
					n += k
					break
				}
				i += 8
				n += 8
			}
		}
		if i >= len(b) {
			break
		}
		if c := b[i]; c < utf8.RuneSelf {
			i++
			if escLen[c] == 1 {
				out[n] = c
				n++
				continue
			}
			binary.LittleEndian.PutUint64(out[n:], escWord[c])
			n += int(escLen[c])
			continue
		}
		// Non-ASCII: a run of characters written as they are (as many
		// bytes out as in), up to invalid UTF-8, U+2028 or U+2029.
		j := i
		r, size := rune(0), 0
		for j < len(b) && b[j] >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[j:])
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				break
			}
			j += size
			size = 0
		}
		n += copy(out[n:], b[i:j])
		i = j
		if size > 0 {
			// Invalid UTF-8 becomes U+FFFD. U+2028 and U+2029 are valid
			// JSON, but line terminators in JavaScript; encoding/json
			// escapes them unconditionally.
			out[n], out[n+1], out[n+2] = '\\', 'u', hexDigits[r>>12]
			out[n+3], out[n+4], out[n+5] = hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf]
			n += 6
			i += size
		}
	}
	out[n] = '"'
	return out[:n+1]
}

// appendStringWords is the escaper of 8ccbe77 (words looked at 8 bytes at a
// time, pending runs copied with append), kept to compare with:
// BenchmarkAppendString8K.
func appendStringWords(dst []byte, s string) []byte {
	dst = append(dst, '"')
	// A read-only view of s as bytes, for loads of 8 bytes at once.
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	start := 0 // s[start:i] is pending, needing no escape
	i := 0
	for i < len(s) {
		if i+8 <= len(b) {
			// Skip to the first byte of the next 8 that needs a look.
			// (specialBytes, by hand: the compiler does not inline it.)
			x := binary.LittleEndian.Uint64(b[i:])
			m := x&msb | (x-0x20*lsb)&^x&msb |
				((x&^(0x04*lsb))^(0x22*lsb)-lsb)&^((x&^(0x04*lsb))^(0x22*lsb))&msb |
				((x&^(0x02*lsb))^(0x3c*lsb)-lsb)&^((x&^(0x02*lsb))^(0x3c*lsb))&msb |
				(x^(0x5c*lsb)-lsb)&^(x^(0x5c*lsb))&msb
			if m == 0 {
				i += 8
				continue
			}
			if x&msb == 0 {
				// All ASCII: escape the flagged bytes here. Bits above the
				// lowest may be false alarms (a borrow), so each byte is
				// checked again; none is missed.
				for ; m != 0; m &= m - 1 {
					j := i + bits.TrailingZeros64(m)>>3
					if e := jsonEscapes[s[j]]; e != "" {
						dst = append(dst, s[start:j]...)
						dst = append(dst, e...)
						start = j + 1
					}
				}
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if e := jsonEscapes[c]; e != "" {
				dst = append(dst, s[start:i]...)
				dst = append(dst, e...)
				start = i + 1
			}
			i++
			continue
		}
		if j := plainRunesWords(s, i); j > i {
			i = j
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		dst = append(dst, s[start:i]...)
		if r == utf8.RuneError {
			dst = append(dst, `\ufffd`...) // invalid UTF-8
		} else {
			// U+2028 or U+2029: valid JSON, but line terminators in
			// JavaScript; encoding/json escapes them unconditionally.
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// plainRunes returns where the run of non-ASCII characters at s[i:] that a
// JSON string takes as they are ends: at invalid UTF-8, U+2028, U+2029 or
// ASCII.
func plainRunesWords(s string, i int) int {
	for i < len(s) && s[i] >= utf8.RuneSelf {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			return i
		}
		i += size
	}
	return i
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

// BenchmarkAppendString8K compares the escaper with the ones it replaced
// (appendStringBreak, appendStringWords) and the byte-at-a-time one before
// them, interleaved in blocks of 20 strings. On amd64 appendString runs
// the SSE2 blocks of escape_amd64.s; with -tags purego, its word loop alone. ns/string is the escaper's time
// per 8 KiB string; speedup-vs-break, speedup-vs-words and
// speedup-vs-bytewise are the others' times over it.
func BenchmarkAppendString8K(b *testing.B) {
	escapers := []func([]byte, string) []byte{appendString, appendStringWords, appendStringBytewise, appendStringBreak}
	for name, s := range benchTexts() {
		b.Run(name, func(b *testing.B) {
			buf := make([]byte, 0, 64<<10)
			var took [4]time.Duration
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
			b.ReportMetric(float64(took[3])/float64(took[0]), "speedup-vs-break")
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
	})
}
