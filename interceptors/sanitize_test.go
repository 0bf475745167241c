package interceptors_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// sanEcho runs texts through "echo" with the sanitizer and returns what the
// model sees, checking that the deltas add up to it.
func sanEcho(t *testing.T, opts []interceptors.SanitizeOption, texts ...string) []string {
	t.Helper()
	tk, rec := evKit(t, interceptors.Sanitize(opts...))
	var calls []toolkit.Call
	for i, s := range texts {
		calls = append(calls, evCall(fmt.Sprint("c", i), "echo", evIn{Text: s}))
	}
	var out []string
	for _, r := range evRun(t, tk, "s", calls...) {
		evCheckDeltas(t, rec, r)
		out = append(out, r.Text())
	}
	return out
}

func sanCheck(t *testing.T, opt interceptors.SanitizeOption, repl string, positives, negatives []string) {
	t.Helper()
	got := sanEcho(t, []interceptors.SanitizeOption{opt}, append(append([]string(nil), positives...), negatives...)...)
	for i, s := range positives {
		t.Logf("%q -> %q", s, got[i])
		if want := "x " + repl + " y"; strings.Contains(s, "x ") && got[i] != want {
			t.Errorf("%q became %q, want %q", s, got[i], want)
		} else if !strings.Contains(got[i], repl) {
			t.Errorf("%q was not redacted: %q", s, got[i])
		}
	}
	for i, s := range negatives {
		if g := got[len(positives)+i]; g != s {
			t.Errorf("%q was changed to %q", s, g)
		}
	}
}

func TestRedactEmails(t *testing.T) {
	sanCheck(t, interceptors.RedactEmails(), "[redacted email]",
		[]string{"x alice@example.com y", "x bob.smith+tag@mail.example.co.uk y", "x O'Neil_99%x@sub-domain.example.org y", "Mail: <carol@example.io>.", "'dave@example.com'"},
		[]string{"user@localhost", "@mention", "a@b", "foo@bar.c", "price: 5@ 3.50", "no email here", "@example.com"})
}

func TestRedactPhoneNumbers(t *testing.T) {
	sanCheck(t, interceptors.RedactPhoneNumbers(), "[redacted phone number]",
		[]string{"x +1 415 555 0132 y", "x (415) 555-0132 y", "x 415.555.0132 y", "x 415-555-0132 y", "x +44 20 7946 0958 y",
			"x +14155550132 y", "x +49 30 901820 y", "x +1 (415) 555-0132 y", "call 06 12 34 56 78 now"},
		[]string{"2024-01-15", "2024-01-15 10:30:00", "15.01.2024", "192.168.100.200", "10.0.0.1", "version 1.22.3",
			"4155550132", "pi is 3.14159265", "1234.5678", "order 12345678901234567890", "555-0132",
			"uuid 123e4567-e89b-12d3-a456-426614174000", "sha 9f86d081884c7d65", "4111 1111 1111 1111 1111", "v1.2.3-45-6789"})
}

func TestRedactAPIKeys(t *testing.T) {
	sanCheck(t, interceptors.RedactAPIKeys(), "[redacted API key]",
		[]string{
			"x sk-proj-abcdefghijklmnopqrstuvwxyz0123456789 y",
			"x sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345 y",
			"x AKIAIOSFODNN7EXAMPLE y",
			"x ghp_abcdefghijklmnopqrstuvwxyz0123456789 y",
			"x github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz y",
			"x xoxb-1234567890-abcdefghijkl y",
			"x xoxp-1234567890-0987654321-abcdefABCDEF y",
			"x sk_live_abcdefghijklmnop1234 y",
			"x AIzaSyA-1234567890abcdefghijklmnopqrstu y",
			`{"token": "sk-abcdefghijklmnopqrstuvwxyz"}`,
		},
		[]string{"sk-learn", "task-abcdefghijklmnopqrstuvwxyz0123", "risk-free", "AKIA", "AKIAshort", "ghp_short",
			"xoxb-", "Bearer token", "the bearer of bad news", "skeleton-key-abcdefghijklmnopqrst", "MYAKIAIOSFODNN7EXAMPLE1"})
	// After "Bearer " the word stays and the token goes.
	got := sanEcho(t, []interceptors.SanitizeOption{interceptors.RedactAPIKeys()},
		"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abc-DEF_ghi==",
		"authorization: bearer 0123456789abcdef0123456789abcdef")
	if got[0] != "Authorization: Bearer [redacted API key]" || got[1] != "authorization: bearer [redacted API key]" {
		t.Fatalf("bearer: %q", got)
	}
}

func TestRedactCustom(t *testing.T) {
	opts := []interceptors.SanitizeOption{
		interceptors.Redact("ssn", regexp.MustCompile(`\b(\d{3})-\d{2}-\d{4}\b`), "$1-XX-XXXX"),
		interceptors.Redact("word", regexp.MustCompile(`secret`), "first"),
		interceptors.Redact("word", regexp.MustCompile(`secret`), "[hidden]"), // replaces the one before
	}
	got := sanEcho(t, opts, "ssn 123-45-6789, the secret")
	if got[0] != "ssn 123-XX-XXXX, the [hidden]" {
		t.Fatalf("got %q", got[0])
	}
}

func TestSanitizePlaceholder(t *testing.T) {
	got := sanEcho(t, nil, "", "  \n\t ", "ok")
	if got[0] != interceptors.DefaultSanitizePlaceholder || got[1] != interceptors.DefaultSanitizePlaceholder || got[2] != "ok" {
		t.Fatalf("got %q", got)
	}
	got = sanEcho(t, []interceptors.SanitizeOption{interceptors.SanitizePlaceholder("(nothing)")}, "")
	if got[0] != "(nothing)" {
		t.Fatalf("got %q", got)
	}

	// JSON null is empty; an empty list is an answer.
	tk, rec := evKit(t, interceptors.Sanitize())
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "list"}, func(ctx context.Context, in struct {
		Nil bool `json:"nil"`
	}) ([]string, error) {
		if in.Nil {
			return nil, nil
		}
		return []string{}, nil
	}))
	res := evRun(t, tk, "s", toolkit.Call{ID: "a", Name: "list", Args: []byte(`{"nil":true}`)},
		toolkit.Call{ID: "b", Name: "list", Args: []byte(`{"nil":false}`)})
	if res[0].Text() != interceptors.DefaultSanitizePlaceholder || res[1].Text() != "[]" {
		t.Fatalf("got %q, %q", res[0].Text(), res[1].Text())
	}
	evCheckDeltas(t, rec, res[0])
}

func TestSanitizeTruncatesAtRuneBoundary(t *testing.T) {
	text := strings.Repeat("é", 100) // 200 bytes
	got := sanEcho(t, []interceptors.SanitizeOption{interceptors.SanitizeMaxBytes(51)}, text, strings.Repeat("a", 51))
	want := strings.Repeat("é", 25) + "\n[truncated: 150 more bytes]\n"
	if got[0] != want || !utf8.ValidString(got[0]) {
		t.Fatalf("got %q, want %q", got[0], want)
	}
	if got[1] != strings.Repeat("a", 51) {
		t.Fatalf("a result at the limit was cut: %q", got[1])
	}
	// Off: nothing is cut.
	if got := sanEcho(t, []interceptors.SanitizeOption{interceptors.SanitizeMaxBytes(0)}, text); got[0] != text {
		t.Fatalf("got %q", got[0])
	}
}

func TestSanitizeTruncatedFailureKeepsError(t *testing.T) {
	tk, rec := evKit(t, interceptors.Sanitize(interceptors.SanitizeMaxBytes(300)))
	res := evRun(t, tk, "s", evCall("c1", "big", evIn{Lines: 100, Fail: "out of memory"}))[0]
	evCheckDeltas(t, rec, res)
	if res.State != events.StateError || res.Err == nil || res.Err.Error() != "out of memory" {
		t.Fatalf("state %s, err %v", res.State, res.Err)
	}
	if !strings.HasSuffix(res.Text(), "more bytes]\nError: out of memory") || len(res.Text()) > 350 {
		t.Fatalf("got %q", res.Text())
	}
}

func TestSanitizeRedactsDeltasAndResult(t *testing.T) {
	key := "sk-" + strings.Repeat("A1b2", 8)
	tk, rec := evKit(t, interceptors.Sanitize(interceptors.RedactAPIKeys(), interceptors.RedactEmails()))
	text := "key " + key + " mail alice@example.com\n"
	res := evRun(t, tk, "s",
		evCall("whole", "echo", evIn{Text: strings.Repeat(text, 3), Parts: 3}), // each delta holds whole secrets
		evCall("split", "echo", evIn{Text: "key " + key + " done", Parts: 2}),  // the key is split across deltas
	)
	want := strings.Repeat("key [redacted API key] mail [redacted email]\n", 3)
	if res[0].Text() != want {
		t.Fatalf("got %q", res[0].Text())
	}
	deltas := rec.DeltaTexts("whole")
	if len(deltas) != 3 {
		t.Fatalf("deltas %q", deltas)
	}
	for _, d := range deltas {
		if strings.Contains(d, "sk-") || strings.Contains(d, "@") {
			t.Fatalf("a delta leaked a secret: %q", d)
		}
	}
	evCheckDeltas(t, rec, res[0])

	// Split: the key is cut across deltas, and no delta shows a piece of
	// it (the end of a line waits for the rest of it).
	if res[1].Text() != "key [redacted API key] done" {
		t.Fatalf("got %q", res[1].Text())
	}
	evCheckDeltas(t, rec, res[1])
	for _, ev := range rec.Of("split") {
		if ev.Type == events.TypeDelta && strings.Contains(ev.Delta.String(), "A1b2") {
			t.Fatalf("a delta shows a piece of the key: %q", ev.Delta.String())
		}
	}
}

// TestSanitizeNeverStreamsAPieceOfASecret: however a stream cuts a text
// into deltas, no delta an observer sees holds a piece of a secret, the
// deltas add up to the redacted result, and whole lines go out as they
// come.
func TestSanitizeNeverStreamsAPieceOfASecret(t *testing.T) {
	key := "sk-" + strings.Repeat("Zq9x", 8)
	text := "first line\nkey " + key + " mail bob@example.org phone +1 555 123 4567\nlast " + key
	tk, rec := evKit(t, interceptors.Sanitize(interceptors.RedactAPIKeys(), interceptors.RedactEmails(), interceptors.RedactPhoneNumbers()))
	for parts := 2; parts <= len(text); parts += 7 {
		id := fmt.Sprintf("p%d", parts)
		res := evRun(t, tk, "s", evCall(id, "echo", evIn{Text: text, Parts: parts}))[0]
		evCheckDeltas(t, rec, res)
		if strings.Contains(res.Text(), "Zq9x") || strings.Contains(res.Text(), "bob@") {
			t.Fatalf("%d parts: the result holds a secret: %q", parts, res.Text())
		}
		deltas := rec.DeltaTexts(id)
		for _, d := range deltas {
			for _, piece := range []string{"Zq9", "q9x", "9xZ", "xZq", "bob", "example.org", "555", "4567"} {
				if strings.Contains(d, piece) {
					t.Fatalf("%d parts: a delta shows %q: %q", parts, piece, d)
				}
			}
		}
		if len(deltas) == 0 || deltas[0] != "first line\n" {
			t.Fatalf("%d parts: the first line did not go out on its own: %q", parts, deltas)
		}
	}
}

func TestSanitizeRedactsJSON(t *testing.T) {
	tk, rec := evKit(t, interceptors.Sanitize(interceptors.RedactEmails()))
	type user struct {
		Name  string   `json:"name"`
		Email string   `json:"email"`
		Tags  []string `json:"tags"`
		Age   int      `json:"age"`
	}
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "user"}, func(ctx context.Context, in struct{}) (user, error) {
		stream.From(ctx).Data(map[string]string{"streamed": "bob@example.com"})
		return user{Name: "Al <admin>", Email: "al@example.com", Tags: []string{"x", "cc: eve@example.org"}, Age: 42}, nil
	}))
	res := evRun(t, tk, "s", toolkit.Call{ID: "u", Name: "user", Args: []byte(`{}`)})[0]
	evCheckDeltas(t, rec, res)
	// Only the changed strings are written again: key order and the
	// escapes of the rest (\u003c from encoding/json) stay as they were.
	want := `{"streamed":"[redacted email]"}` + "\n" + `{"name":"Al \u003cadmin\u003e","email":"[redacted email]","tags":["x","cc: [redacted email]"],"age":42}`
	if res.Text() != want {
		t.Fatalf("got  %s\nwant %s", res.Text(), want)
	}
	for _, p := range res.Content {
		if p.Type != events.PartJSON {
			t.Fatalf("part %v is no longer JSON", p.Type)
		}
	}
}

func TestSanitizeLeavesCleanResultsAlone(t *testing.T) {
	tk, rec := evKit(t, interceptors.Sanitize(interceptors.RedactAPIKeys()))
	res := evRun(t, tk, "s", evCall("c", "big", evIn{Lines: 3}))[0]
	if res.Text() != evFullText(3, "") {
		t.Fatalf("got %q", res.Text())
	}
	for _, ev := range rec.All() {
		if ev.Reset {
			t.Fatal("a clean result was replaced (reset delta)")
		}
	}
}

// A retry outside the sanitizer runs it once per attempt: each attempt's
// deltas and the final result are redacted.
func TestSanitizeUnderRetry(t *testing.T) {
	retry := toolkit.Interceptor{Name: "ev-retry", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		out := next(ctx, inv)
		if inv.Attempts() < 2 {
			out = next(ctx, inv)
		}
		return out
	}}
	tk, rec := evKit(t, retry, interceptors.Sanitize(interceptors.RedactAPIKeys()))
	res := evRun(t, tk, "s", evCall("c", "echo", evIn{Text: "sk-" + strings.Repeat("z", 30), Parts: 1}))[0]
	if res.Text() != "[redacted API key]" {
		t.Fatalf("got %q", res.Text())
	}
	for _, d := range rec.DeltaTexts("c") {
		if strings.Contains(d, "zzz") {
			t.Fatalf("a delta leaked the key: %q", d)
		}
	}
	evCheckDeltas(t, rec, res)
}

// sanPartsKit returns a toolkit with Sanitize(opts) and a tool "parts" that
// returns the parts given, streamed one delta each.
func sanPartsKit(t *testing.T, parts []events.Part, opts ...interceptors.SanitizeOption) (*toolkit.Toolkit, *testutil.Recorder) {
	t.Helper()
	tk, rec := evKit(t, interceptors.Sanitize(opts...))
	tool, err := toolkit.NewRawTool(toolkit.Spec{Name: "parts"}, json.RawMessage(`{"type":"object"}`),
		func(ctx context.Context, _ json.RawMessage) ([]events.Part, error) {
			em := stream.From(ctx)
			for _, p := range parts[:len(parts)-1] {
				if err := em.Part(p); err != nil {
					return nil, err
				}
			}
			return parts[len(parts)-1:], nil
		})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Add(t, tk, tool)
	return tk, rec
}

// sanNoKey fails if the key appears in the result or in any delta.
func sanNoKey(t *testing.T, rec *testutil.Recorder, res toolkit.Result, key string) {
	t.Helper()
	check := func(where string, p events.Part) {
		if strings.Contains(p.Text, key) || strings.Contains(string(p.JSON), key) || strings.Contains(string(p.Data), key) {
			t.Errorf("%s holds the key: %.200q", where, p.String())
		}
	}
	for i, p := range res.Content {
		check(fmt.Sprintf("result part %d", i), p)
	}
	for _, ev := range rec.All() {
		if ev.Call == res.Call.ID && ev.Delta != nil {
			check(fmt.Sprintf("delta %d", ev.Seq), *ev.Delta)
		}
	}
}

// A JSON part redaction cannot inspect (malformed, or, before, nested past
// encoding/json's limit) never passes: malformed JSON is replaced whole by
// a marker and counted, deep JSON is read and redacted.
func TestSanitizeRedactionFailsClosed(t *testing.T) {
	key := "sk-" + strings.Repeat("Q7w", 10)
	deep := strings.Repeat("[", 20000) + `{"token":"` + key + `"}` + strings.Repeat("]", 20000)
	parts := []events.Part{
		{Type: events.PartJSON, JSON: json.RawMessage(`{"token": "` + key + `",}`)}, // trailing comma
		{Type: events.PartJSON, JSON: json.RawMessage(`{token: ` + key + `}`)},      // not JSON at all
		{Type: events.PartJSON, JSON: json.RawMessage(deep)},
		{Type: events.PartJSON, JSON: json.RawMessage(`{"escaped":"\u0073k-` + strings.Repeat("Q7w", 10) + `"}`)},
		{Type: events.PartJSON, JSON: json.RawMessage(`{"ok":1}`)},
	}
	tk, rec := sanPartsKit(t, parts, interceptors.RedactAPIKeys(), interceptors.SanitizeMaxBytes(0))
	res := evRun(t, tk, "s", toolkit.Call{ID: "c", Name: "parts", Args: []byte(`{}`)})[0]
	evCheckDeltas(t, rec, res)
	sanNoKey(t, rec, res, key)
	sanNoKey(t, rec, res, "Q7wQ7wQ7w")
	if len(res.Content) != len(parts) {
		t.Fatalf("%d parts, want %d: %v", len(res.Content), len(parts), res.Content)
	}
	for i, p := range res.Content {
		if p.Type != events.PartJSON {
			t.Errorf("part %d is %s, want json", i, p.Type)
		}
	}
	for _, i := range []int{0, 1} {
		if !strings.Contains(string(res.Content[i].JSON), "not valid JSON") {
			t.Errorf("part %d: %s, want the marker", i, res.Content[i].JSON)
		}
	}
	if got := string(res.Content[2].JSON); !strings.HasPrefix(got, "[[[") || !strings.Contains(got, `{"token":"[redacted API key]"}`) {
		t.Errorf("deep part: %.100s...", got)
	}
	if got := string(res.Content[3].JSON); got != `{"escaped":"[redacted API key]"}` {
		t.Errorf("escaped key: %s", got)
	}
	if got := string(res.Content[4].JSON); got != `{"ok":1}` {
		t.Errorf("clean part changed: %s", got)
	}
	if res.Meta[interceptors.SanitizeMetaUninspected] != int64(2) || res.Meta[interceptors.SanitizeMetaRedactions] != int64(2) {
		t.Errorf("meta %v, want 2 uninspected and 2 redactions", res.Meta)
	}
}

// Binary parts of a textual media type are text to redaction (JSON ones as
// JSON, failing closed); images are left alone.
func TestSanitizeRedactsTextualBinary(t *testing.T) {
	key := "ghp_" + strings.Repeat("a1B2", 9)
	png := append([]byte("\x89PNG\r\n\x1a\n"), key...)
	parts := []events.Part{
		events.Binary("text/plain; charset=utf-8", []byte("log: token "+key+"\n")),
		events.Binary("application/vnd.api+json", []byte(`{"t":"`+key+`"}`)),
		events.Binary("application/json", []byte(`{"t":"`+key+`"`)), // cut short
		events.Binary("image/png", png),
	}
	tk, rec := sanPartsKit(t, parts, interceptors.RedactAPIKeys(), interceptors.SanitizeMaxBytes(0))
	res := evRun(t, tk, "s", toolkit.Call{ID: "c", Name: "parts", Args: []byte(`{}`)})[0]
	evCheckDeltas(t, rec, res)
	c := res.Content
	if len(c) != 4 || string(c[0].Data) != "log: token [redacted API key]\n" || c[0].MediaType != "text/plain; charset=utf-8" ||
		string(c[1].Data) != `{"t":"[redacted API key]"}` || c[2].Type != events.PartText || !strings.Contains(c[2].Text, "not valid JSON") ||
		!bytes.Equal(c[3].Data, png) {
		t.Fatalf("got %v", c)
	}
	if res.Meta[interceptors.SanitizeMetaUninspected] != int64(1) || res.Meta[interceptors.SanitizeMetaRedactions] != int64(2) {
		t.Errorf("meta %v", res.Meta)
	}
}

// A key at the end of a 8 MiB JSON string is found.
func TestSanitizeHugeJSONString(t *testing.T) {
	key := "AKIA" + strings.Repeat("Z", 16)
	big := strings.Repeat("lorem ipsum ", 700_000)
	raw, _ := json.Marshal(map[string]string{"log": big + key})
	tk, rec := sanPartsKit(t, []events.Part{{Type: events.PartJSON, JSON: raw}}, interceptors.RedactAPIKeys(), interceptors.SanitizeMaxBytes(0))
	res := evRun(t, tk, "s", toolkit.Call{ID: "c", Name: "parts", Args: []byte(`{}`)})[0]
	want, _ := json.Marshal(map[string]string{"log": big + "[redacted API key]"})
	if !bytes.Equal(res.Content[0].JSON, want) {
		t.Fatalf("got %d bytes ending %q", len(res.Content[0].JSON), res.Content[0].JSON[len(res.Content[0].JSON)-40:])
	}
	sanNoKey(t, rec, res, key)
}

// The pass over the whole result skips only parts that are exactly one
// filtered delta: a large result an inner interceptor hands over, and a
// large text whose key is split across two large deltas, are redacted.
func TestSanitizeWholeResultPassAfterSkips(t *testing.T) {
	key := "xoxb-" + strings.Repeat("9", 20)
	pad := strings.Repeat("lorem ipsum dolor ", 4000) // 72 KB
	inner := toolkit.Interceptor{Name: "inner", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		out := next(ctx, inv)
		if inv.Call.ID == "replaced" {
			return toolkit.Success(events.Text(pad + key))
		}
		return out
	}}
	tk, rec := evKit(t, interceptors.Sanitize(interceptors.RedactAPIKeys(), interceptors.SanitizeMaxBytes(0)), inner)
	text := pad + key + " " + pad
	res := evRun(t, tk, "s",
		evCall("replaced", "echo", evIn{Text: "short"}),
		evCall("split", "echo", evIn{Text: text, Parts: 2}), // the key straddles the two deltas
		evCall("whole", "echo", evIn{Text: text}),
	)
	if got := res[0].Text(); got != pad+"[redacted API key]" {
		t.Errorf("replaced: ...%q", got[len(got)-40:])
	}
	for _, r := range res[1:] {
		if got := r.Text(); got != pad+"[redacted API key] "+pad {
			t.Errorf("%s: not redacted", r.Call.ID)
		}
		evCheckDeltas(t, rec, r)
	}
	sanNoKey(t, rec, res[0], key)
	sanNoKey(t, rec, res[2], key)
}
