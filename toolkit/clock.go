package toolkit

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

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
			d.s.stage.expire(d.s) // calls still waiting for a runner time out now
		} else {
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
