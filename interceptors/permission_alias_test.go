package interceptors_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// TestPermissionRulesFollowTheToolThatRuns: a call under another name that
// runs a registered tool (a ToolResolver's renamed tool, an Unknown
// interceptor's alias) is judged by the rules, and covered by the grants,
// of the tool that runs. The model chooses the name it calls; a deny rule
// on delete_files must not be stepped around by calling "rm".
func TestPermissionRulesFollowTheToolThatRuns(t *testing.T) {
	var ran icCounter
	del := toolkit.MustTool(toolkit.Spec{Name: "delete_files"}, func(ctx context.Context, in struct {
		Path string `json:"path"`
	}) (string, error) {
		ran.inc()
		return "deleted " + in.Path, nil
	})
	resolver := toolkit.WithToolResolver(func(_ context.Context, _ *toolkit.Session, c toolkit.Call) (*toolkit.Tool, error) {
		if c.Name == "rm" {
			return del, nil
		}
		return nil, nil
	})
	alias := toolkit.Interceptor{Name: "aliases", Unknown: true,
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
			if inv.Unknown() && inv.Call.Name == "del" {
				inv.Tool = del
			}
			return next(ctx, inv)
		}}
	deny := interceptors.Rule{Tool: "delete_files", Decision: interceptors.Deny, Reason: "deleting is not allowed here"}
	perms := interceptors.NewPermissions(interceptors.WithMode(interceptors.AllowAll), interceptors.WithRules(deny))
	tk := icKit(t, []toolkit.Option{resolver}, alias, perms.Interceptor())
	tk.Add(del)
	s, _ := tk.Session("deny")
	for i, name := range []string{"delete_files", "rm", "del"} {
		r := icRun(t, s, toolkit.Call{ID: string(rune('a' + i)), Name: name, Args: json.RawMessage(`{"path":"x"}`)})
		if r.State != toolkit.StateDenied || !strings.Contains(r.Text(), "deleting is not allowed here") {
			t.Errorf("call of %q running delete_files: %s %q, want denied by the rule on delete_files", name, r.State, r.Text())
		}
	}
	if n := ran.get(); n != 0 {
		t.Errorf("delete_files ran %d times", n)
	}

	// Asked under an alias, always allowed: the grant is for the tool that
	// ran, whatever name the next call spells it with.
	asker := interceptors.NewPermissions(interceptors.WithMode(interceptors.AskAll),
		interceptors.WithApprovalTimeout(time.Second)) // a call the grant misses asks, and nobody answers
	tk2 := icKit(t, []toolkit.Option{resolver}, alias, asker.Interceptor())
	tk2.Add(del)
	s2, _ := tk2.Session("grant")
	b := s2.Start(context.Background(), []toolkit.Call{{ID: "g1", Name: "rm", Args: json.RawMessage(`{"path":"x"}`)}})
	var req interceptors.ApprovalRequest
	for r := range b.Results() {
		if !r.Final() {
			p := asker.Pending("grant")
			if len(p) != 1 {
				t.Fatalf("pending: %+v", p)
			}
			req = p[0]
			if err := asker.Approve("grant", "g1", interceptors.AlwaysAllow()); err != nil {
				t.Fatal(err)
			}
		}
	}
	b.Wait()
	if req.Tool != "delete_files" {
		t.Errorf("the request names tool %q; want delete_files, the tool that runs", req.Tool)
	}
	for i, name := range []string{"delete_files", "del"} {
		r := icRun(t, s2, toolkit.Call{ID: "g" + string(rune('2'+i)), Name: name, Args: json.RawMessage(`{"path":"y"}`)})
		if r.State != toolkit.StateSuccess {
			t.Errorf("call of %q after always allowing delete_files (asked as rm): %s %q", name, r.State, r.Text())
		}
	}
}
