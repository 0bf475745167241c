package toolkit

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/stream"
)

// A call's deadline, in one place: how long it may run (Spec.Timeout, else
// the toolkit's default: setTimeout), the scope that carries the deadline
// to its handler as a context, the toolkit's clock that cancels the scope
// at its deadline and reports the handlers still running once the cancel
// grace period after it is over (the stage then abandons their calls),
// what the batch's interruption does to the scopes, the deadline an
// interceptor gives a pass through the rest of its chain
// (Invocation.Within), and how a call whose context ended is told: a
// timeout or an interruption (ctxFailure).

// setTimeout picks the call's timeout: the tool's, else the toolkit's
// default (which external tools do not get: people and browsers take their
// time).
func (c *call) setTimeout() {
	c.timeout = c.batch.tk.opts.timeout
	if c.tool != nil {
		switch t := c.tool.spec.Timeout; {
		case t > 0:
			c.timeout = t
		case t < 0:
			c.timeout = 0
		case c.tool.spec.External:
			c.timeout = 0
		}
	}
}

// scope is the context shared by the calls of one stage that have the same
// timeout; a call gets one of its own for a wait and after it (callScope),
// and a pass through Within gets one (passScope). It is a small cancelable
// context of the engine's own: one
// allocation, no timer (the toolkit's clock cancels it at its deadline), and
// it behaves like context.WithDeadline for handlers: Deadline reports the
// deadline, and Err is context.DeadlineExceeded once it passed.
// Locking: mu guards done, err, cause and afters; the clock's lock guards
// when, phase and index; the rest is set before the scope is shared.
type scope struct {
	parent   context.Context
	stage    *stage
	call     *call // set for a call's own scope (after a suspension)
	timeout  time.Duration
	deadline time.Time // zero without a timeout
	pass     *pass     // set for the scope of a pass through an interceptor's chain (Invocation.Within)

	mu     sync.Mutex
	done   chan struct{} // made on first use
	err    error
	cause  error // errCallDeadline, or why the run was interrupted
	afters []*afterFunc

	// Guarded by the clock's lock.
	when  time.Time
	phase phase
	index int32 // in the clock's heap; -1 when absent
}

type phase uint8

const (
	phaseNone     phase = iota
	phaseDeadline       // the clock cancels the scope at its deadline
	phaseGrace          // the clock reports handlers still running
)

type afterFunc struct{ f func() }

// init sets up a scope of stage st whose deadline is timeout after start
// (none for 0).
func (s *scope) init(st *stage, timeout time.Duration, start time.Time) {
	s.parent, s.stage, s.timeout, s.index = st.batch.parent, st, timeout, -1
	if timeout > 0 {
		s.deadline = start.Add(timeout)
	}
}

// Deadline implements context.Context.
func (s *scope) Deadline() (time.Time, bool) {
	d, ok := s.parent.Deadline()
	if !s.deadline.IsZero() && (!ok || s.deadline.Before(d)) {
		return s.deadline, true
	}
	return d, ok
}

// Done implements context.Context.
func (s *scope) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		s.done = make(chan struct{})
	}
	return s.done
}

// Err implements context.Context.
func (s *scope) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Value implements context.Context for the call: the call itself and its
// emitter, without a context.WithValue per call, then whatever its scope and
// the caller's context hold.
func (c *call) Value(key any) any {
	// The keys are empty structs, so the type is the key: comparing types
	// is one instruction each, where comparing values calls the runtime
	// (and a type switch hashes). The emitter first: tools look it up.
	if _, ok := key.(stream.ContextKey); ok {
		return &c.out.em
	}
	if _, ok := key.(callKey); ok {
		return c
	}
	if _, ok := key.(scopeKey); ok {
		return c.scope
	}
	if s := c.side; s != nil && s.t != nil {
		return s.ctx.Value(key) // the tracer's context, over the batch's
	}
	return c.scope.Value(key)
}

// scopeKey finds the scope under contexts derived from it.
type scopeKey struct{}

// Value implements context.Context.
func (s *scope) Value(key any) any {
	if _, ok := key.(scopeKey); ok {
		return s
	}
	if s.call != nil {
		if _, ok := key.(stream.ContextKey); ok {
			return &s.call.out.em
		}
		if _, ok := key.(callKey); ok {
			return s.call
		}
	}
	if s.call != nil && s.call.trace() != nil {
		return s.call.side.ctx.Value(key)
	}
	return s.parent.Value(key)
}

// AfterFunc lets contexts derived from the scope (a handler's own
// context.WithTimeout, say) be canceled with it without a goroutine each: the
// context package uses this method when a parent has it.
func (s *scope) AfterFunc(f func()) (stop func() bool) {
	a := &afterFunc{f: f}
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	s.afters = append(s.afters, a)
	s.mu.Unlock()
	return func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, x := range s.afters {
			if x == a {
				s.afters = append(s.afters[:i], s.afters[i+1:]...)
				return true
			}
		}
		return false
	}
}

// cancel ends the scope; the first error and cause stay. It reports whether
// this call ended it.
func (s *scope) cancel(err, cause error) bool {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return false
	}
	s.err, s.cause = err, cause
	if s.done == nil {
		s.done = closedChan
	} else {
		close(s.done)
	}
	afters := s.afters
	s.afters = nil
	s.mu.Unlock()
	for _, a := range afters {
		a.f()
	}
	return true
}

// endWait ends a call's own scope (an interceptor's wait, or the deadline
// after a resume) that an interruption reaches on its own: the batch was
// interrupted before the scope was made, or Session.Close ended the wait.
// Like the scopes Batch.interrupt ends, it gets the cancel grace period on
// the clock, so that code that ignores it is left behind on time (the
// call is abandoned) instead of holding its batch for ever. A scope that
// was over already keeps the end of its grace period.
func (s *scope) endWait(cause error) {
	if s.cancel(context.Canceled, cause) {
		tk := s.stage.batch.tk
		tk.clock.schedule(s, time.Now().Add(tk.opts.cancelGrace), phaseGrace)
	}
}

// timedOut reports whether the scope ended at its own deadline.
func (s *scope) timedOut() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cause == errCallDeadline
}

// why returns the cause the scope was ended with, other than its deadline,
// or nil.
func (s *scope) why() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cause == errCallDeadline {
		return nil
	}
	return s.cause
}

// scopeFor returns the scope of calls with the given timeout, creating it on
// first use.
func (st *stage) scopeFor(timeout time.Duration) *scope {
	for _, s := range st.scopes {
		if s.timeout == timeout {
			return s
		}
	}
	s := &st.first
	if len(st.scopes) > 0 {
		s = new(scope)
	}
	s.init(st, timeout, st.start)
	st.scopes = append(st.scopes, s)
	return s
}

// callScope gives one call a scope of its own, from now: a suspended call's
// wait (timeout 0) and its new deadline when it resumes. The batch's
// interruption and the stage's end reach it like the others.
func (st *stage) callScope(c *call, timeout time.Duration) *scope {
	s := new(scope)
	s.init(st, timeout, time.Now())
	s.call = c
	st.mu.Lock()
	ended := st.ended
	if !ended {
		st.scopes = append(st.scopes, s)
	}
	st.mu.Unlock()
	if ended {
		s.cancel(context.Canceled, nil)
		return s
	}
	if err := st.batch.err(); err != nil {
		s.endWait(err) // interrupted before the scope was there: Batch.interrupt did not see it
	} else if !s.deadline.IsZero() {
		st.batch.tk.clock.schedule(s, s.deadline, phaseDeadline)
	}
	return s
}

// arm puts the scopes with a deadline on the toolkit's clock.
func (st *stage) arm() {
	for _, s := range st.scopes {
		if !s.deadline.IsZero() {
			st.batch.tk.clock.schedule(s, s.deadline, phaseDeadline)
		}
	}
}

// disarm takes the scopes off the clock and ends them; called when every
// call of the stage is final. Ending them tells abandoned handlers to stop.
func (st *stage) disarm() {
	st.mu.Lock()
	st.ended = true
	scopes := st.scopes
	st.mu.Unlock()
	for _, s := range scopes {
		st.batch.tk.clock.remove(s)
		s.cancel(context.Canceled, nil)
	}
}

// interrupt ends every scope of the stage (the batch was cancelled) and gives
// the running handlers their grace period.
func (st *stage) interrupt(err, cause error) {
	grace := time.Now().Add(st.batch.tk.opts.cancelGrace)
	st.mu.Lock()
	scopes := slices.Clone(st.scopes)
	st.mu.Unlock()
	for _, s := range scopes {
		s.cancel(err, cause)
		end := grace
		if !s.deadline.IsZero() {
			// A scope whose deadline passed is in its grace already: a
			// cancellation must not move the end of it later.
			end = earliest(end, s.deadline.Add(st.batch.tk.opts.cancelGrace))
		}
		st.batch.tk.clock.schedule(s, end, phaseGrace)
	}
	st.finishWaiting()
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// expire finishes the calls of scope s that no runner has taken when its
// deadline passes: they time out in the queue, reported at once. A call
// that runs nothing (it fails before running, or its outcome was decided:
// preErr) has nothing to time out: it ends now with its own outcome, as a
// runner would have ended it (a batch hook's denial must not reach the
// model as a timeout).
func (st *stage) expire(s *scope) {
	for k := int(st.next.Load()); k < len(st.calls); k++ {
		c := &st.calls[k]
		if c.scope != s || !c.claimed.CompareAndSwap(false, true) {
			continue
		}
		if c.preErr != nil {
			c.exec() // no user code: a start, its outcome, its result
			continue
		}
		why := "before it could start"
		if len(st.calls) > st.batch.tk.opts.maxParallel {
			why = fmt.Sprintf("waiting for a free slot (at most %d calls run in parallel)", st.batch.tk.opts.maxParallel)
		}
		c.finish(events.StateTimeout, nil, c.timedOutWaiting(why))
	}
}

// timedOutWaiting is the failure of a call whose deadline passed before a
// runner started it.
func (c *call) timedOutWaiting(why string) error {
	return &callError{kind: ErrTimeout, cause: context.DeadlineExceeded,
		msg: fmt.Sprintf("tool %q timed out after %v %s", shownName(c.call.Name), c.timeout, why)}
}

// resolverDeadline returns the timeout of a call to an unknown name (the
// toolkit's default) and its deadline counted from start, its stage's
// start: the ToolResolver's time counts against it. Zero: none.
func (b *Batch) resolverDeadline(start time.Time) (time.Duration, time.Time) {
	timeout := b.tk.opts.timeout
	if timeout <= 0 {
		return 0, time.Time{}
	}
	return timeout, start.Add(timeout)
}

// abandon reports the calls still running on scope s once their grace period
// is over. If the driver itself is stuck in one of them, a pool worker takes
// over driving.
func (st *stage) abandon(s *scope) {
	st.mu.Lock()
	ended := st.ended
	st.mu.Unlock()
	if ended {
		return
	}
	for i := range st.calls {
		c := &st.calls[i]
		// A call that fails before running (preErr) runs no user code and
		// finishes on its own with its own error, even one whose deadline
		// passed before its stage began (a resolver that used its time up).
		// A call of an external tool is abandoned like any other: what holds
		// it past its grace is code around its wait (call.abandon).
		if c.preErr != nil || c.currentScope() != s || !c.abandon() {
			continue
		}
		if c.inline {
			c.counts.Store(false) // the new driver runs the calls still waiting
			st.batch.tk.pool.submit(takeOver{st.batch})
		} else {
			c.makeWay()
		}
	}
}

// pass is what the scope of a pass through the rest of an interceptor's
// chain needs besides (Invocation.Within).
type pass struct {
	outer *scope        // the scope it runs in (the call's, or an outer pass's); nil when its context has none
	grace time.Duration // its cancel grace period
	over  chan struct{} // closed when the grace period after its deadline, or after its context's end, is over
	left  atomic.Bool   // over is closed
	stop  func() bool   // stops following the end of its context
}

// passScope is a scope with its own allocation for a pass.
type passScope struct {
	scope
	pass pass
}

// Within runs next, the rest of the interceptor's chain, with a deadline d
// from now, inside the call's own; the engine keeps it as it keeps the
// call's. At the deadline next's context ends (Deadline and Err as with
// context.WithDeadline); a pass still running grace later is left behind
// on its own goroutine, and Within returns the engine's timeout (state
// timeout, a cause matching ErrTimeout and context.DeadlineExceeded). What
// the pass writes after that is refused once the call ends or another
// attempt starts. The call's deadline and the batch's interruption end the
// pass too, with the same grace, and Within returns their outcome. grace <
// 0 means the toolkit's cancel grace period ([WithCancelGrace]); d <= 0
// runs next as it is.
//
// The pass runs on another goroutine, on a copy of inv that becomes inv
// when it returns in time: a retry around Within does not wait for a pass
// left behind, and each pass is an attempt with its own deadline.
func (inv *Invocation) Within(ctx context.Context, d, grace time.Duration, next Handler) Result {
	c := inv.c
	if d <= 0 {
		return next(ctx, inv)
	}
	if grace < 0 {
		grace = c.batch.tk.opts.cancelGrace
	}
	s := c.stage.passScope(ctx, d, grace)
	defer s.endPass()
	cp := *inv
	done := make(chan Result, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- Failure(events.StateError, c.panicked("an interceptor", v))
			}
		}()
		done <- next(s, &cp)
	}()
	select {
	case out := <-done:
		*inv = cp
		return out
	case <-s.pass.over:
	}
	select {
	case out := <-done: // it came back just in time
		*inv = cp
		return out
	default:
	}
	return Failure(c.ctxFailure(s, nil))
}

// passScope returns the scope of a pass through Within, on the clock from
// now: its deadline is d from now, and the end of ctx ends it too.
func (st *stage) passScope(ctx context.Context, d, grace time.Duration) *scope {
	ps := &passScope{}
	s := &ps.scope
	s.parent, s.stage, s.timeout, s.index = ctx, st, d, -1
	s.deadline = time.Now().Add(d)
	s.pass = &ps.pass
	s.pass.outer, _ = ctx.Value(scopeKey{}).(*scope)
	s.pass.grace, s.pass.over = grace, make(chan struct{})
	st.batch.tk.clock.schedule(s, s.deadline, phaseDeadline)
	follow := func() {
		if s.cancel(ctx.Err(), nil) { // its own deadline did not end it first
			st.batch.tk.clock.schedule(s, time.Now().Add(grace), phaseGrace)
		}
	}
	if ctx.Err() != nil {
		follow() // over already: so is the pass, from its start (the tool does not run)
	}
	s.pass.stop = context.AfterFunc(ctx, follow)
	return s
}

// endPass takes a pass's scope off the clock and ends it, which tells code
// left behind to stop.
func (s *scope) endPass() {
	s.pass.stop()
	s.stage.batch.tk.clock.remove(s)
	s.cancel(context.Canceled, nil)
}

// leave tells Within that the pass's grace period is over.
func (p *pass) leave() {
	if p.left.CompareAndSwap(false, true) {
		close(p.over)
	}
}

// grace returns the scope's cancel grace period: a pass's own, else the
// toolkit's, g.
func (s *scope) grace(g time.Duration) time.Duration {
	if s.pass != nil {
		return s.pass.grace
	}
	return g
}

// ContextFailure is the outcome for a call whose ctx ended while an
// interceptor waited (a backoff sleep, a rate limiter, an approval): a
// timeout when the call's deadline or one an interceptor set has passed,
// otherwise an interruption with the cause the batch was stopped with (see
// Batch.Err), worded as the engine words its own. When only a context an
// interceptor ended itself is over, its cause (context.Cause) is the
// interruption's.
func (inv *Invocation) ContextFailure(ctx context.Context) Result {
	state, err := inv.c.ctxFailure(ctx, nil)
	return Failure(state, err)
}

// errCallDeadline is the cancellation cause of a call's own deadline, which
// tells a timeout apart from the caller cancelling the batch.
var errCallDeadline = errors.New("call deadline exceeded")

// ctxFailure classifies a call whose context ctx ended: its own deadline
// (timeout) or the batch's cancellation (interrupted). handlerErr is what the
// handler returned, if it did.
func (c *call) ctxFailure(ctx context.Context, handlerErr error) (events.State, error) {
	name := shownName(c.call.Name)
	suffix := ""
	if handlerErr != nil {
		suffix = ": " + handlerErr.Error()
	}
	s, _ := ctx.Value(scopeKey{}).(*scope)
	for s != nil && s.pass != nil && !s.timedOut() {
		s = s.pass.outer // a pass its own deadline did not end: the scope around it tells
	}
	ownDeadline := s != nil && s.timedOut()
	// A deadline of an interceptor's own (a per-attempt timeout) is a
	// timeout too, unless the batch itself is being stopped.
	innerDeadline := !ownDeadline && errors.Is(ctx.Err(), context.DeadlineExceeded) && c.batch.err() == nil
	if ownDeadline || innerDeadline {
		// The cause matches context.DeadlineExceeded even when the handler
		// returned an error of its own (a closed socket, say).
		cause := handlerErr
		if cause == nil {
			cause = context.DeadlineExceeded
		} else if !errors.Is(cause, context.DeadlineExceeded) {
			cause = errors.Join(context.DeadlineExceeded, cause)
		}
		after := c.timeout
		if ownDeadline {
			after = s.timeout // the call's, or a pass's (Within)
		}
		if innerDeadline {
			after = time.Since(c.startedAt()).Round(time.Millisecond)
		}
		return events.StateTimeout, &callError{kind: ErrTimeout, cause: cause,
			msg: fmt.Sprintf("tool %q timed out after %v%s", name, after, suffix)}
	}
	why := c.batch.err()
	if why == nil && s != nil {
		why = s.why() // a wait Session.Close ended
	}
	if why == nil {
		// Neither the batch nor the call's scope ended: an interceptor
		// ended the context it handed on (its cause says why), or asked
		// ContextFailure about one that has not ended.
		why = context.Cause(ctx)
		if why == nil {
			why = context.Canceled
		}
	}
	cause := why
	msg := fmt.Sprintf("tool %q was interrupted (%v)", name, why)
	// A handler that returns the context's error says nothing new: say it once.
	if handlerErr != nil && !errors.Is(handlerErr, why) {
		cause = errors.Join(why, handlerErr)
		msg += suffix
	}
	return events.StateInterrupted, &callError{kind: ErrInterrupted, cause: cause, msg: msg}
}

// clock is the toolkit's single timer for deadlines and grace periods. Scopes
// wait in a heap by the time of their next event; the timer is armed for the
// earliest and re-armed only when an earlier one arrives, which with a common
// default timeout almost never happens. Per stage this costs a heap push and
// a removal instead of a runtime timer, a context and its registration.
type clock struct {
	grace time.Duration

	mu      sync.Mutex
	heap    scopeHeap
	timer   *time.Timer
	armed   time.Time // when the timer fires; zero when stopped
	stopped bool
}

func newClock(grace time.Duration) *clock {
	k := &clock{grace: grace}
	k.timer = time.AfterFunc(time.Hour, k.fire)
	k.timer.Stop()
	return k
}

// schedule puts a scope in the heap (or moves it) for an event at when.
func (k *clock) schedule(s *scope, when time.Time, p phase) {
	k.mu.Lock()
	s.when, s.phase = when, p
	if s.index < 0 {
		heap.Push(&k.heap, s)
	} else {
		heap.Fix(&k.heap, int(s.index))
	}
	if !k.stopped && (k.armed.IsZero() || when.Before(k.armed)) {
		k.armed = when
		k.timer.Reset(time.Until(when))
	}
	k.mu.Unlock()
}

// remove takes a scope out of the heap, if it is there. The timer stays
// armed: a fire with nothing due just re-arms it.
func (k *clock) remove(s *scope) {
	k.mu.Lock()
	if s.index >= 0 {
		heap.Remove(&k.heap, int(s.index))
	}
	s.phase = phaseNone
	k.mu.Unlock()
}

type dueScope struct {
	s *scope
	p phase
}

func (k *clock) fire() {
	k.mu.Lock()
	now := time.Now()
	var due []dueScope
	for len(k.heap) > 0 && !k.heap[0].when.After(now) {
		s := k.heap[0]
		due = append(due, dueScope{s, s.phase})
		if s.phase == phaseDeadline {
			s.when, s.phase = s.deadline.Add(s.grace(k.grace)), phaseGrace
			heap.Fix(&k.heap, 0)
		} else {
			heap.Pop(&k.heap)
			s.phase = phaseNone
		}
	}
	k.armed = time.Time{}
	if len(k.heap) > 0 && !k.stopped {
		k.armed = k.heap[0].when
		k.timer.Reset(k.armed.Sub(now))
	}
	k.mu.Unlock()
	for _, d := range due {
		switch {
		case d.p == phaseDeadline:
			d.s.cancel(context.DeadlineExceeded, errCallDeadline)
			if d.s.pass == nil {
				d.s.stage.expire(d.s) // calls still waiting for a runner time out now
			}
		case d.s.pass != nil:
			d.s.pass.leave() // the interceptor goes on without the rest of its chain
		default:
			d.s.stage.abandon(d.s)
		}
	}
}

// stop stops the timer for good (the toolkit is closed and no batch is left).
func (k *clock) stop() {
	k.mu.Lock()
	k.stopped = true
	k.timer.Stop()
	k.mu.Unlock()
}

// scopeHeap orders scopes by their next event.
type scopeHeap []*scope

func (h scopeHeap) Len() int           { return len(h) }
func (h scopeHeap) Less(i, j int) bool { return h[i].when.Before(h[j].when) }
func (h scopeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = int32(i), int32(j)
}
func (h *scopeHeap) Push(x any) {
	s := x.(*scope)
	s.index = int32(len(*h))
	*h = append(*h, s)
}
func (h *scopeHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	s.index = -1
	return s
}
