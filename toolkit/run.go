package toolkit

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/maphash"
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
// stage of the batch may begin, so time spent waiting for a slot counts.
type Run struct {
	tk     *Toolkit
	sess   *Session
	seq    uint64
	parent context.Context // the caller's context
	obs    *observerSet    // observers of this run's calls
	vis    Visibility      // the toolkit's visibility when the run started

	calls     []call
	results   []Result // by call index, each set once when its call is final
	oneCall   [1]call  // storage for the common single-call batch
	oneResult [1]Result

	causeMu sync.Mutex
	cause   error // why the run was interrupted by Cancel, Close or an interceptor

	// Driving: see stage.go.
	next    int                   // first call of the next stage; owned by the driver
	current atomic.Pointer[stage] // the stage running now, for Cancel
	first   stage                 // storage for the first stage
	unwatch func() bool           // stops watching the caller's context
	counted bool                  // tracked by the toolkit (for Close)

	// Completion: every final result and suspension notice, in the order
	// they happened, for Results and Wait.
	mu      sync.Mutex
	changed sync.Cond // broadcast when the log grows and when the run ends
	log     []notice
	logBuf  [2]notice
	ended   bool          // every call final and observers flushed
	done    chan struct{} // made on demand by Done
	flush   flush
	values  sync.Map // interceptors' per-run state
}

// notice is one entry of a run's completion log: a call's final result, or
// a notice that it was suspended.
type notice struct {
	index     int32
	suspended bool
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
	s.tk.pool.submit(task{kind: driveRun, run: r})
	return r
}

// Run runs a batch of calls and returns their results in call order, like
// Start followed by Wait, but it drives the batch on the calling goroutine,
// which also executes the last call of each stage itself: for a single call
// there is no hand-off between goroutines at all.
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
	r := &Run{tk: tk, sess: s, seq: tk.runSeq.Add(1), parent: ctx, obs: tk.observers.Load(), vis: tk.visibility()}
	r.changed.L = &r.mu
	if len(calls) == 1 {
		r.calls, r.results, r.log = r.oneCall[:], r.oneResult[:], r.logBuf[:0]
	} else {
		r.calls, r.results, r.log = make([]call, len(calls)), make([]Result, len(calls)), make([]notice, 0, len(calls))
	}
	r.flush.init(len(r.obs.boxes) > 0)
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

	var ids idSet
	reg := tk.reg.Load()
	for i, in := range calls {
		c := &r.calls[i]
		c.run, c.index, c.call = r, int32(i), in
		if c.call.ID == "" {
			c.call.ID = newCallID()
		}
		if err := validateCallID(c.call.ID); err != nil {
			c.preErr = err
		} else if ids.add(r.calls, i) {
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

// idSet finds calls that reuse an id in their batch. Batches are usually
// small: up to 16 calls a scan is cheapest, up to 256 an open-addressing
// table on the stack, beyond that a map.
type idSet struct {
	slots [512]uint16 // call index + 1, by hash of its id; 0 is empty
	big   map[string]struct{}
}

var idSeed = maphash.MakeSeed()

// add reports whether call i reuses the id of an earlier call of calls.
func (s *idSet) add(calls []call, i int) bool {
	id := calls[i].call.ID
	switch n := len(calls); {
	case n <= 16:
		for j := range i {
			if calls[j].call.ID == id {
				return true
			}
		}
		return false
	case n <= 256:
		for h := maphash.String(idSeed, id); ; h++ {
			k := &s.slots[h%uint64(len(s.slots))]
			if *k == 0 {
				*k = uint16(i + 1)
				return false
			}
			if calls[*k-1].call.ID == id {
				return true
			}
		}
	default:
		if s.big == nil {
			s.big = make(map[string]struct{}, n)
		}
		_, dup := s.big[id]
		s.big[id] = struct{}{}
		return dup
	}
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
	if st := r.current.Load(); st != nil {
		err := r.parent.Err()
		if err == nil {
			err = context.Canceled
		}
		st.interrupt(err, r.err())
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
func (r *Run) Done() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done == nil {
		if r.ended {
			return closedChan
		}
		r.done = make(chan struct{})
	}
	return r.done
}

// Results yields results as calls finish (completion order). A call of an
// external tool, or one an interceptor suspends, appears first with
// StateSuspended when it starts waiting, then with its final result. The
// sequence ends when the run is done. Each range over Results sees every
// result from the first.
func (r *Run) Results() iter.Seq[Result] {
	return func(yield func(Result) bool) {
		for i := 0; ; i++ {
			n, ok := r.waitNotice(i)
			if !ok {
				return
			}
			var res Result
			if n.suspended {
				c := &r.calls[n.index]
				res = Result{Call: c.call, State: StateSuspended, Started: c.startedAt()}
			} else {
				res = r.results[n.index]
			}
			if !yield(res) {
				return
			}
		}
	}
}

// waitNotice returns notice i of the completion log, waiting for it; false
// once the run is done without it.
func (r *Run) waitNotice(i int) (notice, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i >= len(r.log) && !r.ended {
		r.changed.Wait()
	}
	if i < len(r.log) {
		return r.log[i], true
	}
	return notice{}, false
}

// Wait blocks until the run is done and returns the final results in call
// order. The slice is the run's own: every call returns the same one.
func (r *Run) Wait() []Result {
	r.mu.Lock()
	for !r.ended {
		r.changed.Wait()
	}
	r.mu.Unlock()
	return r.results
}

// record logs a final result or a suspension notice.
func (r *Run) record(n notice) {
	r.mu.Lock()
	r.log = append(r.log, n)
	r.changed.Broadcast()
	r.mu.Unlock()
}

// complete makes a call's result final; called once per call.
func (r *Run) complete(c *call, res Result) {
	r.results[c.index] = res
	r.record(notice{index: c.index})
	c.stage.pending.Done()
}

// notifySuspended logs that a call is waiting for something outside the
// process.
func (r *Run) notifySuspended(c *call) { r.record(notice{index: c.index, suspended: true}) }

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
	r.flush.wait(r)
	r.mu.Lock()
	r.ended = true
	if r.done != nil {
		close(r.done)
	}
	r.changed.Broadcast()
	r.mu.Unlock()
	if r.unwatch != nil {
		r.unwatch()
	}
	if r.counted {
		r.tk.untrack(r)
	}
}

// notStarted is the cause of a call the run's interruption kept from
// starting.
func (r *Run) notStarted(c *call) error {
	cause := r.err()
	return &callError{kind: ErrInterrupted, cause: cause,
		msg: fmt.Sprintf("tool %q was not run: the run was cancelled before the call started (%v)", c.call.Name, cause)}
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
