package interceptors_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// TestBatchApprovalSeesPreparedArgs: the batch hook decides on the
// arguments the interceptor and the handler see (prepared: unwrapped,
// presets, defaults, integers), in every shape the model may send them,
// and so asks once for the batch about a call the interceptor would ask
// about. It decided on the model's bytes: a double-encoded call, or a rule
// on a preset, found nothing to ask about there, and the call was asked
// about on its own after all. (The tool's own check, which the same
// decision consults, got the model's bytes there too.)
func TestBatchApprovalSeesPreparedArgs(t *testing.T) {
	for _, shape := range argShapes {
		t.Run(shape.name, func(t *testing.T) {
			perms := interceptors.NewPermissions(interceptors.WithMode(interceptors.AllowAll), interceptors.WithRules(interceptors.Rule{
				Tool: "read_file", Decision: interceptors.Ask, Reason: "ops reads /etc",
				When: func(a map[string]any) bool {
					return a["path"] == "/etc/passwd" && a["owner"] == "ops" && a["mode"] == "read" && a["limit"] == float64(100)
				},
			}))
			tk, _ := shapesKit(t, perms.Interceptor())
			tk.Use(perms.BatchApproval())
			s := testutil.Session(t, tk, "s")
			b := s.Start(context.Background(), []toolkit.Call{testutil.Call("c", "read_file", shape.args)})
			var req interceptors.ApprovalRequest
			for r := range b.Results() {
				if r.Final() {
					continue
				}
				p := perms.Pending("s")
				if len(p) != 1 {
					t.Fatalf("pending %+v", p)
				}
				req = p[0]
				if err := perms.Approve("s", req.CallID); err != nil {
					t.Fatal(err)
				}
			}
			rs := b.Wait()
			if rs[0].State != events.StateSuccess {
				t.Fatalf("%s %q", rs[0].State, rs[0].Text())
			}
			if req.CallID != b.ID() || len(req.Calls) != 1 {
				t.Fatalf("asked by call %q (batch %q), want once for the batch", req.CallID, b.ID())
			}
			var got readIn
			if err := json.Unmarshal(req.Calls[0].Args, &got); err != nil || got != wantArgs {
				t.Errorf("the batch's request shows %s, want the prepared %+v", req.Calls[0].Args, wantArgs)
			}
		})
	}
}
