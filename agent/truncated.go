package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

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
// (events included), through a batch hook that decides it without running
// it.
type truncation struct {
	index int
	id    string
	tool  string
	bytes int
	used  atomic.Bool // the batch it was meant for has seen it
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

func (t *truncation) err() error {
	if t.bytes == 0 {
		return fmt.Errorf("%w before its arguments were written. Call %s again, writing less before the call", ErrTruncatedCall, t.tool)
	}
	return fmt.Errorf("%w while its arguments were being written (%d bytes came, incomplete). Call %s again with shorter arguments, for example by splitting large content over several calls",
		ErrTruncatedCall, t.bytes, t.tool)
}

type truncationKey struct{}

// truncationHook decides the truncated call of the batch started with the
// truncation in its context. Only the first batch that sees it takes it:
// a run nested in one of the batch's tools has the value in its context too.
var truncationHook = toolkit.BatchHook{
	Name: "agent: truncated call",
	Before: func(ctx context.Context, p *toolkit.BatchPlan) {
		t, _ := ctx.Value(truncationKey{}).(*truncation)
		if t == nil || !t.used.CompareAndSwap(false, true) {
			return
		}
		if t.index < p.Len() && p.Call(t.index).ID == t.id {
			p.Decide(t.index, toolkit.Failure(toolkit.StateError, t.err()))
		}
	},
}

// truncationHooks counts the batches being started with truncationHook, by
// toolkit: the hook is there only while one is (a batch keeps the hooks
// it started with), so that toolkits pay nothing for it the rest of the
// time.
var truncationHooks struct {
	sync.Mutex
	n map[*toolkit.Toolkit]int
}

// startTruncated starts calls as a batch whose call t is decided by
// truncationHook.
func startTruncated(ctx context.Context, sess *toolkit.Session, calls []toolkit.Call, t *truncation) *toolkit.Batch {
	tk := sess.Toolkit()
	h := &truncationHooks
	h.Lock()
	if h.n[tk] == 0 {
		_ = tk.UseBatchHook(truncationHook) // a valid hook: no error
	}
	if h.n == nil {
		h.n = map[*toolkit.Toolkit]int{}
	}
	h.n[tk]++
	h.Unlock()
	defer func() {
		h.Lock()
		if h.n[tk]--; h.n[tk] == 0 {
			delete(h.n, tk)
			tk.RemoveBatchHook(truncationHook.Name)
		}
		h.Unlock()
	}()
	t.id = calls[t.index].ID
	return sess.Start(context.WithValue(ctx, truncationKey{}, t), calls)
}
