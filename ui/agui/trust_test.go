package agui_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/ui/internal/uitest"
)

// TestCrossSiteAnswerRefused (issue 27, item 4): a page on another site
// can make the browser POST a body it wrote with a "simple" content type
// (text/plain, a form) and no preflight: such a request, carrying a
// resume entry that approves a call the thread waits for, must be refused
// with nothing decided; so must anything from an origin that is not the
// server's own. The page's own origin, with JSON, still answers.
func TestCrossSiteAnswerRefused(t *testing.T) {
	a, url := serve(t)
	first := run(t, url, input("x1", "r1", user("u1", "note")))
	if ints := first[len(first)-1]["outcome"].(map[string]any)["interrupts"].([]any); len(ints) != 1 || ints[0].(map[string]any)["id"] != "n1_1" {
		t.Fatalf("the run does not wait for n1_1:\n%s", dump(first))
	}
	resume := input("x1", "r2", user("u1", "note"))
	resume["resume"] = []any{map[string]any{"interruptId": "n1_1", "status": "resolved", "payload": map[string]any{"approved": true}}}
	body, _ := json.Marshal(resume)
	for _, c := range uitest.CrossSiteCases() {
		t.Run(c.Name, func(t *testing.T) {
			status, msg := uitest.Send(t, http.MethodPost, url, c, body)
			if status != c.Status {
				t.Fatalf("status %d (%.300s), want %d", status, msg, c.Status)
			}
			for _, s := range c.Says {
				if !strings.Contains(msg, s) {
					t.Errorf("the refusal %q does not say %q", msg, s)
				}
			}
			a.StillWaits(t, "x1", "n1_1")
		})
	}

	// The server's own page (Sec-Fetch-Site: same-origin, JSON) answers.
	status, msg := uitest.Send(t, http.MethodPost, url, uitest.Request{ContentType: "application/json", Origin: url, Site: "same-origin"}, body)
	if status != http.StatusOK || !strings.Contains(msg, `saved: a`) {
		t.Fatalf("the same-origin answer: %d\n%s", status, msg)
	}
}
