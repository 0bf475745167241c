package interceptors

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// The patterns as they were written before the finders: a search of the
// whole text with each, which the finders must reproduce exactly.
var sanitizeReference = map[string]*regexp.Regexp{
	"api_key": regexp.MustCompile(strings.Join([]string{
		`\bsk-[A-Za-z0-9_-]{20,}`,
		`\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}`,
		`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`,
		`\bgh[pousr]_[A-Za-z0-9]{30,}`,
		`\bgithub_pat_[A-Za-z0-9_]{30,}`,
		`\bxox[abposr]-[A-Za-z0-9-]{10,}`,
		`\bAIza[0-9A-Za-z_-]{35}`,
		`(?i:\b(bearer\s+))[A-Za-z0-9._~+/-]{20,}=*`,
	}, "|")),
	"email": sanitizeEmailRE,
	"phone": sanitizePhoneRE,
}

// referenceReplace is redaction as it was: every match of re at once.
func referenceReplace(r *sanitizeRedactor, re *regexp.Regexp, s string) (string, int) {
	var out []byte
	last, n := 0, 0
	for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
		if m[0] == m[1] || r.accept != nil && !r.accept(s, m[0], m[1]) {
			continue
		}
		out = append(out, s[last:m[0]]...)
		out = re.ExpandString(out, r.repl, s, m)
		last = m[1]
		n++
	}
	if n == 0 {
		return s, 0
	}
	return string(append(out, s[last:]...)), n
}

func sanitizeAll() *sanitizeConfig {
	cfg := &sanitizeConfig{}
	for _, o := range []SanitizeOption{
		RedactAPIKeys(), RedactEmails(), RedactPhoneNumbers(),
		Redact("word", regexp.MustCompile(`\bsecret\b`), "[w]"),
		Redact("line", regexp.MustCompile(`(?m)^token=(\w+)`), "token=[${1}]"),
		Redact("nonword", regexp.MustCompile(`\Bx\B`), "X"),
		Redact("plain", regexp.MustCompile(`pw:[0-9]+`), "pw:*"),
	} {
		o(cfg)
	}
	return cfg
}

var sanitizeSeeds = []string{
	"key sk-proj-abcdefghijklmnopqrstuvwxyz0123 and xsk-abcdefghijklmnopqrstuvwxyz sk-short",
	"AKIAIOSFODNN7EXAMPLE AKIAIOSFODNN7EXAMPLEX MYAKIAIOSFODNN7EXAMPLE1 ASIAIOSFODNN7EXAMPLE",
	"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abc-DEF_ghi== BEARER   0123456789abcdef0123456789",
	"ghp_abcdefghijklmnopqrstuvwxyz0123456789 github_pat_11ABCDEFG0123456789_abcdefghijkl xoxb-1234567890-abc",
	"sk_live_abcdefghijklmnop1234 rk_test_abcdefghijklmnop1234 AIzaSyA-1234567890abcdefghijklmnopqrstu",
	"mail alice@example.com, bob.smith+tag@mail.example.co.uk; O'Neil_99%x@sub-domain.example.org a@b@c.com x@y",
	"@@@ user@localhost foo@bar.c é@example.com café@example.com a..b@x.com",
	"call +1 415 555 0132 or (415) 555-0132 or 415.555.0132, 2024-01-15, 192.168.100.200, 4155550132",
	"+14155550132 +49 30 901820 06 12 34 56 78 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6",
	"secret secrets a secret_ secret\ntoken=abc\ntoken=def xtoken=no axb x xx",
	"pw:123 pw: pw:9",
	"sk-" + strings.Repeat("a", 30) + "sk-" + strings.Repeat("b", 30) + "@example.com",
	"\xffsk-abcdefghijklmnopqrstuvwxyz \xe2\x82sk-abcdefghijklmnopqrstuvwxyz",
}

// The finders give exactly what a search of the whole text gives.
func FuzzRedactFinders(f *testing.F) {
	for _, s := range sanitizeSeeds {
		f.Add(s)
	}
	cfg := sanitizeAll()
	f.Fuzz(func(t *testing.T, s string) {
		for i := range cfg.redactors {
			r := &cfg.redactors[i]
			ref := sanitizeReference[r.name]
			if ref == nil {
				ref = r.re
			}
			got, n := r.replace(s)
			want, wn := referenceReplace(r, ref, s)
			if got != want || n != wn {
				t.Fatalf("%s on %q:\n got %q (%d)\nwant %q (%d)", r.name, s, got, n, want, wn)
			}
		}
	})
}

// referenceJSON is JSON redaction as it was: decode, redact, compare.
func referenceJSON(cfg *sanitizeConfig, v any) any {
	switch x := v.(type) {
	case string:
		s, _ := cfg.redact(x)
		return s
	case []any:
		for i, e := range x {
			x[i] = referenceJSON(cfg, e)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			rk, _ := cfg.redact(k)
			out[rk] = referenceJSON(cfg, e)
		}
		return out
	}
	return v
}

// The JSON scanner accepts exactly what encoding/json accepts, and its
// output decodes to the input with every string redacted.
func FuzzRedactJSON(f *testing.F) {
	for _, s := range []string{
		`{"a":"alice@example.com","b":[1,2.5e-3,-0,true,false,null],"c":{"":"\u0073k-abcdefghijklmnopqrstuvwxyz"}}`,
		`"sk-abcdefghijklmnopqrstuvwxyz"`, `[]`, `{}`, ` [ ] `, `[1,]`, `{"a":1,}`, `{"a"}`, `01`, `1.`, `-`, `1e`, `.5`,
		`"\ud83d\ude00 \ud83d x \udc00"`, `"\u00"`, `"a\qb"`, "\"\x01\"", `[1 2]`, `1 2`, `nul`, `tru`, `{"a":1}}`,
		`[[[[[[]]]]]]`, `[{"k":[{"k":"bob@example.org"}]}]`, `{"secret":"secret","x":"axb"}`, "\"\xff\xfe\"",
		`"line\ntoken=abc"`, `{"q":"\"quoted\" sk-abcdefghijklmnopqrstuvwxyz\\"}`,
	} {
		f.Add([]byte(s))
	}
	cfg := sanitizeAll()
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, n, ok := cfg.redactJSON(raw)
		if ok != json.Valid(raw) {
			t.Fatalf("%q: ok %v, json.Valid %v", raw, ok, json.Valid(raw))
		}
		if !ok {
			return
		}
		if n == 0 {
			if out != nil {
				t.Fatalf("%q: no redaction but new bytes %q", raw, out)
			}
			out = raw
		}
		if !json.Valid(out) {
			t.Fatalf("%q became invalid JSON %q", raw, out)
		}
		in, err := decodeJSON(raw)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeJSON(out)
		if err != nil {
			t.Fatal(err)
		}
		if want := referenceJSON(cfg, in); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q -> %q\n got %#v\nwant %#v", raw, out, got, want)
		}
		if n == 0 && !bytes.Equal(out, raw) {
			t.Fatal("unchanged JSON was rewritten")
		}
	})
}

// A text that is one long run of an address's or a phone number's bytes,
// holding a match every few bytes, is measured once: the finders look at
// each byte a bounded number of times (they once measured the run again for
// every match in it, which made such a text quadratic).
func TestRedactFindersMeasureRunsOnce(t *testing.T) {
	cfg := sanitizeAll()
	size := 1 << 20
	if testutil.Race { // the bound holds at any size; the detector makes 1 MiB slow
		size = 128 << 10
	}
	for _, unit := range []string{"12 34 56 78 90 ", "+1 415 555 0132 ", "a@b.cc@", "x.y@e.co-", "1234567"} {
		s := strings.Repeat(unit, size/len(unit))
		for i := range cfg.redactors[:3] {
			r := &cfg.redactors[i]
			_, n, measured := r.replaceMeasured(s)
			t.Logf("%s on %q...: %d matches, %d bytes measured for %d", r.name, unit, n, measured, len(s))
			if measured > 2*len(s) {
				t.Errorf("%s on %q repeated: measured %d bytes for a text of %d", r.name, unit, measured, len(s))
			}
		}
	}
}

// However a stream cuts a large text into deltas, what the model reads
// (the filtered stream, then the pass over the whole result, which skips
// the parts the filter vouches for) is what the pass would make of it
// without skipping: the skip never lets through a match that the pieces
// hid between them.
func FuzzSanitizeStreamCuts(f *testing.F) {
	f.Add("Authorization: Bearer\n"+strings.Repeat("T0k", 10)+"\n", uint16(22), uint16(0))
	f.Add("x -----BEGIN S-----\nsecret\n-----END S-----\n", uint16(20), uint16(27))
	f.Add("sk-"+strings.Repeat("a", 30), uint16(5), uint16(9))
	cfg := &sanitizeConfig{}
	for _, o := range []SanitizeOption{RedactAPIKeys(), RedactEmails(), Redact("pem", regexp.MustCompile(`-----BEGIN S-----(?s:.*?)-----END S-----`), "[pem]")} {
		o(cfg)
	}
	pad := strings.Repeat("\n", sanitizePrintMin) // a part large enough to be vouched for
	f.Fuzz(func(t *testing.T, s string, a, b uint16) {
		text := pad + s
		cuts := []int{len(pad) + min(int(a), len(s)), len(pad) + min(int(b), len(s))}
		if cuts[0] > cuts[1] {
			cuts[0], cuts[1] = cuts[1], cuts[0]
		}
		count := &sanitizeCount{}
		f := &sanitizeStream{cfg: cfg, count: count}
		var out strings.Builder
		last := 0
		for _, c := range append(cuts, len(text)) {
			for _, p := range f.Filter(events.Text(text[last:c])) {
				out.WriteString(p.Text)
			}
			last = c
		}
		for _, p := range f.Flush() {
			out.WriteString(p.Text)
		}
		content := []events.Part{events.Text(out.String())}
		final := events.ContentText(cfg.apply(toolkit.Result{State: events.StateSuccess, Content: content}, count).Content)
		// Without the filter's word, the pass redacts the whole result.
		want := events.ContentText(cfg.apply(toolkit.Result{State: events.StateSuccess, Content: content}, nil).Content)
		if final != want {
			i := 0
			for i < len(final) && i < len(want) && final[i] == want[i] {
				i++
			}
			t.Fatalf("the model reads %q, want %q", final[max(i-20, 0):min(i+60, len(final))], want[max(i-20, 0):min(i+60, len(want))])
		}
	})
}
