package interceptors_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// TestBatchApprovalAsksOnce: a batch with two writes and a read asks once
// for the batch, before anything runs; the request (on NATS) lists the two
// writes; one approval with an edited argument runs them all without
// asking again per call.
func TestBatchApprovalAsksOnce(t *testing.T) {
	f := newPermFixture(t)
	if err := f.tk.Use(f.perms.BatchApproval()); err != nil {
		t.Fatal(err)
	}
	run := f.start("s", permCall("r", "read", `{}`), permCall("w1", "write", `{"path":"a"}`), permCall("w2", "write", `{"path":"b"}`))
	req := f.nextAsk(t)
	if req.CallID != run.ID() || req.Session != "s" || req.Tool != "write" || len(req.Calls) != 2 ||
		req.Calls[0].CallID != "w1" || req.Calls[1].CallID != "w2" || string(req.Calls[1].Args) != `{"path":"b"}` ||
		string(req.Args) != `{"w1":{"path":"a"},"w2":{"path":"b"}}` || !strings.Contains(req.Reason, "2 calls of a batch of 3 need approval") {
		t.Fatalf("request %+v", req)
	}
	if p := f.perms.Pending("s"); len(p) != 1 || p[0].CallID != run.ID() {
		t.Fatalf("pending %+v", p)
	}
	var suspended []string
	for r := range run.Results() {
		if !r.Final() {
			suspended = append(suspended, r.Call.ID)
			if len(suspended) == 3 {
				time.Sleep(300 * time.Millisecond) // longer than write's timeout: the wait must not count
				if w := f.writes(); len(w) != 0 {
					t.Fatalf("wrote %v before the approval", w)
				}
				if err := f.perms.Approve("s", run.ID(), interceptors.WithArgs(json.RawMessage(`{"w2":{"path":"b-edited"}}`))); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if strings.Join(suspended, ",") != "r,w1,w2" {
		t.Fatalf("suspended notices: %v", suspended)
	}
	rs := run.Wait()
	for _, r := range rs {
		if r.State != events.StateSuccess {
			t.Fatalf("%s: %s %q", r.Call.ID, r.State, r.Text())
		}
	}
	if rs[1].Meta["approved"] != true || rs[2].Text() != "wrote b-edited" {
		t.Fatalf("approved writes: %v %q", rs[1].Meta, rs[2].Text())
	}
	w := f.writes()
	slices.Sort(w)
	if strings.Join(w, ",") != "a,b-edited" {
		t.Fatalf("writes %v", w)
	}
	select {
	case extra := <-f.asks:
		t.Fatalf("asked again: %+v", extra)
	default:
	}
	waitStatus(t, f, "approved", "arguments of w2 edited")
}

func waitStatus(t *testing.T, f *permFixture, status, note string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case req := <-f.all:
			if req.Status == status {
				if req.Note != note {
					t.Fatalf("%s with note %q, want %q", status, req.Note, note)
				}
				return
			}
		case <-deadline:
			t.Fatalf("no %s event", status)
		}
	}
}

// TestBatchApprovalRejectAndAlways: a rejection denies the calls asked
// about (the read still runs); an approval with AlwaysAllow lets the next
// batch's writes run without asking.
func TestBatchApprovalRejectAndAlways(t *testing.T) {
	f := newPermFixture(t)
	_ = f.tk.Use(f.perms.BatchApproval())
	run := f.start("s", permCall("r", "read", `{}`), permCall("w1", "write", `{"path":"a"}`))
	req := f.nextAsk(t)
	if err := f.perms.Reject("s", req.CallID, "not today"); err != nil {
		t.Fatal(err)
	}
	rs := run.Wait()
	if rs[0].State != events.StateSuccess || rs[1].State != events.StateDenied || !errors.Is(rs[1].Err, interceptors.ErrRejected) ||
		!strings.Contains(rs[1].Text(), `the user rejected this batch of calls, with this call of "write": not today`) {
		t.Fatalf("results: %s; %s %q", rs[0].State, rs[1].State, rs[1].Text())
	}
	waitStatus(t, f, "rejected", "not today")

	run = f.start("s", permCall("w2", "write", `{"path":"b"}`))
	req = f.nextAsk(t)
	if err := f.perms.Approve("s", req.CallID, interceptors.AlwaysAllow()); err != nil {
		t.Fatal(err)
	}
	if rs := run.Wait(); rs[0].State != events.StateSuccess {
		t.Fatalf("approved: %s %q", rs[0].State, rs[0].Text())
	}
	run = f.start("s", permCall("w3", "write", `{"path":"c"}`), permCall("w4", "write", `{"path":"d"}`))
	for _, r := range run.Wait() {
		if r.State != events.StateSuccess {
			t.Fatalf("after always: %s %s %q", r.Call.ID, r.State, r.Text())
		}
	}
	select {
	case extra := <-f.asks:
		t.Fatalf("asked again after always: %+v", extra)
	default:
	}
}

// TestBatchApprovalExpires: without a decision in time, the calls asked
// about are denied with ErrNoDecision.
func TestBatchApprovalExpires(t *testing.T) {
	f := newPermFixture(t, interceptors.WithApprovalTimeout(50*time.Millisecond))
	_ = f.tk.Use(f.perms.BatchApproval())
	rs := f.start("s", permCall("w1", "write", `{"path":"a"}`), permCall("r", "read", `{}`)).Wait()
	if rs[0].State != events.StateDenied || !errors.Is(rs[0].Err, interceptors.ErrNoDecision) || rs[1].State != events.StateSuccess {
		t.Fatalf("results: %s %v; %s", rs[0].State, rs[0].Err, rs[1].State)
	}
	if w := f.writes(); len(w) != 0 {
		t.Fatalf("wrote %v", w)
	}
}

// TestBatchApprovalSameOrderAsCalls: the batch asks about exactly what the
// interceptor would ask about, in the same order of checks: a tool's own
// check that asks is asked about with its batch (once, not again per call);
// a tool's own deny is not offered for approval and stays denied; a firm
// rule is asked about even when the person allowed the tool for the session;
// a deny rule is not lifted by that grant.
func TestBatchApprovalSameOrderAsCalls(t *testing.T) {
	f := newPermFixture(t, interceptors.WithMode(interceptors.AllowAll), interceptors.WithRules(
		interceptors.Rule{Tool: "write", When: interceptors.ArgMatches("path", regexp.MustCompile(`^/etc/`)), Decision: interceptors.Deny, Reason: "system files"},
		interceptors.Rule{Tool: "write", When: interceptors.ArgMatches("path", regexp.MustCompile(`secret`)), Decision: interceptors.Ask, Firm: true, Reason: "a secret"},
	))
	if err := f.tk.Use(f.perms.BatchApproval()); err != nil {
		t.Fatal(err)
	}
	var ran []string
	var mu sync.Mutex
	guarded := toolkit.MustTool(toolkit.Spec{Name: "guarded", ConcurrencySafe: true,
		CheckPermission: func(_ context.Context, args json.RawMessage) toolkit.Permission {
			switch {
			case strings.Contains(string(args), "never"):
				return toolkit.Permission{Decision: toolkit.PermissionDeny, Reason: "never"}
			case strings.Contains(string(args), "ask"):
				return toolkit.Permission{Decision: toolkit.PermissionAsk, Reason: "the tool asks"}
			}
			return toolkit.Permission{}
		}}, func(_ context.Context, in struct {
		Mode string `json:"mode"`
	}) (string, error) {
		mu.Lock()
		ran = append(ran, in.Mode)
		mu.Unlock()
		return "ok", nil
	})
	if err := f.tk.Add(guarded); err != nil {
		t.Fatal(err)
	}

	run := f.start("s", permCall("g1", "guarded", `{"mode":"ask"}`), permCall("g2", "guarded", `{"mode":"never"}`), permCall("w1", "write", `{"path":"notes"}`))
	req := f.nextAsk(t)
	if req.CallID != run.ID() || len(req.Calls) != 1 || req.Calls[0].CallID != "g1" || req.Calls[0].Reason != "the tool asks" {
		t.Fatalf("the batch asked about %+v, want g1 only, for the tool's own reason", req.Calls)
	}
	if err := f.perms.Approve("s", run.ID(), interceptors.AlwaysAllow()); err != nil {
		t.Fatal(err)
	}
	rs := run.Wait()
	if rs[0].State != events.StateSuccess || rs[1].State != events.StateDenied || rs[2].State != events.StateSuccess {
		t.Fatalf("states %s %s %s (%q)", rs[0].State, rs[1].State, rs[2].State, rs[1].Text())
	}
	if !slices.Equal(ran, []string{"ask"}) {
		t.Fatalf("ran %v", ran)
	}
	select {
	case extra := <-f.asks:
		t.Fatalf("asked again per call: %+v", extra)
	default:
	}

	// write was never granted; guarded was. A grant lifts neither the deny
	// rule nor the firm rule, in a batch as in a call.
	run = f.start("s", permCall("w2", "write", `{"path":"/etc/passwd"}`), permCall("w3", "write", `{"path":"my-secret"}`))
	req = f.nextAsk(t)
	if len(req.Calls) != 1 || req.Calls[0].CallID != "w3" || req.Calls[0].Reason != "a secret" {
		t.Fatalf("the batch asked about %+v, want w3 for its firm rule", req.Calls)
	}
	if err := f.perms.Approve("s", run.ID(), interceptors.AlwaysAllow()); err != nil {
		t.Fatal(err)
	}
	rs = run.Wait()
	if rs[0].State != events.StateDenied || rs[1].State != events.StateSuccess {
		t.Fatalf("states %s (%q) %s", rs[0].State, rs[0].Text(), rs[1].State)
	}
	run = f.start("s", permCall("w4", "write", `{"path":"/etc/hosts"}`), permCall("w5", "write", `{"path":"other-secret"}`))
	req = f.nextAsk(t)
	if len(req.Calls) != 1 || req.Calls[0].CallID != "w5" {
		t.Fatalf("after always: the batch asked about %+v, want w5 (firm) only", req.Calls)
	}
	if err := f.perms.Reject("s", run.ID(), "no"); err != nil {
		t.Fatal(err)
	}
	if rs := run.Wait(); rs[0].State != events.StateDenied || rs[1].State != events.StateDenied {
		t.Fatalf("after always: %s %s", rs[0].State, rs[1].State)
	}
}

// TestAskRuleBeatsToolAllow: an ask rule the application wrote comes before
// the tool's own allow (AgentScope's order): the call asks, with the rule's
// reason; a grant the person adds settles it for the next calls.
func TestAskRuleBeatsToolAllow(t *testing.T) {
	f := newPermFixture(t, interceptors.WithMode(interceptors.AllowAll), interceptors.WithRules(
		interceptors.Rule{Tool: "lenient", Decision: interceptors.Ask, Reason: "the operator wants to see these"},
	))
	lenient := toolkit.MustTool(toolkit.Spec{Name: "lenient", CheckPermission: func(context.Context, json.RawMessage) toolkit.Permission {
		return toolkit.Permission{Decision: toolkit.PermissionAllow}
	}}, func(context.Context, struct{}) (string, error) { return "ran", nil })
	if err := f.tk.Add(lenient); err != nil {
		t.Fatal(err)
	}
	run := f.start("s", permCall("l1", "lenient", `{}`))
	req := f.nextAsk(t)
	if req.CallID != "l1" || req.Reason != "the operator wants to see these" {
		t.Fatalf("request %+v", req)
	}
	if err := f.perms.Approve("s", "l1", interceptors.AlwaysAllow()); err != nil {
		t.Fatal(err)
	}
	if rs := run.Wait(); rs[0].State != events.StateSuccess {
		t.Fatalf("approved: %s %q", rs[0].State, rs[0].Text())
	}
	if rs := f.start("s", permCall("l2", "lenient", `{}`)).Wait(); rs[0].State != events.StateSuccess {
		t.Fatalf("after the grant: %s %q", rs[0].State, rs[0].Text())
	}
	select {
	case extra := <-f.asks:
		t.Fatalf("asked again after the grant: %+v", extra)
	default:
	}
}

// TestBatchApprovalPerCall: approving a batch with ExceptCall denies that
// call with the person's reason and runs the others (Solon's decision per
// call id); an id the request does not ask about is refused and decides
// nothing; a call's own request takes no ExceptCall.
func TestBatchApprovalPerCall(t *testing.T) {
	f := newPermFixture(t)
	_ = f.tk.Use(f.perms.BatchApproval())
	run := f.start("s", permCall("w1", "write", `{"path":"a"}`), permCall("w2", "write", `{"path":"b"}`))
	req := f.nextAsk(t)
	if err := f.perms.Approve("s", req.CallID, interceptors.ExceptCall("w9", "no")); !errors.Is(err, interceptors.ErrNotPending) || !strings.Contains(err.Error(), `"w9" is not a call this request asks about`) {
		t.Fatalf("unknown call id: %v", err)
	}
	if p := f.perms.Pending("s"); len(p) != 1 {
		t.Fatalf("a refused decision settled the request: pending %+v", p)
	}
	if err := f.perms.Approve("s", req.CallID, interceptors.ExceptCall("w2", "not b")); err != nil {
		t.Fatal(err)
	}
	rs := run.Wait()
	if rs[0].State != events.StateSuccess || rs[1].State != events.StateDenied || !errors.Is(rs[1].Err, interceptors.ErrRejected) ||
		!strings.Contains(rs[1].Text(), `approved this batch of calls but not this call of "write": not b`) {
		t.Fatalf("results: %s; %s %q", rs[0].State, rs[1].State, rs[1].Text())
	}
	if w := f.writes(); !slices.Equal(w, []string{"a"}) {
		t.Fatalf("writes %v", w)
	}
	waitStatus(t, f, "approved", "w2 rejected")

	// Without the batch hook, a call's own request.
	g := newPermFixture(t)
	run = g.start("s", permCall("w1", "write", `{"path":"a"}`))
	req = g.nextAsk(t)
	if err := g.perms.Approve("s", req.CallID, interceptors.ExceptCall("w1", "no")); !errors.Is(err, interceptors.ErrNotPending) {
		t.Fatalf("ExceptCall on a call's own request: %v", err)
	}
	if err := g.perms.Reject("s", req.CallID, "done"); err != nil {
		t.Fatal(err)
	}
	run.Wait()
}

// TestBatchApprovalUnchangedArgsNotEdited: arguments a person sends back
// as the request showed them (hidden characters escaped, <, > and & as
// JSON writes them) are the same value, not an edit.
func TestBatchApprovalUnchangedArgsNotEdited(t *testing.T) {
	f := newPermFixture(t)
	if err := f.tk.Use(f.perms.BatchApproval()); err != nil {
		t.Fatal(err)
	}
	run := f.start("s", permCall("w1", "write", `{"path":"a<b>&c\u202ed"}`), permCall("w2", "write", `{"path":"e"}`))
	req := f.nextAsk(t)
	if err := f.perms.Approve("s", run.ID(), interceptors.WithArgs(req.Args)); err != nil {
		t.Fatal(err)
	}
	for _, r := range run.Wait() {
		if r.State != events.StateSuccess {
			t.Fatalf("%s: %s %q", r.Call.ID, r.State, r.Text())
		}
	}
	waitStatus(t, f, "approved", "")
}
