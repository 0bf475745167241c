package toolkit

import (
	"context"
	"sync"
	"time"

	"github.com/toolstream/toolstream/stream"
)

// scope is the context shared by the calls of one stage that have the same
// timeout. It is a small cancelable context of the engine's own: one
// allocation, no timer (the toolkit's clock cancels it at its deadline), and
// it behaves like context.WithDeadline for handlers: Deadline reports the
// deadline, and Err is context.DeadlineExceeded once it passed.
type scope struct {
	parent   context.Context
	stage    *stage
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
