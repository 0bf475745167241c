package jsonpiece

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolstream/toolstream/internal/leak"
)

func TestMain(m *testing.M) { leak.VerifyTestMain(m) }

// join feeds raw pieces to a Joiner, decoding each alone as an SDK does,
// and returns what it hands out piece by piece.
func join(t *testing.T, raws ...string) []string {
	t.Helper()
	var j Joiner
	var out []string
	for _, raw := range raws {
		var text string
		if err := json.Unmarshal([]byte(raw), &text); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		out = append(out, j.Piece(raw, text))
	}
	return append(out, j.Flush())
}

func TestJoin(t *testing.T) {
	tests := []struct {
		name string
		raws []string
		want []string // per piece, then Flush
	}{
		{"plain", []string{`"{\"a\":"`, `"1}"`}, []string{`{"a":`, `1}`, ``}},
		{"a surrogate pair cut in two", []string{`"x\ud83d"`, `"\ude00y"`}, []string{"x", "😀y", ""}},
		{"upper-case hex", []string{`"\uD83D"`, `"\uDE00"`}, []string{"", "😀", ""}},
		{"the pair whole in one piece", []string{`"\ud83d\ude00"`}, []string{"😀", ""}},
		{"the high half alone at the end", []string{`"x"`, `"\ud83d"`}, []string{"x", "", "\uFFFD"}},
		{"the high half, then no low one", []string{`"\ud83d"`, `"z"`}, []string{"", "\uFFFDz", ""}},
		{"the low half alone", []string{`"\ude00z"`}, []string{"\uFFFDz", ""}},
		{"two high halves", []string{`"\ud83d"`, `"\ud83d"`, `"\ude00"`}, []string{"", "\uFFFD", "😀", ""}},
		{"an empty piece between the halves", []string{`"\ud83d"`, `""`, `"\ude00"`}, []string{"", "", "😀", ""}},
		{"UTF-8 bytes cut", []string{"\"a\xf0\x9f\"", "\"\x98\x80b\""}, []string{"a", "😀b", ""}},
		{"UTF-8 bytes cut in three", []string{"\"\xe2\"", "\"\x82\"", "\"\xac\""}, []string{"", "", "€", ""}},
		{"UTF-8 cut, never finished", []string{"\"a\xf0\x9f\""}, []string{"a", "\xf0\x9f"}},
		{"escapes in a piece", []string{`"\"\\\/\b\f\n\r\t\u00e9"`}, []string{"\"\\/\b\f\n\r\t\u00e9", ""}},
		{"an escaped backslash before u", []string{`"\\ud83d"`, `"\\ude00"`}, []string{`\ud83d`, `\ude00`, ``}},
		{"an escaped backslash, then a high half", []string{`"\\\ud83d"`, `"\ude00"`}, []string{`\`, "😀", ``}},
		{"a lone high half inside a piece", []string{`"\ud83dx"`}, []string{"\uFFFDx", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := join(t, tt.raws...)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// A piece that is not a JSON string literal (an SDK's own, or none) is
// taken as the SDK decoded it, after what was held back.
func TestNotALiteral(t *testing.T) {
	var j Joiner
	if got := j.Piece(`"\ud83d"`, "\uFFFD"); got != "" || !j.Held() {
		t.Fatalf("got %q held %v", got, j.Held())
	}
	if got := j.Piece("", "abc"); got != "\uFFFDabc" || j.Held() {
		t.Fatalf("got %q held %v", got, j.Held())
	}
	if got := j.Piece(`"\x"`, "sdk"); got != "sdk" {
		t.Fatalf("an escape JSON lacks: got %q", got)
	}
	j.Piece(`"\ud83d"`, "")
	j.Reset()
	if got := j.Flush(); got != "" {
		t.Fatalf("after Reset, Flush = %q", got)
	}
}

// FuzzJoin cuts a text anywhere, as a UTF-16 server (between surrogates,
// each piece an escaped literal) or a UTF-8 one (between bytes, raw) would,
// and checks that the pieces joined are the text, and that no piece but
// the last ends inside a character.
func FuzzJoin(f *testing.F) {
	f.Add(`{"s":"😀 é \\ud83d"}`, []byte{3, 9, 2}, false)
	f.Add(`{"s":"😀😀"}`, []byte{7, 1}, true)
	f.Add(`a\"b`, []byte{1, 1, 1}, false)
	f.Fuzz(func(t *testing.T, text string, cuts []byte, byBytes bool) {
		if !utf8.ValidString(text) {
			return
		}
		raws := Cut(text, cuts, byBytes)
		var j Joiner
		var got strings.Builder
		for i, raw := range raws {
			var sdk string
			if err := json.Unmarshal([]byte(raw), &sdk); err != nil {
				t.Fatalf("piece %d %s: %v", i, raw, err)
			}
			piece := j.Piece(raw, sdk)
			if !utf8.ValidString(piece) {
				t.Fatalf("piece %d %s gave %q, not UTF-8", i, raw, piece)
			}
			got.WriteString(piece)
		}
		got.WriteString(j.Flush())
		if got.String() != text {
			t.Fatalf("joined %q, want %q (pieces %q)", got.String(), text, raws)
		}
	})
}

// BenchmarkPiece: a typical piece of arguments (escaped quotes, nothing
// cut), which the SDK's decoding answers, beside one that ends with half
// of a surrogate pair, which is decoded again.
func BenchmarkPiece(b *testing.B) {
	for _, bc := range []struct{ name, raw string }{
		{"whole", `"{\"path\": \"docs/READ"`},
		{"cut", `"{\"path\": \"docs/\ud83d"`},
	} {
		var text string
		if err := json.Unmarshal([]byte(bc.raw), &text); err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var j Joiner
				_ = j.Piece(bc.raw, text)
			}
		})
	}
}
