package toolkit

import (
	"context"
	"fmt"
	"time"
)

// group is a stretch of a run's calls that may overlap. Its calls share
// their deadline contexts: calls with the same timeout in one group have the
// same deadline, so one timer serves them all.
type group struct {
	run   *Run
	calls []call
	start time.Time
	ctxs  []deadlineCtx
	done  chan struct{} // closed when every call is final
}

type deadlineCtx struct {
	timeout time.Duration
	ctx     context.Context
	cancel  context.CancelFunc
}

// contextFor returns the context of calls with the given timeout, creating
// it and its watcher on first use.
func (g *group) contextFor(timeout time.Duration) context.Context {
	for _, d := range g.ctxs {
		if d.timeout == timeout {
			return d.ctx
		}
	}
	d := deadlineCtx{timeout: timeout}
	if timeout > 0 {
		d.ctx, d.cancel = context.WithDeadlineCause(g.run.ctx, g.start.Add(timeout), errCallDeadline)
	} else {
		d.ctx = g.run.ctx
	}
	g.ctxs = append(g.ctxs, d)
	return d.ctx
}

// watch runs when a context of the group ends (timeout or cancellation) while
// calls may still run on it. Handlers get a grace period to return on their
// own; those that have not are then reported without waiting for them.
func (g *group) watch(ctx context.Context) {
	select {
	case <-g.done:
		return
	default:
	}
	t := time.NewTimer(g.run.tk.opts.cancelGrace)
	defer t.Stop()
	select {
	case <-g.done:
		return
	case <-t.C:
	}
	for i := range g.calls {
		if c := &g.calls[i]; c.Context == ctx && !c.external() {
			c.abandon()
		}
	}
}

// runGroup runs calls that may overlap, under the parallelism cap, and
// returns when all have final results.
func (r *Run) runGroup(calls []call) {
	g := &group{run: r, calls: calls, start: time.Now(), done: make(chan struct{})}
	parallel := len(calls) > 1 // a group of one needs no slot
	if parallel && r.sem == nil {
		r.sem = make(chan struct{}, r.tk.opts.maxParallel)
	}
	r.segment.Add(len(calls))
	for i := range calls {
		c := &calls[i]
		c.setTimeout()
		c.Context = g.contextFor(c.timeout)
	}
	// Watchers start once every call has its context: they read them.
	for _, d := range g.ctxs {
		context.AfterFunc(d.ctx, func() { g.watch(d.ctx) })
	}
	for i := range calls {
		c := &calls[i]
		if r.ctx.Err() != nil {
			c.finishUnstarted(r.interruptedBeforeStart(c))
			continue
		}
		if parallel && !r.acquire(c) {
			continue
		}
		go c.exec()
	}
	r.segment.Wait()
	close(g.done)
	for _, d := range g.ctxs {
		if d.cancel != nil {
			d.cancel() // releases the timer; tells abandoned handlers to stop
		}
	}
}

// acquire waits for a slot; on failure the call is finished.
func (r *Run) acquire(c *call) bool {
	if c.Err() == nil {
		select {
		case r.sem <- struct{}{}:
			c.holdsSlot.Store(true)
			return true
		default:
		}
	}
	select {
	case r.sem <- struct{}{}:
		if c.Err() == nil {
			c.holdsSlot.Store(true)
			return true
		}
		<-r.sem
	case <-c.Done():
	}
	if context.Cause(c) != errCallDeadline {
		c.finishUnstarted(r.interruptedBeforeStart(c))
		return false
	}
	c.finishUnstarted(StateTimeout, &callError{kind: ErrTimeout,
		msg: fmt.Sprintf("tool %q timed out after %v waiting for a free slot (at most %d calls run in parallel)",
			c.call.Name, c.timeout, r.tk.opts.maxParallel)})
	return false
}
