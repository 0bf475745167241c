package toolkit

// A StartOption changes how one batch starts ([Session.Start],
// [Session.Run]).
type StartOption func(*Batch)

// WithResult gives call index of the batch its outcome without running
// it, as [BatchPlan.Decide] would, but before any batch hook sees the
// batch: hooks find it decided ([BatchPlan.Decided]), so a batch approval
// does not ask a person about it. No interceptor and no handler sees the
// call; its events are a start, the outcome's content as deltas and the
// result, as for any other call. Use [Failure] for a refusal the model
// reads: an agent loop refuses a call the model's reply was cut in this
// way. An index outside the batch is ignored, and a malformed call (a bad
// or duplicate id) keeps its own failure. A later hook may still decide the
// call otherwise.
func WithResult(index int, out Result) StartOption {
	return func(b *Batch) {
		if index >= 0 && index < len(b.calls) {
			b.calls[index].decide(out)
		}
	}
}
