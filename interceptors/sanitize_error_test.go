package interceptors_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// A tool that fails with a secret in its error: the model's "Error: ..."
// line is redacted, and so must be everything else that carries the error
// text out of the process (the result event's error field, an Audit line
// outside Sanitize, the Result's Err), or Sanitize redacts only half of it.
func TestSanitizeRedactsTheErrorToo(t *testing.T) {
	key := "sk-ant-api03-" + strings.Repeat("Zx9", 10)
	buf := &auditBuf{}
	rec := &testutil.Recorder{}
	tk := icKit(t, []toolkit.Option{toolkit.WithInlineObserver(rec)},
		interceptors.Audit(zerolog.New(buf)),
		interceptors.Sanitize(interceptors.RedactAPIKeys()))
	sentinel := errors.New("upstream refused")
	testutil.Add(t, tk, icTool(t, toolkit.Spec{Name: "fetch"}, func(ctx context.Context) (string, error) {
		return "", errors.Join(sentinel, errors.New("the key "+key+" is not valid"))
	}))
	s := testutil.Session(t, tk, "s1")
	res := icRun(t, s, testutil.Call("c1", "fetch", `{}`))
	if res.State != events.StateError {
		t.Fatalf("state %s, want error", res.State)
	}
	if text := events.ContentText(res.Content); strings.Contains(text, key) || !strings.Contains(text, "[redacted API key]") {
		t.Fatalf("the model reads %q", text)
	}
	if res.Err == nil || strings.Contains(res.Err.Error(), key) {
		t.Errorf("Result.Err says %v: the key", res.Err)
	}
	if !errors.Is(res.Err, sentinel) {
		t.Errorf("Result.Err %v no longer matches the tool's cause", res.Err)
	}
	for _, ev := range rec.OfType(events.TypeResult) {
		if strings.Contains(ev.Result.Error, key) {
			t.Errorf("the result event's error field says %q: the key", ev.Result.Error)
		}
	}
	if strings.Contains(buf.String(), key) {
		t.Errorf("the audit line holds the key: %s", buf.String())
	}
}

// A line longer than Sanitize holds back goes out before its end. Without
// a space to cut at, the cut must still fall between characters: a delta
// that ends inside one is not UTF-8, goes on the wire with U+FFFD in place
// of each piece, and the deltas no longer add up to the result for anyone
// who reads them from NATS.
func TestSanitizeLongLineCutBetweenCharacters(t *testing.T) {
	for _, r := range []string{"€", "é", "𝄞"} {
		text := strings.Repeat(r, (70<<10)/len(r)+1)
		parts := []events.Part{events.Text(text[:len(text)/2]), events.Text(text[len(text)/2:])}
		if !utf8.ValidString(parts[0].Text) {
			parts = []events.Part{events.Text(text), events.Text("\n")}
		}
		tk, rec := sanPartsKit(t, parts, interceptors.RedactAPIKeys(), interceptors.SanitizeMaxBytes(0))
		res := icRun(t, testutil.Session(t, tk, "s"), testutil.Call("c1", "parts", `{}`))
		if res.Text() != events.ContentText(parts) {
			t.Fatalf("%s: the result differs from what the tool returned", r)
		}
		var wire []events.Part
		for i, d := range rec.DeltaTexts("c1") {
			if !utf8.ValidString(d) {
				t.Errorf("%s: delta %d (%d bytes) is not UTF-8: it ends with % x", r, i, len(d), d[max(len(d)-4, 0):])
			}
			// What a client reading the events from NATS adds up.
			var p events.Part
			if err := json.Unmarshal(events.AppendJSON(nil, &events.Event{Type: events.TypeDelta, Delta: &events.Part{Type: events.PartText, Text: d}}), &struct {
				Delta *events.Part `json:"delta"`
			}{&p}); err != nil {
				t.Fatal(err)
			}
			wire = events.AppendPart(wire, p)
		}
		if got := events.ContentText(wire); got != res.Text() {
			t.Errorf("%s: the deltas as sent add up to %d bytes with %d U+FFFD, not the %d-byte result", r, len(got), strings.Count(got, "\uFFFD"), len(res.Text()))
		}
	}
}

// A textual media type that mime.ParseMediaType refuses (a parameter
// without a value, a stray semicolon, upper case with a bad parameter) is
// still textual: its parameters are not part of the type. Read as a type
// of its own, "application/json; charset" was not text, so a key in it
// reached the model unredacted.
func TestSanitizeTextualBinaryWithMalformedParameters(t *testing.T) {
	key := "ghp_" + strings.Repeat("a1B2", 9)
	for _, mt := range []string{"application/json; charset", "TEXT/PLAIN; charset=utf-8; x", "text/plain;;", "application/ld+json ; q", "Application / JSON"} {
		body := []byte("log: token " + key + "\n")
		if strings.Contains(mt, "json") {
			body = []byte(`{"t":"` + key + `"}`)
		}
		tk, rec := sanPartsKit(t, []events.Part{events.Binary(mt, body)}, interceptors.RedactAPIKeys(), interceptors.SanitizeMaxBytes(0))
		res := icRun(t, testutil.Session(t, tk, "s"), testutil.Call("c", "parts", `{}`))
		sanNoKey(t, rec, res, key)
	}
}
