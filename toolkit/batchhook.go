package toolkit

import (
	"context"
	"encoding/json"
	"runtime/debug"
	"time"

	"github.com/toolstream/toolstream/events"
)

// batchHooks is an immutable snapshot of a toolkit's batch hooks: the
// interceptors that are on and have a BeforeBatch or an AfterBatch.
type batchHooks struct {
	list   []Interceptor // those with a BeforeBatch or an AfterBatch, in order
	before bool          // one of them has a Before
	after  bool          // one of them has an After
}

// BatchPlan is a batch as its Before hooks see it, before any call runs.
// Its methods are not safe for use by several goroutines at once. Once the
// hooks' time is over (they returned, or the batch went on without one that
// did not return in time), they do nothing: Call and Tool return zero
// values, changes are ignored, Emit returns an error. Indexes are call
// positions in the batch; an index out of range is ignored.
type BatchPlan struct {
	g *guard // the hooks' run: its lock guards every look at the calls
}

// Batch returns the batch.
func (p *BatchPlan) Batch() *Batch { return p.g.b }

// Len returns the number of calls.
func (p *BatchPlan) Len() int { return len(p.g.b.calls) }

// Call returns call i as it will run (rewrites included).
func (p *BatchPlan) Call(i int) Call {
	c := p.lock(i)
	if c == nil {
		return Call{}
	}
	defer p.g.mu.Unlock()
	return c.call
}

// Tool returns the registered tool call i names, or nil when none is
// registered under that name (a ToolResolver or an interceptor may still
// handle it when its turn comes).
func (p *BatchPlan) Tool(i int) *Tool {
	c := p.lock(i)
	if c == nil {
		return nil
	}
	defer p.g.mu.Unlock()
	return c.tool
}

// lock locks the plan and returns call i; nil, with nothing locked, when i
// is out of range or the hooks' time is over: the driver may be running the
// calls, and a hook that comes back late must not touch them.
func (p *BatchPlan) lock(i int) *call {
	if i < 0 || i >= len(p.g.b.calls) {
		return nil
	}
	p.g.mu.Lock()
	if p.g.state != guardRunning {
		p.g.mu.Unlock()
		return nil
	}
	return &p.g.b.calls[i]
}

// Rewrite changes call i before it runs: its tool name (when name is not
// "") and its arguments (when args is not nil). The call keeps its id; its
// arguments are prepared and validated when it starts, like any call's.
func (p *BatchPlan) Rewrite(i int, name string, args json.RawMessage) {
	c := p.lock(i)
	if c == nil {
		return
	}
	defer p.g.mu.Unlock()
	b := p.g.b
	b.mu.Lock() // Batch.Results may be reading the call (suspended notices)
	defer b.mu.Unlock()
	if args != nil {
		c.call.Args = args
	}
	if name != "" && name != c.call.Name {
		c.call.Name = name
		c.tool = b.tk.reg.Load().byName[name] // nil: unknown
	}
}

// Approve marks call i as approved by a person who saw the whole batch:
// interceptors that would ask a person about the call (interceptors'
// Permissions) let it run without asking again ([Invocation.Approved]).
// Rules that deny it still do.
func (p *BatchPlan) Approve(i int) {
	if c := p.lock(i); c != nil {
		c.approved = true
		p.g.mu.Unlock()
	}
}

// Decide gives call i its outcome without running it: no interceptor and
// no handler sees it, and its events are a start, the outcome's content as
// deltas and the result. Use [Failure] for a refusal the model reads. A
// malformed call (a bad or duplicate id) keeps its own failure. A refusal
// is Failure(events.StateDenied, err).
func (p *BatchPlan) Decide(i int, out Outcome) {
	c := p.lock(i)
	if c == nil {
		return
	}
	defer p.g.mu.Unlock()
	c.decide(out)
}

// Decided reports whether call i already has an outcome (Decide).
func (p *BatchPlan) Decided(i int) bool {
	c := p.lock(i)
	if c == nil {
		return false
	}
	defer p.g.mu.Unlock()
	_, ok := c.preErr.(*decided)
	return ok
}

// Suspend tells whoever reads [Batch.Results] that the batch now waits for
// something outside the process, typically one person's decision on the
// whole batch: each call not decided yet appears there with
// StateSuspended (its final result follows as usual). It does not wait
// itself: Before waits, with its ctx, which closing the session now ends
// too (as it ends the waits of suspended calls). Calling it again does
// nothing.
func (p *BatchPlan) Suspend() {
	g := p.g
	g.mu.Lock()
	if g.state != guardRunning || g.suspended {
		g.mu.Unlock()
		return
	}
	g.suspended = true
	b := g.b
	for i := range b.calls {
		if c := &b.calls[i]; c.preErr == nil {
			b.notifySuspended(c)
		}
	}
	g.mu.Unlock()
	b.sess.holdHooks(g)
}

// Emit sends a session-level event (see [Session.Emit]), for example an
// approval request for the whole batch. Once the hooks' time is over it
// sends nothing and says so.
func (p *BatchPlan) Emit(typ events.Type, data any) error {
	g := p.g
	g.mu.Lock()
	over := g.state != guardRunning
	g.mu.Unlock()
	if over {
		return g.overErr()
	}
	// Not under g.mu: an inline observer may cancel the batch.
	return g.b.sess.emit(typ, data, g.b.trace, nil)
}

// StopLoop asks the agent loop to stop after this batch (see [Batch.Stop]).
func (p *BatchPlan) StopLoop(reason StopReason, detail string) {
	p.g.mu.Lock()
	defer p.g.mu.Unlock()
	if p.g.state == guardRunning {
		p.g.b.setStop(Stop{Reason: reason, Detail: detail})
	}
}

// Approved reports whether a batch hook approved the call after a person
// saw its whole batch ([BatchPlan.Approve]): an interceptor that would ask
// a person about it need not ask again.
func (inv *Invocation) Approved() bool { return inv.c.approved }

// before runs the Before hooks before the first stage, under a guard (see
// guard.go), on the goroutine that drives the batch. It reports false when
// that goroutine must leave the batch: a hook held it past the batch's
// cancellation and the grace period, and a pool worker drives on. As for a
// deaf handler, Session.Run then returns when the hook does, with results
// that were final on time; Start and Wait return on time.
func (b *Batch) before() bool {
	if b.err() != nil || !b.hooks.before {
		return true // nothing to run, or interrupted: the calls are reported so without running
	}
	g := &b.hookGuard
	b.initGuard(g, true, nil)
	g.plan.g = g
	g.begin()
	b.runBefore(g)
	if !g.finish() {
		return false
	}
	g.close(false)
	return true
}

// runBefore runs the Before hooks in order until one is left running past
// its time or the batch is cancelled.
func (b *Batch) runBefore(g *guard) {
	for i := range b.hooks.list {
		h := &b.hooks.list[i]
		if h.BeforeBatch == nil {
			continue
		}
		if g.ctx.Err() != nil {
			return // cancelled, or the batch went on without the hooks (which follows a cancellation)
		}
		g.hook.Store(int32(i + 1))
		b.runHook(h, g.ctx, &g.plan)
	}
}

// after runs the After hooks once every call is final, under a guard like
// the Before hooks'. Their context carries the batch's values and does not
// end with the caller's (the results are final: a hook that records them
// should not be cut short by a caller that left), but Batch.Cancel and
// Toolkit.Close end it. A hook that has not returned a grace period later
// is abandoned: it reports false, and a pool worker ends the batch.
func (b *Batch) after() bool {
	if !b.hooks.after {
		return true
	}
	if b.unwatch != nil {
		b.unwatch() // the caller's context no longer interrupts the batch
	}
	// The batch's room for a guard serves when there were no Before hooks;
	// theirs may still be held by a hook left behind, or by a plan a hook
	// kept, so After hooks after them get a guard of their own.
	g := &b.hookGuard
	if b.hooks.before {
		g = new(guard)
	}
	g.b, g.inline = b, true
	parent := b.parent
	if parent.Done() != nil {
		parent = context.WithoutCancel(parent) // its values, not its end
	}
	g.ctx, g.cancel = context.WithCancelCause(parent)
	b.guard.Store(g) // Cancel and Close reach it from now on (not an earlier interruption)
	for i := range b.hooks.list {
		h := &b.hooks.list[i]
		if h.AfterBatch == nil {
			continue
		}
		g.hook.Store(int32(i + 1))
		b.runHook(h, g.ctx, nil)
		if !g.running() {
			break // abandoned: the hooks after it do not run
		}
	}
	if !g.finish() {
		b.tk.log.Warn().Str("run", b.ID()).Str("hook", g.hookName()).Dur("grace", b.tk.opts.cancelGrace).
			Msg("toolstream: batch hook After returned after the batch was cancelled and its grace period: the batch ended without it")
		return false
	}
	g.close(false)
	return true
}

// runHook runs a hook's Before (with a plan) or After, logging a panic
// instead of losing the batch.
func (b *Batch) runHook(h *Interceptor, ctx context.Context, p *BatchPlan) {
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
		h.BeforeBatch(ctx, p)
	} else {
		h.AfterBatch(ctx, b, b.results)
	}
}

// emitBatchEnd sends the batch_end event; observers must take it before the
// batch is done, like result events.
func (b *Batch) emitBatchEnd() {
	body := events.BatchEnd{Batch: b.ID(), Calls: make([]events.BatchCall, len(b.results))}
	for i, r := range b.results {
		bc := events.BatchCall{Call: r.Call.ID, Tool: r.Call.Name, State: r.State}
		if r.Err != nil && r.State != events.StateSuccess {
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
