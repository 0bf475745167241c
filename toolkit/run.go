package toolkit

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"iter"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
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

	parent  context.Context // the caller's context
	causeMu sync.Mutex
	cause   error // why the run was interrupted by Cancel or Close

	calls     []call
	one       [1]call      // storage for the common single-call batch
	obs       *observerSet // observers of this run's calls
	vis       Visibility   // the toolkit's visibility when the run started
	completed chan int     // call index as each finishes; ^index for a suspension
	notices   atomic.Int64 // suspension notices sent
	done      chan struct{}
	flush     flush
	sem       chan struct{}
	segment   sync.WaitGroup
	counted   bool // tracked by the toolkit
	next      int  // first call of the next group; owned by the driver
	group     atomic.Pointer[group]
	unwatch   func() bool // stops watching the caller's context
	values    sync.Map    // interceptors' per-run state
}

// Start begins running a batch of calls on the toolkit's goroutines and
// returns at once. Cancelling ctx interrupts the running calls; calls that
// have not started are reported as interrupted without running. Values in
// ctx reach every handler.
//
// Results are final no later than each call's deadline plus the cancel grace
// period, even if a handler ignores its context; [Run.Wait] and
// [Run.Results] never wait for such a handler.
func (s *Session) Start(ctx context.Context, calls []Call) *Run {
	r := s.newRun(ctx, calls)
	s.tk.pool.submit(task{run: r})
	return r
}

// Run runs a batch of calls and returns their results in call order, like
// Start followed by Wait, but it drives the batch on the calling goroutine,
// which also executes the last call of each group of calls itself: for a
// single call there is no hand-off between goroutines at all.
//
// The results are final at the same moments as with Start. The difference
// is for a handler that ignores its context's cancellation: if the calling
// goroutine is running it when its deadline and grace period pass, the run
// goes on without it on another goroutine, but Run itself can only return
// once that handler does. Use Start and Wait when tools may not honour
// cancellation.
func (s *Session) Run(ctx context.Context, calls []Call) []Result {
	r := s.newRun(ctx, calls)
	r.drive()
	return r.Wait()
}

// newRun prepares a run: ids checked, tools looked up, nothing started.
func (s *Session) newRun(ctx context.Context, calls []Call) *Run {
	tk := s.tk
	r := &Run{
		tk:        tk,
		sess:      s,
		seq:       tk.runSeq.Add(1),
		obs:       tk.observers.Load(),
		vis:       tk.visibility(),
		completed: make(chan int, 2*len(calls)), // a suspension and a result per call at most
		done:      make(chan struct{}),
	}
	if len(calls) == 1 {
		r.calls = r.one[:]
	} else {
		r.calls = make([]call, len(calls))
	}
	r.flush.init(len(r.obs.boxes) > 0)
	r.parent = ctx
	if ctx.Done() != nil {
		// Handlers ignoring a cancellation of the caller's context must be
		// watched; a context that cannot be cancelled needs no watcher.
		r.unwatch = context.AfterFunc(ctx, func() { r.interrupt(context.Cause(ctx)) })
	}
	s.mu.Lock()
	if s.closed {
		r.setCause(fmt.Errorf("%w: session %q", ErrClosed, s.id))
	}
	s.mu.Unlock()

	var seen map[string]struct{}
	if len(calls) > 32 {
		seen = make(map[string]struct{}, len(calls))
	}
	reg := tk.reg.Load()
	for i, in := range calls {
		c := &r.calls[i]
		c.run, c.index, c.call = r, i, in
		if c.call.ID == "" {
			c.call.ID = newCallID()
		}
		if err := validateCallID(c.call.ID); err != nil {
			c.preErr = err
		} else if r.duplicateID(i, seen) {
			c.preErr = &callError{kind: ErrInvalidCall, msg: fmt.Sprintf("duplicate call id %q in this batch; every call needs its own id", c.call.ID)}
		}
		if t, ok := reg.byName[in.Name]; ok {
			c.tool = t
		} else if c.preErr == nil {
			c.preErr = unknownTool(in.Name, reg.order)
		}
	}

	r.counted = tk.track(r)
	if !r.counted {
		r.setCause(ErrClosed)
	}
	return r
}

// duplicateID reports whether call i reuses the id of an earlier call.
// Batches are usually small, and then a scan beats a map.
func (r *Run) duplicateID(i int, seen map[string]struct{}) bool {
	id := r.calls[i].call.ID
	if seen != nil {
		_, dup := seen[id]
		seen[id] = struct{}{}
		return dup
	}
	for j := range i {
		if r.calls[j].call.ID == id {
			return true
		}
	}
	return false
}

// ID returns the run's id: "run-", a random prefix chosen when the toolkit
// was created, and the run's number, so ids do not repeat across toolkits
// or restarts.
func (r *Run) ID() string { return "run-" + r.tk.nonce + "-" + strconv.FormatUint(r.seq, 10) }

// Session returns the session the run belongs to.
func (r *Run) Session() *Session { return r.sess }

// Cancel interrupts the run, like cancelling its context.
func (r *Run) Cancel() { r.interrupt(nil) }

// interrupt cancels the run with a cause; running handlers get their grace
// period.
func (r *Run) interrupt(cause error) {
	r.setCause(cause)
	if g := r.group.Load(); g != nil {
		err := r.parent.Err()
		if err == nil {
			err = context.Canceled
		}
		g.interrupt(err, r.err())
	}
}

// setCause records why the run was interrupted; the first cause stays.
func (r *Run) setCause(cause error) {
	if cause == nil {
		cause = context.Canceled
	}
	r.causeMu.Lock()
	if r.cause == nil {
		r.cause = cause
	}
	r.causeMu.Unlock()
}

// err returns why the run was interrupted, or nil.
func (r *Run) err() error {
	r.causeMu.Lock()
	cause := r.cause
	r.causeMu.Unlock()
	if cause != nil {
		return cause
	}
	if r.parent.Err() != nil {
		return context.Cause(r.parent)
	}
	return nil
}

// Err returns why the run was interrupted (Cancel, Toolkit.Close, the
// caller's context, or an interceptor that aborted it), or nil.
func (r *Run) Err() error { return r.err() }

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
		for i := range r.completed {
			var res Result
			if i >= 0 {
				res = r.calls[i].result
			} else {
				c := &r.calls[^i]
				res = Result{Call: c.call, State: StateSuspended, Started: c.startedAt()}
			}
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

// drive runs the batch group by group. The goroutine that drives a run
// executes the last call of each group itself. If that call's handler
// outlives its deadline, the watcher that reports it hands the run to a new
// driver, and this goroutine stops driving once its handler returns.
func (r *Run) drive() {
	if g := r.group.Load(); g != nil {
		// Taking over from a driver stuck in a runaway handler.
		r.endGroup(g)
	}
	n := len(r.calls)
	for r.next < n {
		i, j := r.next, r.next+1
		if r.calls[i].parallel() {
			for j < n && r.calls[j].parallel() {
				j++
			}
		}
		r.next = j
		g, last := r.startGroup(r.calls[i:j])
		if last != nil && !last.exec() {
			return // abandoned: another driver has taken over
		}
		r.endGroup(g)
	}
	r.end()
}

// end reports the run done once observers have its result events.
func (r *Run) end() {
	if fl := r.obs.flushers; len(fl) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), max(r.tk.opts.flushTimeout, time.Millisecond))
		for _, f := range fl {
			if err := f.Flush(ctx); err != nil {
				r.tk.log.Warn().Str("run", r.ID()).Err(err).Msgf("toolstream: %T did not hand the run's events on in time", f)
			}
		}
		cancel()
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
	if r.unwatch != nil {
		r.unwatch()
	}
	close(r.done)
	if r.counted {
		r.tk.untrack(r)
	}
}

func (r *Run) interruptedBeforeStart(c *call) (State, error) {
	cause := r.err()
	return StateInterrupted, &callError{kind: ErrInterrupted, cause: cause,
		msg: fmt.Sprintf("tool %q was not run: the run was cancelled before the call started (%v)", c.call.Name, cause)}
}

// notifySuspended yields a suspension notice in Results. Notices are
// informational: past one per call on average they are dropped, so that the
// channel always has room for every final result.
func (r *Run) notifySuspended(c *call) {
	if r.notices.Add(1) <= int64(len(r.calls)) {
		r.completed <- ^c.index
	}
}

// complete records a final result; called once per call.
func (r *Run) complete(c *call, res Result) {
	c.result = res
	r.completed <- c.index
	c.releaseSlot()
	r.segment.Done()
}

func newCallID() string { return "call_" + randomHex(8) }

// randomHex returns 2n random hex digits. The ids it makes must not repeat,
// not resist guessing, so math/rand/v2's generator (seeded by the runtime
// from the operating system) does; crypto/rand would add a quarter of a
// megabyte to every program that embeds the toolkit.
func randomHex(n int) string {
	b := make([]byte, (n+7)/8*8)
	for i := 0; i < len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], rand.Uint64())
	}
	return hex.EncodeToString(b[:n])
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
