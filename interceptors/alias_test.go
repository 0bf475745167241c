package interceptors_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"github.com/toolstream/toolstream/events"
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
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
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
		if r.State != events.StateDenied || !strings.Contains(r.Text(), "deleting is not allowed here") {
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
		if r.State != events.StateSuccess {
			t.Errorf("call of %q after always allowing delete_files (asked as rm): %s %q", name, r.State, r.Text())
		}
	}
}

// TestPerToolInterceptorsFollowTheToolThatRuns: the interceptors that
// count, limit or time a tool (RateLimit, LoopGuard, CallLimits, Timeout)
// apply to a call under another name that runs it (here a ToolResolver's
// "rm" for delete_files) as to a call by its own name. They are scoped to
// the tool by its own name, so they wrapped such a call, and then looked
// up the called name and let it through.
func TestPerToolInterceptorsFollowTheToolThatRuns(t *testing.T) {
	del := toolkit.MustTool(toolkit.Spec{Name: "delete_files"}, func(ctx context.Context, in struct {
		Path string `json:"path"`
		Wait bool   `json:"wait,omitempty"`
	}) (string, error) {
		if in.Wait {
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "deleted " + in.Path, nil
	})
	opts := []toolkit.Option{toolkit.WithDefaultTimeout(3 * time.Second), toolkit.WithToolResolver(
		func(_ context.Context, _ *toolkit.Session, c toolkit.Call) (*toolkit.Tool, error) {
			if c.Name == "rm" {
				return del, nil
			}
			return nil, nil
		})}
	args := json.RawMessage(`{"path":"x"}`)
	for _, tc := range []struct {
		name string
		ic   toolkit.Interceptor
		args json.RawMessage
		want func(r toolkit.Result) bool
	}{
		{"RateLimit", interceptors.RateLimit(map[string]rate.Limit{"delete_files": rate.Every(time.Hour)}, 1, interceptors.RateLimitNoWait()), args,
			func(r toolkit.Result) bool { return errors.Is(r.Err, interceptors.ErrRateLimited) }},
		{"LoopGuard", interceptors.LoopGuard(2, 0), args,
			func(r toolkit.Result) bool { return errors.Is(r.Err, interceptors.ErrLoop) }},
		{"CallLimits", interceptors.CallLimits(interceptors.PerSession(1, "delete_files")), args,
			func(r toolkit.Result) bool { return errors.Is(r.Err, interceptors.ErrLimit) }},
		{"Timeout", interceptors.Timeout(0, interceptors.TimeoutFor("delete_files", 20*time.Millisecond)), json.RawMessage(`{"path":"x","wait":true}`),
			func(r toolkit.Result) bool {
				return r.State == events.StateTimeout && !strings.Contains(r.Text(), "after 3s")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk := icKit(t, opts, tc.ic)
			tk.Add(del)
			s, _ := tk.Session("s")
			first := icRun(t, s, toolkit.Call{ID: "1", Name: "delete_files", Args: tc.args})
			second := icRun(t, s, toolkit.Call{ID: "2", Name: "rm", Args: tc.args})
			if !tc.want(second) {
				t.Errorf("%s: the call of rm (delete_files) after delete_files: %s %q", tc.name, second.State, second.Text())
			}
			if tc.name == "Timeout" && !tc.want(first) { // both time out as delete_files does
				t.Errorf("%s: the call of delete_files: %s %q", tc.name, first.State, first.Text())
			}
		})
	}
}

// TestAuditNamesTheToolThatRan: the audit line of a call that ran a tool
// under another name (a ToolResolver's "rm" for delete_files, an Unknown
// alias "del") says which tool ran (ran_tool), not only the called name.
func TestAuditNamesTheToolThatRan(t *testing.T) {
	del := toolkit.MustTool(toolkit.Spec{Name: "delete_files"}, func(ctx context.Context, in struct {
		Path string `json:"path"`
	}) (string, error) {
		return "deleted " + in.Path, nil
	})
	alias := toolkit.Interceptor{Name: "aliases", Unknown: true,
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
			if inv.Unknown() && inv.Call.Name == "del" {
				inv.Tool = del
			}
			return next(ctx, inv)
		}}
	buf := &auditBuf{}
	tk := icKit(t, []toolkit.Option{toolkit.WithToolResolver(func(_ context.Context, _ *toolkit.Session, c toolkit.Call) (*toolkit.Tool, error) {
		if c.Name == "rm" {
			return del, nil
		}
		return nil, nil
	})}, interceptors.Audit(zerolog.New(buf)), alias)
	tk.Add(del)
	s, _ := tk.Session("s")
	for i, name := range []string{"delete_files", "rm", "del"} {
		if r := icRun(t, s, toolkit.Call{ID: string(rune('a' + i)), Name: name, Args: json.RawMessage(`{"path":"x"}`)}); r.State != events.StateSuccess {
			t.Fatalf("%s: %s %q", name, r.State, r.Text())
		}
	}
	lines := buf.lines(t)
	if len(lines) != 3 {
		t.Fatalf("%d audit lines", len(lines))
	}
	for i, want := range []string{"", "delete_files", "delete_files"} {
		got, _ := lines[i]["ran_tool"].(string)
		if got != want {
			t.Errorf("audit line %v: ran_tool %q, want %q", lines[i], got, want)
		}
	}
}
