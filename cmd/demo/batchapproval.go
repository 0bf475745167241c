package main

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// With -approve-batches, a batch with calls that need approval asks once
// for the whole batch (interceptors' Permissions.BatchApproval): before any of
// its calls runs, every call of the batch shows as waiting, and one
// decision (on the page, the terminal or by the scripted agent) answers
// them all. The request is an ordinary approval event whose call is the
// batch's id and whose arguments are those of the calls asked about, by
// call id: the page shows and edits it like any other.

// batchRequestFor returns the batch approval request that covers the call,
// if one waits.
func batchRequestFor(pending []interceptors.ApprovalRequest, callID string) *interceptors.ApprovalRequest {
	for _, r := range pending {
		for _, c := range r.Calls {
			if c.CallID == callID {
				return &r
			}
		}
	}
	return nil
}

// suspendedInBatch is told about a call of a batch that waits for one
// decision: the first call of the batch shows the request and has it
// answered; the others wait with it.
func (d *approvalDesk) suspendedInBatch(ctx context.Context, session string, c toolkit.Call) error {
	req := batchRequestFor(d.perms.Pending(session), c.ID)
	if req == nil {
		return nil
	}
	d.mu.Lock()
	if d.batches == nil {
		d.batches = map[string]bool{}
	}
	seen := d.batches[req.CallID]
	d.batches[req.CallID] = true
	d.mu.Unlock()
	if seen {
		return nil
	}
	ids := make([]string, len(req.Calls))
	for i, bc := range req.Calls {
		ids[i] = bc.CallID
	}
	d.view.printf("  approval %s (the whole batch; asks about %s: %s) asks: %s\n", req.CallID, strings.Join(ids, ", "), req.Tool, req.Reason)
	return d.answer(ctx, session, *req, " the batch", scriptedBatchDecision(*req))
}

// scriptedBatchDecision approves a batch as scriptedDecision approves a
// call: a note's title is shortened (arguments edited, by call id).
func scriptedBatchDecision(req interceptors.ApprovalRequest) decision {
	edits := map[string]json.RawMessage{}
	for _, c := range req.Calls {
		if d := scriptedDecision(c); d.args != nil {
			edits[c.CallID] = d.args
		}
	}
	if len(edits) == 0 {
		return decision{approve: true, who: "the scripted agent, for the whole batch"}
	}
	args, err := json.Marshal(edits)
	if err != nil {
		return decision{approve: true, who: "the scripted agent, for the whole batch"}
	}
	return decision{approve: true, args: args, who: "the scripted agent, for the whole batch (title edited to demo-summary)"}
}
