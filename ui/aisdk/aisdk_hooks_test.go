//go:build toolstream_testhooks

package aisdk_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/ui/aisdk"
	"github.com/toolstream/toolstream/ui/internal/thread"
)

// A request whose second answer finds its call no longer waiting (its
// approval expired just then; here it is decided elsewhere in the window):
// the first answer is given and the response goes on, opening with a
// data-toolstream-answers part that says which answers took effect and
// which did not. The request used to fail with 409 after the first answer
// was given.
func TestAnswersPartlyGiven(t *testing.T) {
	a, url := serve(t)
	first := post(t, url, chunk{"id": "chat9", "messages": []any{userMsg("u1", "two")}}).all()
	if f := last(first, "finish"); f["finishReason"] != "tool-calls" {
		t.Fatalf("not paused:\n%s", dump(first))
	}
	calls := a.WaitPaused(t, "chat9", 2)
	a.RejectInTheWindow(t, "chat9", 1, calls[1])
	var parts []any
	for _, c := range calls {
		parts = append(parts, chunk{"type": "dynamic-tool", "toolName": "ask", "toolCallId": c, "state": "approval-responded",
			"approval": chunk{"id": c, "approved": true}})
	}
	assistant := chunk{"id": first[0]["messageId"], "role": "assistant", "parts": parts}
	second := post(t, url, chunk{"id": "chat9", "messages": []any{userMsg("u1", "two"), assistant}}).all()
	data := second[1]
	b, _ := json.Marshal(data["data"])
	var report thread.AnswersReport
	_ = json.Unmarshal(b, &report)
	if data["type"] != "data-"+aisdk.DataAnswers || data["id"] == nil || len(report.Given) != 1 || report.Given[0] != (thread.AnswerOutcome{Call: calls[0], Approved: true}) ||
		len(report.Refused) != 1 || report.Refused[0].Call != calls[1] || !strings.Contains(report.Refused[0].Error, "no call waits for a decision") {
		t.Errorf("the response opens with %v", data)
	}
	tl := tools(second)
	if tl[calls[0]] == nil || tl[calls[0]].output != "asked" || tl[calls[1]] == nil || tl[calls[1]].state != "output-denied" {
		t.Errorf("%s %+v, %s %+v\n%s", calls[0], tl[calls[0]], calls[1], tl[calls[1]], dump(second))
	}
	if text(second) != "Done." || last(second, "finish")["finishReason"] != "stop" {
		t.Errorf("the response:\n%s", dump(second))
	}
}
