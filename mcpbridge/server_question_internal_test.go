package mcpbridge

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/interceptors"
)

// TestApprovalQuestionIsBounded: the question an elicitation asks quotes the
// call's arguments up to 4 KiB, whatever their size (megabytes of them made
// a question over the client's frame: TestServerElicitationOfHugeArguments),
// and says how long they were; small arguments are quoted whole.
func TestApprovalQuestionIsBounded(t *testing.T) {
	small := &interceptors.ApprovalRequest{Tool: "store", Args: json.RawMessage(`{"blob":"é"}`), Reason: "it writes"}
	if got, want := approvalQuestion(small), `Allow the tool "store" to run with {"blob":"é"}? (it writes)`; got != want {
		t.Fatalf("question = %q, want %q", got, want)
	}
	args, _ := json.Marshal(map[string]string{"blob": strings.Repeat("é", 3<<20)})
	big := &interceptors.ApprovalRequest{Tool: "store", Args: args, Reason: "it writes"}
	q := approvalQuestion(big)
	if len(q) > 5<<10 || !strings.HasPrefix(q, `Allow the tool "store" to run with {"blob":"éé`) ||
		!strings.HasSuffix(q, "é… (cut: 6291467 bytes in all)? (it writes)") {
		t.Fatalf("question: %d bytes, %.80q ... %q", len(q), q, q[max(0, len(q)-80):])
	}
}
