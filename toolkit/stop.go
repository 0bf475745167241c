package toolkit

// StopReason says why the agent loop must stop after a batch.
type StopReason string

// Reasons to stop the agent loop after a batch.
const (
	// StopReturnDirect: every call of the batch succeeded on a tool with
	// Spec.ReturnDirect, each with something to show (not only blank
	// text); its results go straight to the user as the final answer, not
	// back to the model.
	StopReturnDirect StopReason = "return_direct"
	// StopCallLimit: a call limit that ends the run was reached
	// (interceptors.CallLimits with EndRun); Detail says which.
	StopCallLimit StopReason = "call_limit"
)

// Stop tells the agent loop to stop after a batch instead of handing its
// results back to the model, and why. It is the one place where every
// reason to end a loop from inside the toolkit is reported: a return-direct
// batch, a call limit that ends the run, or a reason of an interceptor or
// batch hook's own.
type Stop struct {
	Reason StopReason `json:"reason"`
	// Detail is for the user: what ended the run (a limit's message). It
	// is empty for StopReturnDirect, whose answer is the batch's results.
	Detail string `json:"detail,omitempty"`
	// Call is the id of the call that asked to stop, if one did.
	Call string `json:"call,omitempty"`
}

// Stop reports whether the agent loop must stop after this batch, and why.
// It is final once the batch is done (after Wait); before that it reports
// what interceptors and batch hooks asked for so far. The first request to
// stop wins; a batch whose calls all succeeded on return-direct tools
// stops with StopReturnDirect unless something else asked first.
func (b *Batch) Stop() (Stop, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stop == nil {
		return Stop{}, false
	}
	return *b.stop, true
}

// setStop records a request to stop the loop after the batch; the first
// one stays.
func (b *Batch) setStop(s Stop) {
	if s.Reason == "" {
		return
	}
	b.mu.Lock()
	if b.stop == nil {
		b.stop = &s
	}
	b.mu.Unlock()
}

// decideStop, once every call is final, stops a batch whose calls all
// succeeded on return-direct tools.
func (b *Batch) decideStop() {
	for i := range b.calls {
		if !b.calls[i].direct {
			return
		}
	}
	if len(b.calls) > 0 {
		b.setStop(Stop{Reason: StopReturnDirect})
	}
}

// StopLoop asks the agent loop to stop after this call's batch (see
// [Batch.Stop]): for example a call limit that ends the run. The call
// itself ends with the outcome its interceptors return, and the batch's
// other calls run as usual. The first request of a batch wins. Once the
// call's result is final (an interceptor left behind at the grace period)
// it does nothing.
func (inv *Invocation) StopLoop(reason StopReason, detail string) {
	if !inv.c.out.final() {
		inv.c.batch.setStop(Stop{Reason: reason, Detail: detail, Call: inv.Call.ID})
	}
}
