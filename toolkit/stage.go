package toolkit

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// A run executes in stages. A stage is a stretch of the batch that may
// overlap: a maximal run of contiguous calls to concurrency-safe tools (with
// calls that fail before running, which touch nothing), or one other call
// alone. Stages run one after another; inside a stage at most the toolkit's
// max parallel calls run at once, started in call order.
//
// The goroutine that drives a run (the caller of Session.Run, or a pool
// worker for Session.Start) executes the last call of each stage itself and
// hands the others to the pool: a one-call batch involves no other
// goroutine. If a handler it runs outlives its deadline and grace period,
// the stage's watcher reports the call and hands driving to a pool worker
// (takeOver); the stuck goroutine stops driving when its handler returns.
type stage struct {
	run     *Run
	calls   []call
	start   time.Time
	inline  *call          // the call the driver executes itself
	pending sync.WaitGroup // calls of the stage without a final result

	mu       sync.Mutex // scopes grow when a suspended call resumes
	scopes   []*scope
	scopeBuf [2]*scope
	first    scope // storage for the stage's first scope
	ended    bool
}

// drive runs the stages in order on the calling goroutine.
func (r *Run) drive() {
	for r.next < len(r.calls) {
		st := r.beginStage()
		if c := st.inline; c != nil && !c.exec() {
			return // abandoned in a handler: a pool worker drives on (takeOver)
		}
		r.endStage(st)
	}
	r.end()
}

// takeOver drives a run whose driver is stuck in a handler that outlived its
// deadline and grace period: it waits for the rest of the stage, then goes
// on with the next.
func (r *Run) takeOver() {
	r.endStage(r.current.Load())
	r.drive()
}

// beginStage cuts the next stage off the batch, gives each call its scope
// and starts every call but the one the driver runs itself (st.inline).
func (r *Run) beginStage() *stage {
	n := len(r.calls)
	i, j := r.next, r.next+1
	if r.calls[i].parallel() {
		for j < n && r.calls[j].parallel() {
			j++
		}
	}
	r.next = j
	st := &r.first
	if i > 0 {
		st = new(stage)
	}
	st.run, st.calls, st.start = r, r.calls[i:j], time.Now()
	st.scopes = st.scopeBuf[:0]
	parallel := len(st.calls) > 1 // a stage of one needs no slot
	if parallel && r.slots == nil {
		r.slots = make(chan struct{}, r.tk.opts.maxParallel)
	}
	st.pending.Add(len(st.calls))
	for k := range st.calls {
		c := &st.calls[k]
		c.stage = st
		c.setTimeout()
		s := st.scopeFor(c.timeout)
		c.scope, c.cur = s, s
	}
	st.arm() // once every call has its scope: the watcher reads them
	// Published only now, complete: Cancel and Close read it. A cancellation
	// that comes before is seen by the r.err() check below.
	r.current.Store(st)
	for k := range st.calls {
		c := &st.calls[k]
		if r.err() != nil {
			c.finish(StateInterrupted, nil, r.notStarted(c))
			continue
		}
		if parallel && !r.acquire(c) {
			continue
		}
		if k == len(st.calls)-1 {
			c.inline = true
			st.inline = c
			break
		}
		r.tk.pool.submit(task{kind: runCall, call: c})
	}
	return st
}

// endStage waits until every call of the stage has its result.
func (r *Run) endStage(st *stage) {
	st.pending.Wait()
	st.disarm()
	r.current.Store(nil)
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
// wait (timeout 0) and its new deadline when it resumes. The run's
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
	if err := st.run.err(); err != nil {
		s.cancel(context.Canceled, err)
	} else if !s.deadline.IsZero() {
		st.run.tk.clock.schedule(s, s.deadline, phaseDeadline)
	}
	return s
}

// arm puts the scopes with a deadline on the toolkit's clock.
func (st *stage) arm() {
	for _, s := range st.scopes {
		if !s.deadline.IsZero() {
			st.run.tk.clock.schedule(s, s.deadline, phaseDeadline)
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
		st.run.tk.clock.remove(s)
		s.cancel(context.Canceled, nil)
	}
}

// interrupt ends every scope of the stage (the run was cancelled) and gives
// the running handlers their grace period.
func (st *stage) interrupt(err, cause error) {
	grace := time.Now().Add(st.run.tk.opts.cancelGrace)
	st.mu.Lock()
	scopes := slices.Clone(st.scopes)
	st.mu.Unlock()
	for _, s := range scopes {
		s.cancel(err, cause)
		st.run.tk.clock.schedule(s, grace, phaseGrace)
	}
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
		if c.currentScope() == s && !c.external() && c.abandon() && c.inline {
			st.run.tk.pool.submit(task{kind: takeOverRun, run: st.run})
		}
	}
}

// acquire waits for a parallelism slot; on failure the call is finished.
func (r *Run) acquire(c *call) bool {
	if c.Err() == nil {
		select {
		case r.slots <- struct{}{}:
			c.holdsSlot.Store(true)
			return true
		default:
		}
	}
	select {
	case r.slots <- struct{}{}:
		if c.Err() == nil {
			c.holdsSlot.Store(true)
			return true
		}
		<-r.slots
	case <-c.Done():
	}
	if !c.currentScope().timedOut() {
		c.finish(StateInterrupted, nil, r.notStarted(c))
		return false
	}
	c.finish(StateTimeout, nil, &callError{kind: ErrTimeout,
		msg: fmt.Sprintf("tool %q timed out after %v waiting for a free slot (at most %d calls run in parallel)",
			c.call.Name, c.timeout, r.tk.opts.maxParallel)})
	return false
}
