package toolkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"iter"
	"strconv"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// Run is one batch of calls in progress. Contiguous calls of
// concurrency-safe tools run in parallel (at most the toolkit's max parallel
// at once); every other call runs alone, after the calls before it and
// before the calls after it. Each call's deadline counts from the moment its
// group of calls may begin, so time spent waiting for a slot counts.
type Run struct {
	tk   *Toolkit
	sess *Session
	seq  uint64

	ctx    context.Context
	cancel context.CancelCauseFunc

	calls     []call
	completed chan Result
	done      chan struct{}
	flush     flush
	sem       chan struct{}
	segment   sync.WaitGroup
}

// Start begins running a batch of calls and returns at once. Cancelling ctx
// interrupts the running calls; calls that have not started are reported as
// interrupted without running. Values in ctx reach every handler.
func (s *Session) Start(ctx context.Context, calls []Call) *Run {
	tk := s.tk
	r := &Run{
		tk:        tk,
		sess:      s,
		seq:       tk.runSeq.Add(1),
		calls:     make([]call, len(calls)),
		completed: make(chan Result, 2*len(calls)), // a suspension notice and a result per call at most
		done:      make(chan struct{}),
	}
	r.flush.init()
	r.ctx, r.cancel = context.WithCancelCause(ctx)
	s.mu.Lock()
	if s.closed {
		r.cancel(fmt.Errorf("%w: session %q", ErrClosed, s.id))
	}
	s.mu.Unlock()

	reg := tk.reg.Load()
	for i, in := range calls {
		c := &r.calls[i]
		c.run, c.index, c.call = r, i, in
		if c.call.ID == "" {
			c.call.ID = newCallID()
		}
		if err := validateCallID(c.call.ID); err != nil {
			c.preErr = err
		} else if r.duplicateID(i) {
			c.preErr = &callError{kind: ErrInvalidCall, msg: fmt.Sprintf("duplicate call id %q in this batch; every call needs its own id", c.call.ID)}
		}
		if t, ok := reg.byName[in.Name]; ok {
			c.tool = t
		} else if c.preErr == nil {
			c.preErr = unknownTool(in.Name, reg)
		}
	}

	counted := tk.track(r)
	if !counted {
		r.cancel(ErrClosed)
	}
	go r.drive(counted)
	return r
}

// duplicateID reports whether call i reuses the id of an earlier call.
// Batches are small: a scan beats a map.
func (r *Run) duplicateID(i int) bool {
	id := r.calls[i].call.ID
	for j := range i {
		if r.calls[j].call.ID == id {
			return true
		}
	}
	return false
}

// ID returns the run's id, unique within the toolkit.
func (r *Run) ID() string { return "run-" + strconv.FormatUint(r.seq, 10) }

// Session returns the session the run belongs to.
func (r *Run) Session() *Session { return r.sess }

// Cancel interrupts the run, like cancelling its context.
func (r *Run) Cancel() { r.cancel(nil) }

// Done is closed when every call has its final result and observers have
// taken the result events (or the flush timeout passed).
func (r *Run) Done() <-chan struct{} { return r.done }

// Results yields results as calls finish (completion order). A call of an
// external tool appears twice: first with StateSuspended when it starts
// waiting for [Session.Submit], then with its final result. The sequence ends
// when the run is done. It is meant for one consumer; results it has not
// taken stay available through [Run.Wait].
func (r *Run) Results() iter.Seq[Result] {
	return func(yield func(Result) bool) {
		for res := range r.completed {
			if !yield(res) {
				return
			}
		}
	}
}

// Wait blocks until the run is done and returns the final results in call
// order.
func (r *Run) Wait() []Result {
	<-r.done
	out := make([]Result, len(r.calls))
	for i := range r.calls {
		out[i] = r.calls[i].result
	}
	return out
}

// drive runs the batch group by group.
func (r *Run) drive(counted bool) {
	n := len(r.calls)
	for i := 0; i < n; {
		j := i + 1
		if r.calls[i].parallel() {
			for j < n && r.calls[j].parallel() {
				j++
			}
		}
		r.runGroup(r.calls[i:j])
		i = j
	}
	r.flush.release()
	select {
	case <-r.flush.done:
	default:
		if d := r.tk.opts.flushTimeout; d > 0 {
			t := time.NewTimer(d)
			select {
			case <-r.flush.done:
			case <-t.C:
				r.tk.log.Warn().Str("run", r.ID()).Dur("waited", d).Msg("toolstream: observers did not take all result events in time")
			}
			t.Stop()
		}
	}
	close(r.completed)
	r.cancel(nil) // tells handlers left running after a timeout to stop
	close(r.done)
	if counted {
		r.tk.untrack(r)
	}
}

func (r *Run) interruptedBeforeStart(c *call) (State, error) {
	cause := context.Cause(r.ctx)
	return StateInterrupted, &callError{kind: ErrInterrupted, cause: cause,
		msg: fmt.Sprintf("tool %q was not run: the run was cancelled before the call started (%v)", c.call.Name, cause)}
}

// complete records a final result; called once per call.
func (r *Run) complete(c *call, res Result) {
	c.result = res
	r.completed <- res
	c.releaseSlot()
	r.segment.Done()
}

func newCallID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// MaxCallIDLen is the longest call id accepted, in bytes.
const MaxCallIDLen = 256

func validateCallID(id string) error {
	bad := func(why string) error {
		return &callError{kind: ErrInvalidCall, msg: fmt.Sprintf("invalid call id %q: %s", truncate(id, 80), why)}
	}
	if len(id) > MaxCallIDLen {
		return bad(fmt.Sprintf("%d bytes long, at most %d allowed", len(id), MaxCallIDLen))
	}
	if !utf8.ValidString(id) {
		return bad("not valid UTF-8")
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return bad("contains control characters")
		}
	}
	return nil
}
