package interceptors_test

import (
	"context"
	"errors"
	"strings"
	"testing"

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
	if res.State != toolkit.StateError {
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
