package toolkit

import (
	"context"
	"encoding/json"
	"errors"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/toolstream/toolstream/events"
)

// A BatchHook sees whole batches (Solon AI's onActionStart and
// onActionEnd, AgentScope's pre- and post-acting hooks): Before sees a batch
// before any of its calls runs, After sees its results once every call is
// final. Interceptors see one call at a time; a batch hook is where a rule
// about the batch as a whole lives (approve it once, refuse a destructive
// call that comes with others, rewrite calls, summarise).
//
// Hooks run in the order they were added, on the goroutine that drives the
// batch. A toolkit without batch hooks pays nothing for them.
type BatchHook struct {
	// Name identifies the hook: adding another with the same name
	// replaces it in place.
	Name string
	// Before sees the batch before any call runs and may approve, deny,
	// answer or rewrite its calls (see [BatchPlan]), or wait for a
	// person's decision on the whole batch (BatchPlan.Suspend). ctx ends
	// when the batch is cancelled (Batch.Cancel, Toolkit.Close, the
	// caller's context). The calls' deadlines start after Before returns.
	Before func(ctx context.Context, p *BatchPlan)
	// After sees the results in call order once every call is final,
	// before Wait returns and before the batch_end event. It must not
	// change them. ctx carries the batch's values but is not cancelled.
	After func(ctx context.Context, b *Batch, results []Result)
}

// batchHooks is an immutable snapshot of a toolkit's batch hooks.
type batchHooks struct{ list []BatchHook }

// UseBatchHook adds batch hooks after the ones already there. A hook with
// the name of one already added replaces it in place. Batches that already
// started keep the hooks they started with.
func (tk *Toolkit) UseBatchHook(hooks ...BatchHook) error {
	for _, h := range hooks {
		if h.Name == "" || h.Before == nil && h.After == nil {
			return errors.New("toolkit: a batch hook needs a name and a Before or After function")
		}
	}
	tk.icMu.Lock()
	defer tk.icMu.Unlock()
	var list []BatchHook
	if cur := tk.hooks.Load(); cur != nil {
		list = slices.Clone(cur.list)
	}
	for _, h := range hooks {
		if i := slices.IndexFunc(list, func(x BatchHook) bool { return x.Name == h.Name }); i >= 0 {
			list[i] = h
		} else {
			list = append(list, h)
		}
	}
	tk.hooks.Store(&batchHooks{list: list})
	return nil
}

// RemoveBatchHook removes a batch hook; it reports whether there was one.
func (tk *Toolkit) RemoveBatchHook(name string) bool {
	tk.icMu.Lock()
	defer tk.icMu.Unlock()
	cur := tk.hooks.Load()
	if cur == nil {
		return false
	}
	list := slices.DeleteFunc(slices.Clone(cur.list), func(x BatchHook) bool { return x.Name == name })
	if len(list) == len(cur.list) {
		return false
	}
	if len(list) == 0 {
		tk.hooks.Store(nil) // nothing to pay for again
	} else {
		tk.hooks.Store(&batchHooks{list: list})
	}
	return true
}

// WithBatchEndEvents makes the toolkit send a session-level batch_end event
// (events.TypeBatchEnd, its Data an events.BatchEnd) when a batch is over:
// each call's final state in call order and whether the agent loop must
// stop. Observers see it after the batch's result events. Off by default:
// it is one more event per batch.
func WithBatchEndEvents() Option { return func(o *options) { o.batchEnd = true } }

// BatchPlan is a batch as its Before hooks see it, before any call runs.
// Its methods are not safe for use by several goroutines at once, nor after
// Before returns. Indexes are call positions in the batch; an index out of
// range is ignored.
type BatchPlan struct {
	b         *Batch
	suspended bool
}

// Batch returns the batch.
func (p *BatchPlan) Batch() *Batch { return p.b }

// Session returns the batch's session.
func (p *BatchPlan) Session() *Session { return p.b.sess }

// Len returns the number of calls.
func (p *BatchPlan) Len() int { return len(p.b.calls) }

// Call returns call i as it will run (rewrites included).
func (p *BatchPlan) Call(i int) Call {
	if c := p.at(i); c != nil {
		return c.call
	}
	return Call{}
}

// Tool returns the registered tool call i names, or nil when none is
// registered under that name (a ToolResolver or an interceptor may still
// handle it when its turn comes).
func (p *BatchPlan) Tool(i int) *Tool {
	if c := p.at(i); c != nil {
		return c.tool
	}
	return nil
}

func (p *BatchPlan) at(i int) *call {
	if i < 0 || i >= len(p.b.calls) {
		return nil
	}
	return &p.b.calls[i]
}

// Rewrite changes call i before it runs: its tool name (when name is not
// "") and its arguments (when args is not nil). The call keeps its id; its
// arguments are prepared and validated when it starts, like any call's.
func (p *BatchPlan) Rewrite(i int, name string, args json.RawMessage) {
	c := p.at(i)
	if c == nil {
		return
	}
	p.b.mu.Lock() // Batch.Results may be reading the call (suspended notices)
	defer p.b.mu.Unlock()
	if args != nil {
		c.call.Args = args
	}
	if name != "" && name != c.call.Name {
		c.call.Name = name
		c.tool = p.b.tk.reg.Load().byName[name] // nil: unknown
	}
}

// Approve marks call i as approved by a person who saw the whole batch:
// interceptors that would ask a person about the call (interceptors'
// Permissions) let it run without asking again ([Invocation.Approved]).
// Rules that deny it still do.
func (p *BatchPlan) Approve(i int) {
	if c := p.at(i); c != nil {
		c.approved = true
	}
}

// Decide gives call i its outcome without running it: no interceptor and
// no handler sees it, and its events are a start, the outcome's content as
// deltas and the result. Use [Failure] for a refusal the model reads. A
// malformed call (a bad or duplicate id) keeps its own failure.
func (p *BatchPlan) Decide(i int, out Outcome) {
	if c := p.at(i); c != nil {
		if _, malformed := c.preErr.(*callError); malformed {
			return
		}
		if out.State == "" {
			out.State = StateSuccess
		}
		c.preErr = &decided{out: out}
	}
}

// decided is the outcome a batch hook gave a call, kept as its preErr: like
// a call that fails before running, it touches nothing and runs in any
// stage.
type decided struct{ out Outcome }

func (d *decided) Error() string { return "decided by a batch hook: " + d.out.Text() }

// Deny refuses call i without running it: state denied, err the message
// the model reads.
func (p *BatchPlan) Deny(i int, err error) { p.Decide(i, Failure(StateDenied, err)) }

// Decided reports whether call i already has an outcome (Decide, Deny).
func (p *BatchPlan) Decided(i int) bool {
	c := p.at(i)
	if c == nil {
		return false
	}
	_, ok := c.preErr.(*decided)
	return ok
}

// Suspend tells whoever reads [Batch.Results] that the batch now waits for
// something outside the process, typically one person's decision on the
// whole batch: each call not decided yet appears there with
// StateSuspended (its final result follows as usual). It does not wait
// itself: Before waits, with its ctx. Calling it again does nothing.
func (p *BatchPlan) Suspend() {
	if p.suspended {
		return
	}
	p.suspended = true
	for i := range p.b.calls {
		if c := &p.b.calls[i]; c.preErr == nil {
			p.b.notifySuspended(c)
		}
	}
}

// Emit sends a session-level event (see [Session.Emit]), for example an
// approval request for the whole batch.
func (p *BatchPlan) Emit(typ events.Type, data any) error {
	return p.b.sess.emit(typ, data, p.b.trace, nil)
}

// BatchValues is the batch's scratch space, the one interceptors get from
// [Invocation.BatchValues].
func (p *BatchPlan) BatchValues() *sync.Map { return p.b.valueMap() }

// SessionValues is the session's scratch space, the one interceptors get
// from [Invocation.SessionValues].
func (p *BatchPlan) SessionValues() *sync.Map { return p.b.sess.valueMap() }

// StopLoop asks the agent loop to stop after this batch (see [Batch.Stop]).
func (p *BatchPlan) StopLoop(reason StopReason, detail string) {
	p.b.setStop(Stop{Reason: reason, Detail: detail})
}

// Approved reports whether a batch hook approved the call after a person
// saw its whole batch ([BatchPlan.Approve]): an interceptor that would ask
// a person about it need not ask again.
func (inv *Invocation) Approved() bool { return inv.c.approved }

// before runs the Before hooks, on the driver, before the first stage.
func (b *Batch) before() {
	if b.err() != nil {
		return // every call is reported interrupted without running
	}
	ctx, cancel := context.WithCancelCause(b.parent)
	b.hookStop.Store(&cancel)
	if err := b.err(); err != nil { // interrupted before hookStop was there
		cancel(err)
	}
	p := &BatchPlan{b: b}
	for i := range b.hooks.list {
		if h := &b.hooks.list[i]; h.Before != nil && ctx.Err() == nil {
			b.runHook(h, ctx, p)
		}
	}
	b.hookStop.Store(nil)
	cancel(nil)
}

// after runs the After hooks once every call is final.
func (b *Batch) after() {
	ctx := b.parent
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx) // its values, not its end
	}
	for i := range b.hooks.list {
		if h := &b.hooks.list[i]; h.After != nil {
			b.runHook(h, ctx, nil)
		}
	}
}

// runHook runs a hook's Before (with a plan) or After, logging a panic
// instead of losing the batch.
func (b *Batch) runHook(h *BatchHook, ctx context.Context, p *BatchPlan) {
	defer func() {
		if v := recover(); v != nil {
			which := "After"
			if p != nil {
				which = "Before"
			}
			b.tk.log.Error().Str("run", b.ID()).Str("hook", h.Name).Interface("panic", v).Bytes("stack", debug.Stack()).
				Msgf("toolstream: batch hook %s panicked", which)
		}
	}()
	if p != nil {
		h.Before(ctx, p)
	} else {
		h.After(ctx, b, b.results)
	}
}

// emitBatchEnd sends the batch_end event; observers must take it before the
// batch is done, like result events.
func (b *Batch) emitBatchEnd() {
	body := events.BatchEnd{Batch: b.ID(), Calls: make([]events.BatchCall, len(b.results))}
	for i, r := range b.results {
		bc := events.BatchCall{Call: r.Call.ID, Tool: r.Call.Name, State: r.State}
		if r.Err != nil && r.State != StateSuccess {
			bc.Error = r.Err.Error()
		}
		body.Calls[i] = bc
	}
	if s, ok := b.Stop(); ok {
		body.Stop = &events.BatchStop{Reason: string(s.Reason), Detail: s.Detail, Call: s.Call}
	}
	var first time.Time // the batch's time is from its first call's start
	for _, r := range b.results {
		if !r.Started.IsZero() && (first.IsZero() || r.Started.Before(first)) {
			first = r.Started
		}
	}
	if !first.IsZero() {
		body.DurationMS = float64(time.Since(first)) / float64(time.Millisecond)
	}
	ev := &events.Event{Version: events.Version, Type: events.TypeBatchEnd, Session: b.sess.id, Time: time.Now(),
		Data: events.AppendBatchEnd(nil, &body)}
	b.sess.dispatch(b.obs, ev, &b.flush, b.trace)
}
