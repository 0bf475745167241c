package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// TypeBatchEnd is the session-level event a toolkit sends when a batch of
// calls is over (toolkit.WithBatchEndEvents): every call of the batch has its
// final result, and its Data is a [BatchEnd]. It comes after the result
// events of the batch's calls on every observer.
const TypeBatchEnd Type = "batch_end"

// BatchEnd is the Data of a batch_end event: the batch, each call's final
// state in call order, and whether the agent loop must stop after it. The
// calls' content is in their own result events (and deltas), not here.
type BatchEnd struct {
	// Batch is the batch's id (toolkit.Batch.ID).
	Batch string `json:"batch"`
	// Calls are the batch's calls in call order.
	Calls []BatchCall `json:"calls"`
	// CallsOmitted counts the calls left out at the end of Calls to fit
	// one message ([Fit]); their result events have them.
	CallsOmitted int `json:"calls_omitted,omitempty"`
	// ErrorsOmitted says that the calls' Error texts were left out to fit
	// one message; their result events have them.
	ErrorsOmitted bool `json:"errors_omitted,omitempty"`
	// Stop is set when the agent loop must stop after this batch.
	Stop *BatchStop `json:"stop,omitempty"`
	// DurationMS is the time from the batch's start to its end.
	DurationMS float64 `json:"duration_ms"`
}

// BatchCall is one call of a batch_end event.
type BatchCall struct {
	Call  string `json:"call"`
	Tool  string `json:"tool"`
	State State  `json:"state"`
	// Error is the short description of a failure, as in the result.
	Error string `json:"error,omitempty"`
}

// BatchStop says why the agent loop must stop after a batch
// (toolkit.Stop): "return_direct" (the results go to the user as the final
// answer), "call_limit", or a reason of the application's own.
type BatchStop struct {
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
	Call   string `json:"call,omitempty"`
}

// AppendBatchEnd appends the JSON of b, the Data of a batch_end event:
// byte for byte what json.Marshal writes, without reflection.
func AppendBatchEnd(dst []byte, b *BatchEnd) []byte {
	dst = append(dst, `{"batch":`...)
	dst = appendString(dst, b.Batch)
	dst = append(dst, `,"calls":`...)
	if b.Calls == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range b.Calls {
			c := &b.Calls[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"call":`...)
			dst = appendString(dst, c.Call)
			dst = append(dst, `,"tool":`...)
			dst = appendString(dst, c.Tool)
			dst = append(dst, `,"state":`...)
			dst = appendString(dst, string(c.State))
			if c.Error != "" {
				dst = append(dst, `,"error":`...)
				dst = appendString(dst, c.Error)
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if b.CallsOmitted != 0 {
		dst = append(dst, `,"calls_omitted":`...)
		dst = strconv.AppendInt(dst, int64(b.CallsOmitted), 10)
	}
	if b.ErrorsOmitted {
		dst = append(dst, `,"errors_omitted":true`...)
	}
	if s := b.Stop; s != nil {
		dst = append(dst, `,"stop":{"reason":`...)
		dst = appendString(dst, s.Reason)
		if s.Detail != "" {
			dst = append(dst, `,"detail":`...)
			dst = appendString(dst, s.Detail)
		}
		if s.Call != "" {
			dst = append(dst, `,"call":`...)
			dst = appendString(dst, s.Call)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `,"duration_ms":`...)
	dst = appendFloat(dst, b.DurationMS)
	return append(dst, '}')
}

// DecodeBatchEnd reads the body of a batch_end event (its Data) and checks
// it: a batch id, each call with an id and a final state, a stop with a
// reason. Errors wrap [ErrInvalidEvent].
func DecodeBatchEnd(ev *Event) (*BatchEnd, error) {
	if ev.Type != TypeBatchEnd {
		return nil, fmt.Errorf("%w: a %q event is not a %q event", ErrInvalidEvent, ev.Type, TypeBatchEnd)
	}
	if ev.Call != "" {
		return nil, fmt.Errorf("%w: a %q event is session-level but has call %q", ErrInvalidEvent, TypeBatchEnd, ev.Call)
	}
	b := new(BatchEnd)
	if err := json.Unmarshal(ev.Data, b); err != nil {
		return nil, fmt.Errorf("%w: %s data: %v", ErrInvalidEvent, TypeBatchEnd, err)
	}
	if err := b.check(); err != nil {
		return nil, fmt.Errorf("%w: %s data: %v", ErrInvalidEvent, TypeBatchEnd, err)
	}
	return b, nil
}

func (b *BatchEnd) check() error {
	switch {
	case b.Batch == "":
		return errors.New("empty batch id")
	case b.CallsOmitted < 0:
		return fmt.Errorf("calls_omitted %d", b.CallsOmitted)
	case b.Stop != nil && b.Stop.Reason == "":
		return errors.New("stop without a reason")
	}
	for i, c := range b.Calls {
		switch c.State {
		case StateSuccess, StateError, StateDenied, StateInterrupted, StateTimeout:
		default:
			return fmt.Errorf("calls[%d]: state %q is not a final state", i, c.State)
		}
		if c.Call == "" {
			return fmt.Errorf("calls[%d]: empty call id", i)
		}
	}
	return nil
}

// fitBatchEnd makes a batch_end event fit: the calls' errors go first
// (ErrorsOmitted), then calls from the end (CallsOmitted). Both are in the
// calls' own result events, so the cut is lossy only for this event.
func fitBatchEnd(probe Event, max int) ([]Event, bool, error) {
	b, err := DecodeBatchEnd(&probe)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrTooLarge, err)
	}
	fits := func(b *BatchEnd) bool {
		ev := probe
		ev.Data = AppendBatchEnd(nil, b)
		return len(AppendJSON(nil, &ev)) <= max
	}
	cut := *b
	cut.Calls = make([]BatchCall, len(b.Calls))
	for i, c := range b.Calls {
		c.Error = ""
		cut.Calls[i] = c
	}
	cut.ErrorsOmitted = cut.ErrorsOmitted || len(b.Calls) > 0
	all := cut.Calls
	keep := func(n int) *BatchEnd {
		cut.Calls, cut.CallsOmitted = all[:n], b.CallsOmitted+len(all)-n
		return &cut
	}
	if !fits(keep(len(all))) {
		// The most calls that fit: fits is monotone in n.
		lo, hi := 0, len(all) // fits(lo) unknown until checked; fits(hi) false
		if !fits(keep(0)) {
			return nil, false, fmt.Errorf("%w: a %q event leaves no room for its calls in %d bytes", ErrTooLarge, probe.Type, max)
		}
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			if fits(keep(mid)) {
				lo = mid
			} else {
				hi = mid
			}
		}
		keep(lo)
	}
	ev := probe
	ev.Seq = math.MaxUint64
	ev.Data = AppendBatchEnd(nil, &cut)
	return []Event{ev}, true, nil
}
