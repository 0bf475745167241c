package interceptors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// FuzzCanonicalNumber: two JSON numbers get the same canonical text
// exactly when they are the same decimal value (LoopGuard counts them as
// one call only then).
func FuzzCanonicalNumber(f *testing.F) {
	for _, s := range [][2]string{{"1.5", "15e-1"}, {"0", "-0.0e5"}, {"1e2", "100"}, {"1.5000000000000001", "1.5"},
		{"10e9223372036854775807", "1e9223372036854775808"}, {"-2.5e-1", "-0.25"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if !jsonNumber(a) || !jsonNumber(b) || len(a) > 40 || len(b) > 40 {
			return
		}
		ca, cb := canonicalNumber(a), canonicalNumber(b)
		ra, rb, ok := ratOf(a), ratOf(b), true
		if ra == nil || rb == nil {
			ok = false // an exponent too large to evaluate: compare the texts' parts instead
		}
		if ok && (ca == cb) != (ra.Cmp(rb) == 0) {
			t.Fatalf("%s -> %s, %s -> %s: same text %v, same value %v", a, ca, b, cb, ca == cb, ra.Cmp(rb) == 0)
		}
		if canonicalNumber(ca) != ca {
			t.Fatalf("%s -> %s is not a fixed point (-> %s)", a, ca, canonicalNumber(ca))
		}
	})
}

func jsonNumber(s string) bool {
	var n json.Number
	return json.Unmarshal([]byte(s), &n) == nil && string(n) == s && s != ""
}

// ratOf evaluates a JSON number exactly, or returns nil when its exponent
// is too large to evaluate.
func ratOf(s string) *big.Rat {
	mant, exp, _ := strings.Cut(strings.ToLower(s), "e")
	r, ok := new(big.Rat).SetString(mant)
	if !ok {
		return nil
	}
	if exp == "" {
		return r
	}
	e, ok := new(big.Int).SetString(strings.TrimPrefix(exp, "+"), 10)
	if !ok || e.CmpAbs(big.NewInt(400)) > 0 {
		return nil
	}
	p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), new(big.Int).Abs(e), nil))
	if e.Sign() < 0 {
		return r.Quo(r, p)
	}
	return r.Mul(r, p)
}

// FuzzVisibleJSON: what a person is shown of valid JSON arguments is valid
// JSON of the same value, with no hidden character and no invalid UTF-8
// left unescaped; visibleText leaves nothing hidden either and is
// idempotent.
func FuzzVisibleJSON(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, "{\"a\u202e\":\"x\u2066y\"}", "[\"\U000e0041\",1.5,\"\u00a0\"]",
		"{\"a\":\"\xff\x7f\"}", `{"a":"\\\"\u202e"}`, "\"\u2028\"", `"\ud800"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		vt := visibleText(raw)
		if visibleText(vt) != vt || !utf8.ValidString(vt) || strings.ContainsFunc(vt, hidden) {
			t.Fatalf("visibleText(%q) = %q", raw, vt)
		}
		if !json.Valid([]byte(raw)) {
			return
		}
		got := visibleJSON(json.RawMessage(raw))
		var a, b any
		if json.Unmarshal([]byte(raw), &a) != nil || json.Unmarshal(got, &b) != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("visibleJSON(%q) = %q: not the same value", raw, got)
		}
		var compact bytes.Buffer // whitespace between tokens is not shown text
		if err := json.Compact(&compact, got); err != nil || !utf8.Valid(got) || strings.ContainsFunc(compact.String(), hidden) {
			t.Fatalf("visibleJSON(%q) = %q: something hidden is left", raw, got)
		}
	})
}

// FuzzSanitizeTruncate: a truncated result is at most the limit plus its
// marker (and a failure's kept Error line), valid UTF-8 when the parts
// were, a prefix of the original text, and the marker counts exactly the
// bytes left out.
func FuzzSanitizeTruncate(f *testing.F) {
	f.Add("héllo wörld €€€", `{"a":"ü"}`, 7, false)
	f.Add("x", `[1,2,3]`, 1, true)
	f.Add("𝄞𝄞𝄞𝄞", `"€"`, 5, false)
	f.Fuzz(func(t *testing.T, text, js string, limit int, fail bool) {
		if limit < 1 || limit > 1<<12 || !utf8.ValidString(text) || !json.Valid([]byte(js)) {
			return
		}
		out := toolkit.Result{State: events.StateSuccess,
			Content: []events.Part{events.Text(text), {Type: events.PartJSON, JSON: json.RawMessage(js)}, events.Binary("image/png", []byte{1, 2})}}
		if fail {
			err := fmt.Errorf("tool %q timed out after %v", "t", 1) // any failure with an Error line
			out = toolkit.Result{State: events.StateError, Err: err,
				Content: append(out.Content[:2:2], events.Text("Error: "+err.Error()))}
		}
		before := events.ContentText(out.Content)
		omitted := -1
		got := sanitizeTruncate(out, limit, func(n int) string { omitted = n; return "\x00MARK\x00" })
		if events.ContentText(out.Content) != before {
			t.Fatal("the outcome's content was changed in place")
		}
		s := events.ContentText(got)
		head, tail, ok := strings.Cut(s, "\x00MARK\x00")
		if !ok {
			t.Fatalf("no marker in %q", s)
		}
		if len(head) > limit {
			t.Fatalf("kept %d bytes over a limit of %d: %q", len(head), limit, head)
		}
		if utf8.ValidString(before) && !utf8.ValidString(head) {
			t.Fatalf("the cut split a character: %q", head)
		}
		body := before
		if tail != "" {
			if !fail || !strings.HasSuffix(before, tail) {
				t.Fatalf("tail %q after the marker", tail)
			}
			body = strings.TrimSuffix(before, tail)
		}
		if omitted == 0 && head == body+"\n" {
			head = body // all kept: the newline sets a JSON or binary part off from the marker
		}
		if !strings.HasPrefix(body, head) {
			t.Fatalf("%q is not a prefix of %q", head, body)
		}
		if omitted != len(body)-len(head) {
			t.Fatalf("marker says %d bytes left out, %d were (limit %d, %q -> %q)", omitted, len(body)-len(head), limit, body, head)
		}
	})
}

// FuzzDecimalAdd: canonicalNumber's addition for exponents beyond int64
// agrees with big.Int.
func FuzzDecimalAdd(f *testing.F) {
	f.Add("99999999999999999999", int64(1))
	f.Add("-10000000000000000000000", int64(-5))
	f.Add("+00010000000000000000000000", int64(-9223372036854775808))
	f.Add("-100000000000000000000", int64(9223372036854775807))
	f.Fuzz(func(t *testing.T, e string, shift int64) {
		digits := strings.TrimLeft(e, "+-")
		if len(e)-len(digits) > 1 || digits == "" || len(digits) > 200 || strings.Trim(digits, "0123456789") != "" {
			return
		}
		be, _ := new(big.Int).SetString(strings.TrimPrefix(e, "+"), 10)
		if be.CmpAbs(new(big.Int).Abs(big.NewInt(shift))) <= 0 {
			return // decimalAdd's precondition: |e| > |shift|
		}
		want := new(big.Int).Add(be, big.NewInt(shift)).String()
		if got := decimalAdd(e, shift); got != want {
			t.Fatalf("decimalAdd(%s, %d) = %s, want %s", e, shift, got, want)
		}
	})
}

// FuzzEvictNameAndMessage: any tool name and ids make a name every
// backend accepts, and the message that stands for a stored result counts
// its lines right, shows whole characters only and stays short.
func FuzzEvictNameAndMessage(f *testing.F) {
	f.Add("read_file", "s1", "c1", "line 1\nline 2\n", 2, 5)
	f.Add("../../etc/passwd", "", "\x00", "€€€€€€\r\n\n\n", 1, 4)
	f.Add("ünïcødé tool", "a/b", "..", "no newline at all", 0, 1)
	f.Fuzz(func(t *testing.T, tool, session, call, text string, lines, lineBytes int) {
		name := EvictFileName(tool, session, call)
		if !ValidResultName(name) || len(name) > 80 {
			t.Fatalf("EvictFileName(%q, %q, %q) = %q", tool, session, call, name)
		}
		if lines < 0 || lines > 50 || lineBytes < 1 || lineBytes > 300 || len(text) > 4096 || !utf8.ValidString(text) {
			return
		}
		cfg := &evictConfig{lines: lines, lineBytes: lineBytes}
		msg := cfg.message(text, "/x/"+name)
		if !utf8.ValidString(msg) {
			t.Fatalf("message of %q is not UTF-8: %q", text, msg)
		}
		total := strings.Count(text, "\n")
		if !strings.HasSuffix(text, "\n") {
			total++
		}
		if want := fmt.Sprintf("(%d bytes, %d line", len(text), total); !strings.Contains(msg, want) {
			t.Fatalf("message of %q lacks %q: %q", text, want, msg)
		}
		// Each preview line holds at most lineBytes of the text and " [...]".
		if most := 200 + len(name) + (lines+1)*(lineBytes+20) + 40; len(msg) > most {
			t.Fatalf("message of %d bytes for %d lines of %d bytes: %q", len(msg), lines, lineBytes, msg)
		}
	})
}

// FuzzSanitizeTextualParams: whatever parameters follow a media type,
// well formed or not, Sanitize reads the part as the type says (a textual
// type's part is redacted, a JSON type's read as JSON).
func FuzzSanitizeTextualParams(f *testing.F) {
	for _, s := range [][2]string{{"application/json", " charset"}, {"text/plain", "charset=utf-8"}, {"application/ld+json", ";"},
		{"TEXT/CSV", `q="x`}, {"image/png", "a=b"}, {"application/x-ndjson", "=="}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, base, params string) {
		if strings.ContainsAny(base, ";\"") || strings.TrimSpace(base) != base {
			return
		}
		want := sanitizeTextual(base)
		if got := sanitizeTextual(base + ";" + params); got != want {
			t.Fatalf("%q is %d, %q is %d", base, want, base+";"+params, got)
		}
	})
}
