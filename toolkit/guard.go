package toolkit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolstream/toolstream/events"
)

// A guard watches user code that a batch waits for before calls run: its
// Before hooks, and a ToolResolver asked for an unknown call. Such code may
// ignore its context; the batch must not wait for it for ever. The batch's
// interruption (Batch.Cancel, Toolkit.Close, the caller's context, a
// Session.Close that ends a suspended plan) ends the code's context, and so
// does a resolver's deadline; if the code has not returned when the cancel
// grace period after that is over, it is abandoned: the batch goes on
// without it and nothing it does later reaches the batch. Its goroutine
// cannot be stopped and is left to return on its own, like a handler
// abandoned at its deadline.
//
// The code runs either on the driver (inline: Before hooks, which then cost
// no hand-off), and a pool worker drives on if it is abandoned; or on a pool
// worker while the driver waits on the guard (a resolver: its call's stage
// must go on).
type guard struct {
	b      *Batch
	ctx    context.Context
	cancel context.CancelCauseFunc
	plan   BatchPlan
	job    *job         // set for a resolver
	hook   atomic.Int32 // 1 + the index of the hook running now; 0 before the first
	inline bool         // the code runs on the driver

	// Under mu; the driver reads them without it once it saw the state
	// final (finish, wait).
	state     guardState
	timedOut  bool // abandoned after its deadline, not after an interruption
	suspended bool // the plan was suspended: Session.Close ends it
	mu        sync.Mutex
	done      chan struct{} // closed when state leaves guardRunning; only when the driver waits
	late      *guardLate    // once a deadline or an interruption armed the grace period
}

// guardLate is what only a guard whose grace period was armed needs: the
// common guard returns without one.
type guardLate struct {
	cause error       // why the batch was interrupted, once it was
	timer *time.Timer // ends the grace period
}

// job is user code a guard runs on a pool worker while the driver waits
// (a ToolResolver: unknown.go), and its deadline.
type job struct {
	deadline time.Time // zero without one
	stop     context.CancelFunc
	// run runs the code with the guard's context (over already when its
	// time was over before a worker took it); keep records what the code
	// returned, under the guard's lock, when it returned in time.
	run func(ctx context.Context) (keep func())
}

type guardState uint8

const (
	guardRunning   guardState = iota
	guardReturned             // the code returned in time
	guardAbandoned            // the batch went on without it
)

// newGuard prepares a guard for a job, which runs on a pool worker.
func (b *Batch) newGuard(j *job) *guard {
	g := &guard{}
	b.initGuard(g, false, j)
	return g
}

// initGuard prepares g for Before hooks (j nil) or a job.
func (b *Batch) initGuard(g *guard, inline bool, j *job) {
	g.b, g.inline, g.job = b, inline, j
	g.ctx, g.cancel = context.WithCancelCause(b.parent)
	if j != nil && !j.deadline.IsZero() {
		g.ctx, j.stop = context.WithDeadline(g.ctx, j.deadline)
	}
	if !inline {
		g.done = make(chan struct{})
	}
}

// begin publishes the guard to the batch's interruption, and arms its
// grace period after its deadline, if it has one. The code may run after it.
func (g *guard) begin() {
	g.b.guard.Store(g)
	if g.job != nil && !g.job.deadline.IsZero() {
		g.mu.Lock()
		g.late = &guardLate{timer: time.AfterFunc(time.Until(g.job.deadline.Add(g.b.tk.opts.cancelGrace)), g.expire)}
		g.mu.Unlock()
	}
	if err := g.b.err(); err != nil { // interrupted before the guard was there
		g.interrupt(err)
	}
}

// interrupt ends the code's context and gives it the grace period (unless
// the one after its deadline ends sooner).
func (g *guard) interrupt(cause error) {
	g.cancel(cause)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state != guardRunning {
		return
	}
	if g.late == nil {
		g.late = new(guardLate)
	}
	l := g.late
	if l.cause != nil {
		return
	}
	l.cause = cause
	grace := g.b.tk.opts.cancelGrace
	switch {
	case l.timer == nil:
		l.timer = time.AfterFunc(grace, g.expire)
	case time.Now().Before(g.job.deadline): // the grace period from now ends sooner
		l.timer.Reset(grace)
	}
}

// why returns why the batch was interrupted while the code ran, if it was
// (g.mu held, or the state seen final).
func (g *guard) why() error {
	if g.late == nil {
		return nil
	}
	return g.late.cause
}

// expire abandons the code if it is still running at the end of its grace
// period. When the code holds the driver, a pool worker drives on.
func (g *guard) expire() {
	g.mu.Lock()
	if g.state != guardRunning {
		g.mu.Unlock()
		return
	}
	g.state, g.timedOut = guardAbandoned, g.why() == nil
	g.end()
}

// finish records that the code returned; it reports false when it came back
// too late (the batch went on without it).
func (g *guard) finish() bool {
	g.mu.Lock()
	if g.state != guardRunning {
		g.mu.Unlock()
		return false
	}
	g.state = guardReturned
	if g.late != nil && g.late.timer != nil {
		g.late.timer.Stop()
	}
	g.end()
	return true
}

// end tells whoever waits that the code's time is over; g.mu is held and
// released.
func (g *guard) end() {
	if g.done != nil {
		close(g.done)
	}
	suspended, abandoned := g.suspended, g.state == guardAbandoned
	g.mu.Unlock()
	if suspended {
		g.b.sess.dropHooks(g)
	}
	if abandoned && g.inline {
		g.b.tk.pool.submit(g.b)
	}
}

// running reports whether the code's time is not over.
func (g *guard) running() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.state == guardRunning
}

// wait waits, on the driver, until the code returned or was abandoned.
func (g *guard) wait() { <-g.done }

// close releases the guard once the driver goes on; the driver knows the
// final state (finish or wait told it). An abandoned guard stays the
// batch's: the messages of its calls name it (Batch.notStarted).
func (g *guard) close(abandoned bool) {
	if !abandoned {
		g.b.guard.CompareAndSwap(g, nil)
	}
	g.cancel(nil)
	if g.job != nil && g.job.stop != nil {
		g.job.stop()
	}
}

// do runs the guard's job on a pool worker.
func (g *guard) do() {
	keep := g.job.run(g.ctx)
	g.mu.Lock()
	if g.state == guardRunning {
		keep()
	}
	g.mu.Unlock()
	g.finish()
}

// abandonedHook returns the Before hook the batch went on without, if it
// did.
func (g *guard) abandonedHook() (string, bool) {
	if g.job != nil {
		return "", false
	}
	g.mu.Lock()
	abandoned := g.state == guardAbandoned
	g.mu.Unlock()
	return g.hookName(), abandoned
}

// hookName names the Before hook running now, or that ran last.
func (g *guard) hookName() string {
	if i := g.hook.Load(); i > 0 {
		return g.b.hooks.list[i-1].Name
	}
	return ""
}

// overErr is what a plan's Emit says once its hooks' time is over.
func (g *guard) overErr() error {
	return fmt.Errorf("toolkit: the plan of batch hook %q is over (the hook returned, or the batch went on without it); nothing was sent", g.hookName())
}

// Messages of calls that never ran because the code before them did not
// return.

func hookAbandonedErr(name, hook string, grace time.Duration, cause error) error {
	return &callError{kind: ErrInterrupted, cause: cause,
		msg: fmt.Sprintf("tool %q was not run: the run was cancelled (%v) while batch hook %q was deciding on the batch, and the hook did not return within the %v grace period; the call never ran (a Before hook must return when its context ends)",
			shownName(name), cause, hook, grace)}
}

// preState is the state of a call that fails before running.
func preState(err error) events.State {
	if ce, ok := err.(*callError); ok {
		switch ce.kind {
		case ErrTimeout:
			return events.StateTimeout
		case ErrInterrupted:
			return events.StateInterrupted
		}
	}
	return events.StateError
}
