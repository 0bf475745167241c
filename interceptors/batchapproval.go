package interceptors

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// BatchApproval returns an interceptor (named "batch-approval") whose
// BeforeBatch asks a person once for a whole batch instead of once per call (Solon AI's HITL
// batch suspension): before any call of a batch runs, the permission rules
// and mode are applied to each call, and if some would ask, the batch waits
// for one decision on all of them. The request is an ordinary approval:
// the same "approval" event type and [ApprovalRequest] (session-level, its
// CallID the batch's id, Calls the calls asked about, Args an object of
// their arguments by call id, prepared as the interceptor and the handler
// see them), listed by Pending, answered with Approve or
// Reject given the batch id, within the approval timeout.
//
//   - Approved: the calls run without being asked again
//     ([toolkit.Invocation.Approved]); AlwaysAllow allows their tools for the
//     rest of the session; WithArgs takes an object of new arguments by call
//     id (the request's Args, edited).
//   - Approved with ExceptCall(id, reason): that call is denied with the
//     reason, the others run (a decision per call, as Solon AI takes them).
//   - Rejected, or no decision in time: the calls asked about are denied
//     with the person's reason; the batch's other calls run.
//
// Calls the rules deny or allow are left to the interceptor, which must be
// installed too (tk.Use(p.Interceptor())): it still denies what the rules
// deny, and asks per call about a tool a ToolResolver supplies only when
// the call's turn comes. Use it with tk.Use(p.BatchApproval()).
func (p *Permissions) BatchApproval() toolkit.Interceptor {
	return toolkit.Interceptor{Name: "batch-approval", BeforeBatch: p.beforeBatch}
}

func (p *Permissions) beforeBatch(ctx context.Context, plan *toolkit.BatchPlan) {
	session := plan.Batch().Session().ID()
	p.restoreGrants(ctx, session, plan)
	var asked []int
	var reqs []ApprovalRequest
	var tools []string
	for i := range plan.Len() {
		t := plan.Tool(i)
		if t == nil || plan.Decided(i) {
			continue // unknown tools and decided calls have nothing to approve
		}
		c := plan.Call(i)
		name := t.Name() // the tool that runs, as the interceptor names it
		// The arguments as the interceptor, the tool's own check and the
		// handler see them: unwrapped, presets and defaults in. Arguments
		// that do not prepare fail when the call starts: nothing to ask.
		args, err := t.PrepareArgs(c.Args)
		if err != nil {
			continue
		}
		d := p.decideFor(ctx, plan, name, args, t.Spec())
		if d.decision != Ask {
			continue
		}
		reason := d.reason
		asked = append(asked, i)
		reqs = append(reqs, ApprovalRequest{Session: session, CallID: c.ID, Tool: name, Args: args, Reason: reason, Status: "pending"})
		if !slices.Contains(tools, name) {
			tools = append(tools, name)
		}
	}
	if len(asked) == 0 {
		return
	}
	batchID := plan.Batch().ID()
	args := make(map[string]json.RawMessage, len(reqs))
	for _, r := range reqs {
		args[r.CallID] = r.Args
		if len(r.Args) == 0 {
			args[r.CallID] = json.RawMessage(`{}`)
		}
	}
	argsJSON, _ := json.Marshal(args) // raw messages the model sent: valid JSON
	key := permKey{session, batchID}
	pd := &permPending{ch: make(chan permVerdict, 1), req: ApprovalRequest{
		Session: session, CallID: batchID, Tool: strings.Join(tools, ", "), Args: argsJSON,
		Reason: batchReason(reqs, plan.Len()), Status: "pending", Expires: time.Now().Add(p.wait), Calls: reqs,
	}.shown()}
	release, ok := p.hold(key, pd)
	if !ok {
		return // a call of the session waits under the batch's id: its calls ask one by one
	}
	defer release()

	plan.Suspend()
	_ = plan.Emit(ApprovalEvent, pd.req)
	timer := time.NewTimer(p.wait)
	defer timer.Stop()
	deny := func(err func(tool string) error) {
		for _, i := range asked {
			plan.Decide(i, toolkit.Failure(events.StateDenied, err(plan.Call(i).Name)))
		}
	}
	announce := func(status, note string) {
		req := pd.req
		req.Status, req.Note, req.Expires = status, visibleText(note), time.Time{}
		_ = plan.Emit(ApprovalEvent, req)
	}
	// alwaysAllow adds an AlwaysAllow's grants to the session: the tools
	// of the calls approved, not of the calls excepted. It says what it
	// added.
	alwaysAllow := func(v permVerdict) string {
		if !v.always {
			return ""
		}
		var allowed []string
		for _, i := range asked {
			if c, name := plan.Call(i), plan.Tool(i).Name(); !hasKey(v.except, c.ID) && !slices.Contains(allowed, name) {
				allowed = append(allowed, name)
			}
		}
		grants := sessionGrantsOf.LoadOrInit(plan, newSessionGrants)
		added := make([]Grant, len(allowed))
		for i, t := range allowed {
			added[i] = Grant{Tool: t}
			grants.add(added[i])
		}
		if len(allowed) == 0 {
			return ""
		}
		return p.keepGrants(ctx, session, added, fmt.Sprintf("allowed for the rest of the session: %s", strings.Join(allowed, ", ")))
	}
	var v permVerdict
	select {
	case v = <-pd.ch:
	case <-timer.C:
		expiryHook()
		if !p.withdraw(key, pd) {
			v = <-pd.ch // decided just in time: the decision stands (see ask)
			break
		}
		announce("expired", fmt.Sprintf("no decision within %v", p.wait))
		deny(func(tool string) error {
			return fmt.Errorf("%w: nobody approved this batch of calls (with this call of %q) within %v, so it did not run. Ask the user before trying again",
				ErrNoDecision, tool, p.wait)
		})
		return
	case <-ctx.Done():
		interruptHook()
		// The batch was cancelled: its calls are interrupted. A decision
		// that took the request first was given (see ask): its AlwaysAllow
		// stands.
		if !p.withdraw(key, pd) {
			v := <-pd.ch
			note := "the batch was interrupted before its calls could run"
			if !v.approve {
				announce("rejected", permJoin(note, v.reason))
			} else {
				announce("approved", permJoin(note, alwaysAllow(v)))
			}
		}
		return
	}
	if !v.approve {
		announce("rejected", v.reason)
		deny(func(tool string) error {
			msg := fmt.Sprintf("the user rejected this batch of calls, with this call of %q", tool)
			if v.reason != "" {
				msg += ": " + v.reason
			}
			return permWrap(ErrRejected, msg+". Do not retry it as it was; follow the user's reason")
		})
		return
	}
	var notes []string
	if v.args != nil {
		notes = append(notes, applyBatchEdits(plan, asked, reqs, v.args)...)
	}
	if n := alwaysAllow(v); n != "" {
		notes = append(notes, n)
	}
	for _, i := range asked {
		c := plan.Call(i)
		reason, rejected := v.except[c.ID]
		if !rejected {
			plan.Approve(i)
			continue
		}
		msg := fmt.Sprintf("the user approved this batch of calls but not this call of %q", c.Name)
		if reason != "" {
			msg += ": " + reason
		}
		plan.Decide(i, toolkit.Failure(events.StateDenied, permWrap(ErrRejected, msg+". Do not retry it as it was; follow the user's reason")))
		notes = append(notes, fmt.Sprintf("%s rejected", c.ID))
	}
	announce("approved", strings.Join(notes, "; "))
}

// batchReason says why a batch waits, for the person.
func batchReason(reqs []ApprovalRequest, n int) string {
	calls := "call"
	if len(reqs) > 1 {
		calls = "calls"
	}
	parts := make([]string, len(reqs))
	for i, r := range reqs {
		parts[i] = fmt.Sprintf("%s (%s): %s", r.Tool, r.CallID, r.Reason)
	}
	return fmt.Sprintf("%d %s of a batch of %d need approval, asked once for the batch: %s", len(reqs), calls, n, strings.Join(parts, "; "))
}

// applyBatchEdits applies edited arguments, an object of call id to new
// arguments (the request's Args, edited), to the calls asked about (reqs,
// in the same order: what the request showed of each); it returns notes
// on what it did and what it could not use.
func applyBatchEdits(plan *toolkit.BatchPlan, asked []int, reqs []ApprovalRequest, raw json.RawMessage) []string {
	var edits map[string]json.RawMessage
	if err := json.Unmarshal(raw, &edits); err != nil {
		return []string{fmt.Sprintf("edited arguments not applied: not an object of arguments by call id: %v", err)}
	}
	var notes []string
	for n, i := range asked {
		c := plan.Call(i)
		a, ok := edits[c.ID]
		if !ok || sameJSONValue(a, reqs[n].Args) || sameJSONValue(a, c.Args) {
			continue // sent back as shown (escapes differ, the value does not)
		}
		plan.Rewrite(i, "", a) // checked against the tool's schema when the call starts
		notes = append(notes, fmt.Sprintf("arguments of %s edited", c.ID))
	}
	return notes
}

// sameJSONValue reports whether a and b are the same JSON value, however
// written (escapes, spacing, key order), as grants compare arguments.
func sameJSONValue(a, b json.RawMessage) bool {
	if string(a) == string(b) {
		return true
	}
	ca, err := canonicalJSON(a)
	if err != nil {
		return false
	}
	cb, err := canonicalJSON(b)
	return err == nil && string(ca) == string(cb)
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}
