package events

import (
	"errors"
	"strings"
	"testing"
)

func TestEncodeToken(t *testing.T) {
	s64 := "a" + strings.Repeat("b", 63)
	s65 := s64 + "c"
	tests := []struct {
		id, tok string
	}{
		// plain
		{"a", "a"},
		{"Z", "Z"},
		{"7", "7"},
		{"conv-42", "conv-42"},
		{"call_abc123", "call_abc123"},
		{"a_-b", "a_-b"},
		{"a-", "a-"},
		{"a_", "a_"},
		{s64, s64}, // 64 bytes: the longest plain id
		// encoded
		{"", "~"},
		{s65, "~" + b64url(s65)}, // 65 bytes
		{"_", "~Xw"},
		{"_a", "~X2E"},
		{"-", "~LQ"},
		{"-a", "~LWE"},
		{"~", "~fg"},
		{"~a", "~fmE"},
		{"a.b", "~YS5i"},
		{".", "~Lg"},
		{"a.>", "~YS4-"},
		{"*", "~Kg"},
		{">", "~Pg"},
		{"a b", "~YSBi"},
		{" a", "~IGE"},
		{"a\tb", "~YQli"},
		{"a\n", "~YQo"},
		{"a\x00", "~YQA"},
		{"é", "~w6k"},
		{"日本", "~5pel5pys"},
		{"😀", "~8J-YgA"},
		{"\xff", "~_w"},
		{"a\xc3", "~YcM"},
		{"a/b", "~YS9i"},
		{"a=b", "~YT1i"},
		{"$SYS", "~JFNZUw"},
	}
	for _, tt := range tests {
		got := EncodeToken(tt.id)
		if got != tt.tok {
			t.Errorf("EncodeToken(%q) = %q, want %q", tt.id, got, tt.tok)
		}
		checkToken(t, got)
		id, err := decodeTokenErr(got)
		if err != nil || id != tt.id {
			t.Errorf("decodeTokenErr(%q) = %q, %v; want %q", got, id, err, tt.id)
		}
	}
}

func b64url(s string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var out []byte
	for i := 0; i < len(s); i += 3 {
		var n uint32
		k := min(3, len(s)-i)
		for j := range 3 {
			n <<= 8
			if j < k {
				n |= uint32(s[i+j])
			}
		}
		for j := range k + 1 {
			out = append(out, alphabet[n>>(18-6*j)&63])
		}
	}
	return string(out)
}

// checkToken fails unless tok is a single literal NATS token.
func checkToken(t testing.TB, tok string) {
	t.Helper()
	if tok == "" || tok == sessionToken {
		t.Fatalf("token %q", tok)
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c <= ' ' || c >= 0x7f || c == '.' || c == '*' || c == '>' {
			t.Fatalf("token %q has byte %q", tok, c)
		}
	}
	if tok[0] == '_' || (tok[0] == '~') != !isPlain(tok) {
		t.Fatalf("token %q: plain and encoded forms mixed", tok)
	}
}

func TestDecodeTokenRejects(t *testing.T) {
	tests := []struct{ tok, msg string }{
		{"", `events: invalid subject token "": empty`},
		{"_", `events: invalid subject token "_": "_" is reserved for session-level events`},
		{"_a", `events: invalid subject token "_a": neither a plain id ([A-Za-z0-9][A-Za-z0-9_-]{0,63}) nor '~' and base64url`},
		{"-a", `events: invalid subject token "-a": neither a plain id ([A-Za-z0-9][A-Za-z0-9_-]{0,63}) nor '~' and base64url`},
		{"a.b", `events: invalid subject token "a.b": neither a plain id ([A-Za-z0-9][A-Za-z0-9_-]{0,63}) nor '~' and base64url`},
		{"*", `events: invalid subject token "*": neither a plain id ([A-Za-z0-9][A-Za-z0-9_-]{0,63}) nor '~' and base64url`},
		{">", `events: invalid subject token ">": neither a plain id ([A-Za-z0-9][A-Za-z0-9_-]{0,63}) nor '~' and base64url`},
		{"é", `events: invalid subject token "é": neither a plain id ([A-Za-z0-9][A-Za-z0-9_-]{0,63}) nor '~' and base64url`},
		{"a" + strings.Repeat("b", 64), `events: invalid subject token "a` + strings.Repeat("b", 64) + `": neither a plain id ([A-Za-z0-9][A-Za-z0-9_-]{0,63}) nor '~' and base64url`},
		{"~YQ", `events: invalid subject token "~YQ": encodes "a", which must be sent as is`},
		{"~Y", `events: invalid subject token "~Y": bad base64url after '~': illegal base64 data at input byte 0`},
		{"~Xw==", `events: invalid subject token "~Xw==": bad base64url after '~': illegal base64 data at input byte 2`},
		{"~X+E", `events: invalid subject token "~X+E": bad base64url after '~': illegal base64 data at input byte 1`},
		{"~X/E", `events: invalid subject token "~X/E": bad base64url after '~': illegal base64 data at input byte 1`},
		{"~~", `events: invalid subject token "~~": bad base64url after '~': illegal base64 data at input byte 0`},
		{"~Xx", `events: invalid subject token "~Xx": non-canonical base64url after '~'`},     // trailing bits set
		{"~X\nw", `events: invalid subject token "~X\nw": non-canonical base64url after '~'`}, // the decoder skips newlines
		{"~YS5i\r", `events: invalid subject token "~YS5i\r": non-canonical base64url after '~'`},
	}
	for _, tt := range tests {
		id, err := decodeTokenErr(tt.tok)
		if err == nil {
			t.Errorf("decodeTokenErr(%q) = %q, want an error", tt.tok, id)
			continue
		}
		if err.Error() != tt.msg {
			t.Errorf("decodeTokenErr(%q):\n got %s\nwant %s", tt.tok, err, tt.msg)
		}
		if !errors.Is(err, errInvalidToken) {
			t.Errorf("decodeTokenErr(%q): %v does not wrap errInvalidToken", tt.tok, err)
		}
	}
}

func TestTokenRoundTripAllBytes(t *testing.T) {
	for c := range 256 {
		for _, id := range []string{string(rune(c)), string([]byte{byte(c)}), "a" + string([]byte{byte(c)}), string([]byte{byte(c)}) + "a"} {
			tok := EncodeToken(id)
			checkToken(t, tok)
			if got, err := decodeTokenErr(tok); err != nil || got != id {
				t.Fatalf("%q -> %q -> %q, %v", id, tok, got, err)
			}
		}
	}
	for n := range 200 {
		id := strings.Repeat("x", n)
		tok := EncodeToken(id)
		if want := n >= 1 && n <= 64; (tok == id) != want {
			t.Fatalf("length %d: token %q", n, tok)
		}
		if got, err := decodeTokenErr(tok); err != nil || got != id {
			t.Fatalf("length %d: %q, %v", n, got, err)
		}
	}
}

func TestNewSubjects(t *testing.T) {
	for _, p := range []string{"toolstream", "acme.tools", "a", "A-b_c.d.e9", strings.Repeat("a", 128), strings.Repeat("a.", 63) + "aa"} {
		s, err := NewSubjects(p)
		if err != nil || s.Prefix != p {
			t.Errorf("NewSubjects(%q) = %+v, %v", p, s, err)
		}
	}
	if s, err := NewSubjects(""); err != nil || s.Prefix != defaultPrefix {
		t.Errorf(`NewSubjects("") = %+v, %v`, s, err)
	}
	bad := map[string]string{
		".a":                            `events: invalid subject prefix ".a": empty token`,
		"a.":                            `events: invalid subject prefix "a.": empty token`,
		"a..b":                          `events: invalid subject prefix "a..b": empty token`,
		"a.*":                           `events: invalid subject prefix "a.*": tokens may only hold A-Z a-z 0-9 _ -`,
		"a.>":                           `events: invalid subject prefix "a.>": tokens may only hold A-Z a-z 0-9 _ -`,
		"a b":                           `events: invalid subject prefix "a b": tokens may only hold A-Z a-z 0-9 _ -`,
		"$SYS":                          `events: invalid subject prefix "$SYS": tokens may only hold A-Z a-z 0-9 _ -`,
		"é":                             `events: invalid subject prefix "é": tokens may only hold A-Z a-z 0-9 _ -`,
		"~x":                            `events: invalid subject prefix "~x": tokens may only hold A-Z a-z 0-9 _ -`,
		strings.Repeat("a", 129):        `events: invalid subject prefix "` + strings.Repeat("a", 129) + `": longer than 128 bytes`,
		strings.Repeat("ab.", 43):       `events: invalid subject prefix "` + strings.Repeat("ab.", 43) + `": longer than 128 bytes`,
		strings.Repeat("ab.", 40) + ".": `events: invalid subject prefix "` + strings.Repeat("ab.", 40) + `.": empty token`,
	}
	for p, msg := range bad {
		_, err := NewSubjects(p)
		if err == nil || err.Error() != msg || !errors.Is(err, ErrInvalidSubject) {
			t.Errorf("NewSubjects(%q):\n got %v\nwant %s", p, err, msg)
		}
	}
}

func TestSubjects(t *testing.T) {
	var zero Subjects
	acme, err := NewSubjects("acme.tools")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		s    Subjects
		got  string
		want string
	}{
		{zero, zero.Event(&Event{Type: TypeStart, Session: "conv-42", Call: "call_abc123"}), "toolstream.conv-42.call_abc123.start"},
		{zero, zero.Event(&Event{Type: "groups", Session: "conv-42"}), "toolstream.conv-42._.groups"},
		{zero, zero.Call("a.>", "*", "result"), "toolstream.~YS4-.~Kg.result"},
		{zero, zero.Call("s", "", "progress"), "toolstream.s._.progress"},
		{zero, zero.Call("s", "_", "progress"), "toolstream.s.~Xw.progress"},
		{zero, zero.Call("", "", "groups"), "toolstream.~._.groups"},
		{zero, zero.Call("s", "", "a.b"), "toolstream.s._.~YS5i"},
		{zero, zero.Session("conv-42"), "toolstream.conv-42.>"},
		{zero, zero.Session("*"), "toolstream.~Kg.>"},
		{zero, zero.AllOfType(TypeDelta), "toolstream.*.*.delta"},
		{zero, zero.AllOfType(">"), "toolstream.*.*.~Pg"},
		{zero, zero.All(), "toolstream.>"},
		{acme, acme.Event(&Event{Type: TypeDelta, Session: "s 1", Call: "c"}), "acme.tools.~cyAx.c.delta"},
		{acme, acme.Session("s"), "acme.tools.s.>"},
		{acme, acme.AllOfType(TypeResult), "acme.tools.*.*.result"},
		{acme, acme.All(), "acme.tools.>"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%q, want %q", tt.got, tt.want)
		}
	}
}

func TestParse(t *testing.T) {
	acme, _ := NewSubjects("acme.tools")
	ids := nastyIDs()
	for _, s := range []Subjects{{}, acme} {
		for _, session := range ids {
			for _, call := range ids {
				for _, typ := range []Type{TypeStart, TypeResult, "groups", "a.b", "_", "*"} {
					ev := &Event{Session: session, Call: call, Type: typ}
					subj := s.Event(ev)
					gs, gc, gt, err := s.Parse(subj)
					if err != nil || gs != session || gc != call || gt != typ {
						t.Fatalf("Parse(%q) = %q, %q, %q, %v; want %q, %q, %q", subj, gs, gc, gt, err, session, call, typ)
					}
				}
			}
		}
	}
}

func TestParseRejects(t *testing.T) {
	acme, _ := NewSubjects("acme.tools")
	tests := []struct {
		s         Subjects
		subj, msg string
	}{
		{Subjects{}, "", `events: invalid subject "": not under prefix "toolstream"`},
		{Subjects{}, "toolstream", `events: invalid subject "toolstream": not under prefix "toolstream"`},
		{Subjects{}, "toolstreamx.s.c.start", `events: invalid subject "toolstreamx.s.c.start": not under prefix "toolstream"`},
		{Subjects{}, "other.s.c.start", `events: invalid subject "other.s.c.start": not under prefix "toolstream"`},
		{acme, "acme.s.c.start", `events: invalid subject "acme.s.c.start": not under prefix "acme.tools"`},
		{acme, "acme.tools.s.c", `events: invalid subject "acme.tools.s.c": fewer than 3 tokens after the prefix`},
		{acme, "toolstream.s.c.start", `events: invalid subject "toolstream.s.c.start": not under prefix "acme.tools"`},
		{Subjects{}, "toolstream.s.c", `events: invalid subject "toolstream.s.c": fewer than 3 tokens after the prefix`},
		{Subjects{}, "toolstream.s.c.start.x", `events: invalid subject "toolstream.s.c.start.x": more than 3 tokens after the prefix`},
		{Subjects{}, "toolstream.s.c.start.", `events: invalid subject "toolstream.s.c.start.": more than 3 tokens after the prefix`},
		{Subjects{}, "toolstream.>", `events: invalid subject "toolstream.>": fewer than 3 tokens after the prefix`},
		{Subjects{}, "toolstream.*.*.start", `events: invalid subject "toolstream.*.*.start": session token "*": neither a plain id ([A-Za-z0-9][A-Za-z0-9_-]{0,63}) nor '~' and base64url`},
		{Subjects{}, "toolstream.s.>.start", `events: invalid subject "toolstream.s.>.start": call token ">": neither a plain id ([A-Za-z0-9][A-Za-z0-9_-]{0,63}) nor '~' and base64url`},
		{Subjects{}, "toolstream..c.start", `events: invalid subject "toolstream..c.start": session token "": empty`},
		{Subjects{}, "toolstream._.c.start", `events: invalid subject "toolstream._.c.start": session token "_": "_" is reserved for session-level events`},
		{Subjects{}, "toolstream.s.~.start", `events: invalid subject "toolstream.s.~.start": call token "~": an empty call id is sent as "_"`},
		{Subjects{}, "toolstream.s.~YQ.start", `events: invalid subject "toolstream.s.~YQ.start": call token "~YQ": encodes "a", which must be sent as is`},
		{Subjects{}, "toolstream.s.c.", `events: invalid subject "toolstream.s.c.": type token "": empty`},
		{Subjects{}, "toolstream.s.c.~", `events: invalid subject "toolstream.s.c.~": type token "~": empty type`},
		{Subjects{}, "toolstream.s.c._", `events: invalid subject "toolstream.s.c._": type token "_": "_" is reserved for session-level events`},
	}
	for _, tt := range tests {
		s, c, typ, err := tt.s.Parse(tt.subj)
		if err == nil {
			t.Errorf("Parse(%q) = %q, %q, %q", tt.subj, s, c, typ)
			continue
		}
		if err.Error() != tt.msg || !errors.Is(err, ErrInvalidSubject) {
			t.Errorf("Parse(%q):\n got %v\nwant %s", tt.subj, err, tt.msg)
		}
	}
}

// nastyIDs are ids that would break subjects if used as they are.
func nastyIDs() []string {
	return []string{
		"a", "b", "A", "conv-42", "call_abc123", "", "_", "-", "~", "~a", "~YQ", "a.>", "a.*", "*", ">", "a", "a.b", "a.b.c",
		".", "..", "a.", ".a", " ", "a b", "\t", "\n", "\x00", "é", "e\u0301", "😀", "\xff", "\xc3", "a\xc3",
		"_a", "-a", "Xw", "~Xw", "toolstream", "toolstream.a", strings.Repeat("x", 64), strings.Repeat("x", 65),
		"a.>.b", "*.*", "$SYS", "a\r\nb", "\u2028",
	}
}

// match reports whether a NATS subject matches a subscription subject:
// '*' matches one token, a final '>' one or more.
func match(pattern, subject string) bool {
	p, s := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i, tok := range p {
		if tok == ">" && i == len(p)-1 {
			return len(s) > i
		}
		if i >= len(s) || (tok != "*" && tok != s[i]) {
			return false
		}
	}
	return len(p) == len(s)
}

func TestMatch(t *testing.T) {
	for _, tt := range []struct {
		p, s string
		ok   bool
	}{
		{"a.>", "a.b", true}, {"a.>", "a.b.c", true}, {"a.>", "a", false}, {"a.*", "a.b", true},
		{"a.*", "a.b.c", false}, {"*.b", "a.b", true}, {"a.b", "a.b", true}, {"a.b", "a.c", false}, {"a.*.c", "a.b.c", true},
	} {
		if match(tt.p, tt.s) != tt.ok {
			t.Errorf("match(%q, %q) != %v", tt.p, tt.s, tt.ok)
		}
	}
}

func TestSubjectsSessionIsolation(t *testing.T) {
	acme, _ := NewSubjects("acme.tools")
	ids := nastyIDs()
	types := []Type{TypeStart, TypeProgress, TypeResult, "groups"}
	for _, s := range []Subjects{{}, acme} {
		for _, a := range ids {
			watch := s.Session(a)
			for _, b := range ids {
				for _, call := range []string{"", "c", "_", "*", "a.>"} {
					for _, typ := range types {
						subj := s.Event(&Event{Session: b, Call: call, Type: typ})
						if match(watch, subj) != (a == b) {
							t.Fatalf("session %q watching %q, event of session %q on %q: match %v", a, watch, b, subj, !(a == b))
						}
						for _, want := range types {
							if match(s.AllOfType(want), subj) != (want == typ) {
								t.Fatalf("AllOfType(%q) vs %q", want, subj)
							}
						}
						if !match(s.All(), subj) {
							t.Fatalf("All() does not match %q", subj)
						}
					}
				}
			}
		}
	}
	// A session named like a wildcard subscribes to its own literal token only.
	for _, a := range []string{"a.>", "*", ">", "a.*"} {
		if w := (Subjects{}).Session(a); strings.Count(w, "*") > 0 || strings.Count(w, ">") != 1 {
			t.Fatalf("Session(%q) = %q", a, w)
		}
		if match(Subjects{}.Session(a), Subjects{}.Call("a", "c", "start")) || match(Subjects{}.Session(a), Subjects{}.Call("b", "c", "start")) {
			t.Fatalf("Session(%q) receives other sessions' events", a)
		}
	}
}

// TestDocumentedTokenExamples keeps docs/events.md honest.
func TestDocumentedTokenExamples(t *testing.T) {
	for id, tok := range map[string]string{"conv-42": "conv-42", "a.b": "~YS5i", "a.>": "~YS4-", "日本": "~5pel5pys", "": "~", "_x": "~X3g"} {
		if got := EncodeToken(id); got != tok {
			t.Errorf("EncodeToken(%q) = %q, the docs say %q", id, got, tok)
		}
	}
}
