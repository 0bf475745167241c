package interceptors_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// TestSanitizeRedactionBreaksOutputSchema: a tool with an output schema
// returns an e-mail address in a field its schema binds (pattern); Sanitize
// redacts it as it streams, so the engine's check finds a value that no
// longer conforms and the call fails. The error must say that the
// redaction is why and that the result is withheld, not that the tool
// returned a bad result (it did not), and must name the field, not the
// secret; the deltas add up to it. Before, the model read "tool "contact"
// returned a result that does not match its output schema: - email: must
// match the pattern ...", blaming a tool that worked.
func TestSanitizeRedactionBreaksOutputSchema(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := icKit(t, []toolkit.Option{toolkit.WithInlineObserver(rec)}, interceptors.Sanitize(interceptors.RedactEmails()))
	tool, err := toolkit.NewRawTool(toolkit.Spec{Name: "contact", Description: "A contact.",
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"email":{"type":"string","pattern":"^[^@\\s]+@[^@\\s]+$"},"note":{"type":"string"}}}`)},
		json.RawMessage(`{"type":"object","properties":{"note":{"type":"boolean"}}}`),
		func(ctx context.Context, args json.RawMessage) ([]events.Part, error) {
			out := map[string]string{"email": "ana.secret@example.com"}
			if strings.Contains(string(args), "true") { // the address in a field nothing binds
				out = map[string]string{"email": "x@y", "note": "write to ana.secret@example.com"}
			}
			p, err := events.JSON(out)
			return []events.Part{p}, err
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.Add(tool); err != nil {
		t.Fatal(err)
	}
	res := evRun(t, tk, "s", toolkit.Call{ID: "c1", Name: "contact", Args: json.RawMessage(`{}`)},
		toolkit.Call{ID: "c2", Name: "contact", Args: json.RawMessage(`{"note":true}`)})
	r := res[0]
	evCheckDeltas(t, rec, r)
	text := r.Text()
	if r.State != events.StateError || !isErr[*toolkit.OutputError](r.Err) || strings.Contains(text, "ana.secret") ||
		!strings.Contains(text, "withheld") || !strings.Contains(text, "redact") || !strings.Contains(text, "at email") ||
		strings.Contains(text, `tool "contact" returned a result that does not match`) {
		t.Errorf("state %s, err %v, text %q", r.State, r.Err, text)
	}
	t.Logf("the model reads: %s", text)
	if got := r.Meta[interceptors.SanitizeMetaRedactions]; got != int64(1) {
		t.Errorf("meta redactions = %v, want 1", got)
	}
	// A redaction the schema does not mind: the redacted result, a success.
	r = res[1]
	evCheckDeltas(t, rec, r)
	if r.State != events.StateSuccess || r.Text() != `{"email":"x@y","note":"write to [redacted email]"}` {
		t.Errorf("c2: state %s, text %q", r.State, r.Text())
	}
}
