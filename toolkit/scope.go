package toolkit

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// scope is the context shared by the calls of one group that have the same
// timeout. It is a small cancelable context of the engine's own: one
// allocation, no timer (the toolkit's clock cancels it at its deadline), and
// it behaves like context.WithDeadline for handlers: Deadline reports the
// deadline, and Err is context.DeadlineExceeded once it passed.
type scope struct {
	parent   context.Context
	group    *group
	call     *call // set for a call's own scope (after a suspension)
	timeout  time.Duration
	deadline time.Time // zero without a timeout

	mu     sync.Mutex
	done   chan struct{} // made on first use
	err    error
	cause  error // errCallDeadline, or why the run was interrupted
	afters []*afterFunc

	// Guarded by the clock's lock.
	when  time.Time
	phase phase
	index int // in the clock's heap; -1 when absent
}

type phase uint8

const (
	phaseNone     phase = iota
	phaseDeadline       // the clock cancels the scope at its deadline
	phaseGrace          // the clock reports handlers still running
)

type afterFunc struct{ f func() }

func newScope(g *group, timeout time.Duration, start time.Time) *scope {
	s := &scope{parent: g.run.parent, group: g, timeout: timeout, index: -1}
	if timeout > 0 {
		s.deadline = start.Add(timeout)
	}
	return s
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

// scopeKey finds the scope under contexts derived from it.
type scopeKey struct{}

// Value implements context.Context.
func (s *scope) Value(key any) any {
	switch key {
	case scopeKey{}:
		return s
	case callKey{}:
		if s.call != nil {
			return s.call
		}
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

// cancel ends the scope; the first error and cause stay.
func (s *scope) cancel(err, cause error) {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return
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
}

// timedOut reports whether the scope ended at its own deadline.
func (s *scope) timedOut() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cause == errCallDeadline
}

// clock is the toolkit's single timer for deadlines and grace periods. Scopes
// wait in a heap by the time of their next event; the timer is armed for the
// earliest and re-armed only when an earlier one arrives, which with a common
// default timeout almost never happens. Per group this costs a heap push and
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
		heap.Fix(&k.heap, s.index)
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
		heap.Remove(&k.heap, s.index)
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
			s.when, s.phase = s.deadline.Add(k.grace), phaseGrace
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
		if d.p == phaseDeadline {
			d.s.cancel(context.DeadlineExceeded, errCallDeadline)
		} else {
			d.s.group.abandon(d.s)
		}
	}
}

// stop stops the timer for good (the toolkit is closed and no run is left).
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
	h[i].index, h[j].index = i, j
}
func (h *scopeHeap) Push(x any) {
	s := x.(*scope)
	s.index = len(*h)
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
