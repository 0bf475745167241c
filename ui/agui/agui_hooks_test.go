//go:build toolstream_testhooks

package agui_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/ui/agui"
	"github.com/toolstream/toolstream/ui/internal/thread"
)

// A resume whose second entry finds its call no longer waiting (its
// approval expired just then; here it is decided elsewhere in the window):
// the first answer is given and the run goes on in this run, which opens
// with a CUSTOM toolstream.answers event saying which answers took effect
// and which did not. The request used to fail with 409 after the first
// answer was given, and the run went on unseen.
func TestResumePartlyGiven(t *testing.T) {
	a, url := serve(t)
	first := run(t, url, input("t14", "r1", user("u1", "two")))
	if first[len(first)-1]["outcome"].(map[string]any)["type"] != "interrupt" {
		t.Fatalf("not paused:\n%s", dump(first))
	}
	calls := a.WaitPaused(t, "t14", 2)
	a.RejectInTheWindow(t, "t14", 1, calls[1])
	in := input("t14", "r2", user("u1", "two"))
	in["resume"] = []any{
		map[string]any{"interruptId": calls[0], "status": "resolved", "payload": map[string]any{"approved": true}},
		map[string]any{"interruptId": calls[1], "status": "resolved", "payload": map[string]any{"approved": true}},
	}
	second := run(t, url, in)
	custom := second[2]
	b, _ := json.Marshal(custom["value"])
	var report thread.AnswersReport
	_ = json.Unmarshal(b, &report)
	if custom["type"] != "CUSTOM" || custom["name"] != agui.CustomAnswers || len(report.Given) != 1 || report.Given[0] != (thread.AnswerOutcome{Call: calls[0], Approved: true}) ||
		len(report.Refused) != 1 || report.Refused[0].Call != calls[1] || !strings.Contains(report.Refused[0].Error, "no call waits for a decision") {
		t.Errorf("the run opens with %v", custom)
	}
	res := results(second)
	if res[calls[0]] != "asked" || !strings.Contains(res[calls[1]], "decided elsewhere") {
		t.Errorf("results %v", res)
	}
	if text(second) != "Done." || second[len(second)-1]["type"] != "RUN_FINISHED" {
		t.Errorf("the run:\n%s", dump(second))
	}
}
