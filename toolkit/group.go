package toolkit

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// group is a stretch of a run's calls that may overlap. Calls of one group
// with the same timeout share a scope (their context), and so one deadline.
type group struct {
	run    *Run
	calls  []call
	start  time.Time
	mu     sync.Mutex // scopes grow when a suspended call resumes
	scopes []*scope
	done   chan struct{} // closed when every call is final
	ended  bool          // g.mu
}

// scopeFor returns the scope of calls with the given timeout, creating it on
// first use.
func (g *group) scopeFor(timeout time.Duration) *scope {
	for _, s := range g.scopes {
		if s.timeout == timeout {
			return s
		}
	}
	s := newScope(g, timeout, g.start)
	g.scopes = append(g.scopes, s)
	return s
}

// callScope gives one call a scope of its own, from now: a suspended call's
// wait (timeout 0) and its new deadline when it resumes. The run's
// interruption and the group's end reach it like the others.
func (g *group) callScope(c *call, timeout time.Duration) *scope {
	s := newScope(g, timeout, time.Now())
	s.call = c
	g.mu.Lock()
	ended := g.ended
	if !ended {
		g.scopes = append(g.scopes, s)
	}
	g.mu.Unlock()
	if ended {
		s.cancel(context.Canceled, nil)
		return s
	}
	if err := g.run.err(); err != nil {
		s.cancel(context.Canceled, err)
	} else if !s.deadline.IsZero() {
		g.run.tk.clock.schedule(s, s.deadline, phaseDeadline)
	}
	return s
}

// arm puts the scopes with a deadline on the toolkit's clock.
func (g *group) arm() {
	for _, s := range g.scopes {
		if !s.deadline.IsZero() {
			g.run.tk.clock.schedule(s, s.deadline, phaseDeadline)
		}
	}
}

// disarm takes the scopes off the clock and ends them; called when every
// call of the group is final. Ending them tells abandoned handlers to stop.
func (g *group) disarm() {
	close(g.done)
	g.mu.Lock()
	g.ended = true
	scopes := g.scopes
	g.mu.Unlock()
	for _, s := range scopes {
		g.run.tk.clock.remove(s)
		s.cancel(context.Canceled, nil)
	}
}

// interrupt ends every scope of the group (the run was cancelled) and gives
// the running handlers their grace period.
func (g *group) interrupt(err, cause error) {
	grace := time.Now().Add(g.run.tk.opts.cancelGrace)
	g.mu.Lock()
	scopes := slices.Clone(g.scopes)
	g.mu.Unlock()
	for _, s := range scopes {
		s.cancel(err, cause)
		g.run.tk.clock.schedule(s, grace, phaseGrace)
	}
}

// abandon reports the calls still running on scope s once their grace period
// is over.
func (g *group) abandon(s *scope) {
	select {
	case <-g.done:
		return
	default:
	}
	for i := range g.calls {
		c := &g.calls[i]
		if c.currentScope() == s && !c.external() && c.abandon() && c.inline {
			// The driver itself is stuck in this handler: a new one goes on.
			g.run.tk.pool.submit(task{run: g.run})
		}
	}
}

// startGroup sets up calls that may overlap and starts them, under the
// parallelism cap, on pool workers. It returns the last call unstarted when
// it holds its slot: the driver runs it itself.
func (r *Run) startGroup(calls []call) (*group, *call) {
	g := &group{run: r, calls: calls, start: time.Now(), done: make(chan struct{})}
	parallel := len(calls) > 1 // a group of one needs no slot
	if parallel && r.sem == nil {
		r.sem = make(chan struct{}, r.tk.opts.maxParallel)
	}
	r.segment.Add(len(calls))
	for i := range calls {
		c := &calls[i]
		c.setTimeout()
		s := g.scopeFor(c.timeout)
		c.Context, c.cur, c.group = s, s, g
	}
	g.arm() // once every call has its scope: abandon reads them
	// Published only now, complete: Cancel and Close read it. A cancellation
	// that comes before is seen by the r.err() check below.
	r.group.Store(g)
	for i := range calls {
		c := &calls[i]
		if r.err() != nil {
			c.finishUnstarted(r.interruptedBeforeStart(c))
			continue
		}
		if parallel && !r.acquire(c) {
			continue
		}
		if i == len(calls)-1 {
			c.inline = true
			return g, c
		}
		r.tk.pool.submit(task{call: c})
	}
	return g, nil
}

// endGroup waits until every call of the group has its result.
func (r *Run) endGroup(g *group) {
	r.segment.Wait()
	g.disarm()
	r.group.Store(nil)
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
	if !c.currentScope().timedOut() {
		c.finishUnstarted(r.interruptedBeforeStart(c))
		return false
	}
	c.finishUnstarted(StateTimeout, &callError{kind: ErrTimeout,
		msg: fmt.Sprintf("tool %q timed out after %v waiting for a free slot (at most %d calls run in parallel)",
			c.call.Name, c.timeout, r.tk.opts.maxParallel)})
	return false
}
