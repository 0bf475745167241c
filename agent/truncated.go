package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// ErrTruncatedCall is the cause (errors.Is on Result.Err) of the failure of
// a call the model was still writing when its reply reached the output
// token limit: the call does not run.
var ErrTruncatedCall = errors.New("the call was not run: the reply reached the output token limit")

// truncation is the call of a reply cut at the token limit (FinishLength)
// that the model was writing when it was cut: the reply's last call, when
// its arguments are blank or not whole JSON. Running it would run
// arguments the model never finished (or none: a tool whose parameters are
// all optional would run with its defaults), and the toolkit's answer
// ("not valid JSON") would not tell the model why, so it would likely
// write the same call again and be cut again. The call gets an error
// result that says so instead, from the toolkit like any other result
// (events included): the batch starts with it decided
// (toolkit.WithResult), so batch hooks (a batch approval) do not ask
// about it either.
type truncation struct {
	index int
	tool  string
	bytes int
}

// truncated returns the call reply was cut in, or nil. It looks at the
// arguments as the adapter gave them (fixCalls has not made blank ones {}).
func truncated(reply *Reply) *truncation {
	if reply.Finish != FinishLength || len(reply.Calls) == 0 {
		return nil
	}
	i := len(reply.Calls) - 1
	args := bytes.TrimSpace(reply.Calls[i].Args)
	if len(args) > 0 && json.Valid(args) {
		return nil // whole: the cut came after it
	}
	return &truncation{index: i, tool: reply.Calls[i].Name, bytes: len(args)}
}

// outcome is the call's result.
func (t *truncation) outcome() toolkit.StartOption {
	return toolkit.WithResult(t.index, toolkit.Failure(events.StateError, t.err()))
}

func (t *truncation) err() error {
	if t.bytes == 0 {
		return fmt.Errorf("%w before its arguments were written. Call %s again, writing less before the call", ErrTruncatedCall, t.tool)
	}
	return fmt.Errorf("%w while its arguments were being written (%d bytes came, incomplete). Call %s again with shorter arguments, for example by splitting large content over several calls",
		ErrTruncatedCall, t.bytes, t.tool)
}
