package toolkit

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolstream/toolstream/events"
)

// Batch is one batch of calls in progress. Contiguous calls of
// concurrency-safe tools run in parallel (at most the toolkit's max parallel
// at once); every other call runs alone, after the calls before it and
// before the calls after it. Each call's deadline counts from the moment its
// stage of the batch may begin, so time spent waiting for a slot counts.
type Batch struct {
	tk     *Toolkit
	sess   *Session
	seq    uint64
	parent context.Context // the caller's context
	obs    *observerSet    // observers of this run's calls
	vis    Visibility      // the toolkit's visibility when the run started
	agent  string          // the agent making the calls (WithAgent), in every event

	calls     []call
	results   []Result // by call index, each set once when its call is final
	oneCall   [1]call  // storage for the common single-call batch
	oneResult [1]Result
	onePart   [1]events.Part // its content's first part, when it has one

	cause atomic.Pointer[error] // why the batch was interrupted by Cancel, Close or an interceptor; the first stays

	// Driving: see stage.go.
	next    int                   // first call of the next stage; owned by the driver
	current atomic.Pointer[stage] // the stage running now, for Cancel
	first   stage                 // storage for the first stage
	unwatch func() bool           // stops watching the caller's context
	counted bool                  // tracked by the toolkit (for Close)
	hooked  bool                  // the Before hooks ran or were abandoned: never again (a take-over drives on)
	ending  bool                  // end began: the After hooks ran or were abandoned (a pool worker ends the batch)
	ended   bool                  // every call final and observers flushed (b.mu; beside the flags above, where the padding was)

	prevActive, nextActive *Batch // the toolkit's list of batches in progress

	// Completion: every final result and suspension notice, in the order
	// they happened, for Results and Wait.
	mu      sync.Mutex
	changed sync.Cond // broadcast when the log grows and when the run ends
	log     []notice
	logBuf  [2]notice
	done    chan struct{} // made on demand by Done
	flush   flush
	locals  *localStore // batch locals (local.go), made on first use, dropped at the end
	stop    *Stop       // why the agent loop must stop after the batch (stop.go)

	tracer tracer     // the toolkit's tracer, nil without one (trace.go)
	trace  batchTrace // the batch's trace, nil when not traced

	hooks *batchHooks           // the batch hooks when it started, nil without any (batchhook.go)
	guard atomic.Pointer[guard] // the Before hooks or resolver running now, or abandoned (guard.go)
	// The Before hooks' guard, in room the batch's size class has spare
	// (1,320 bytes without it, 1,408 allocated): a batch with hooks
	// allocates no guard.
	hookGuard guard
}

// notice is one entry of a batch's completion log: a call's final result, or
// a notice that it was suspended.
type notice struct {
	index     int32
	suspended bool
}

// Start begins running a batch of calls on the toolkit's goroutines and
// returns at once. Cancelling ctx interrupts the running calls; calls that
// have not started are reported as interrupted without running. Values in
// ctx reach every handler. A nil ctx fails every call with ErrInvalidCall.
//
// Results are final no later than each call's deadline plus the cancel grace
// period, even if a handler ignores its context; [Batch.Wait] and
// [Batch.Results] never wait for such a handler.
func (s *Session) Start(ctx context.Context, calls []Call, opts ...StartOption) *Batch {
	b := s.newBatch(ctx, calls, opts)
	if !b.counted {
		// The toolkit is closed (or closing: its pool may be waiting for
		// its workers): the calls are only reported interrupted, on a
		// goroutine of their own.
		go b.drive()
		return b
	}
	s.tk.pool.submit(b)
	return b
}

// Run runs a batch of calls and returns their results in call order, like
// Start followed by Wait, but it drives the batch on the calling goroutine,
// which also executes the last call of each stage itself: for a single call
// there is no hand-off between goroutines at all.
//
// The results are final at the same moments as with Start. The difference
// is for a handler that ignores its context's cancellation: if the calling
// goroutine is running it when its deadline and grace period pass, the batch
// goes on without it on another goroutine, but Run itself can only return
// once that handler does. Use Start and Wait when tools may not honour
// cancellation. The same holds for a BeforeBatch ([Interceptor]) that
// ignores its context; a [ToolResolver] runs on a pool goroutine and holds
// only its own call.
func (s *Session) Run(ctx context.Context, calls []Call, opts ...StartOption) []Result {
	b := s.newBatch(ctx, calls, opts)
	b.drive()
	return b.Wait()
}

// newBatch prepares a batch: ids checked, tools looked up, nothing started.
func (s *Session) newBatch(ctx context.Context, calls []Call, opts []StartOption) *Batch {
	tk := s.tk
	var ctxErr error
	if ctx == nil {
		// A caller's mistake: every call says so, nothing panics.
		ctx, ctxErr = context.Background(), errNilContext
	}
	b := &Batch{tk: tk, sess: s, seq: tk.batchSeq.Add(1), parent: ctx, obs: tk.observerSet(), vis: tk.visibility(), hooks: tk.hooks.Load(), tracer: tk.opts.tracer}
	b.changed.L = &b.mu
	if len(calls) == 1 {
		b.calls, b.results, b.log = b.oneCall[:], b.oneResult[:], b.logBuf[:0]
		// The usual result, one part, needs no allocation of its own: it
		// lives as long as the batch does anyway (Result points into it).
		b.calls[0].out.content.list = b.onePart[:0]
	} else {
		b.calls, b.results, b.log = make([]call, len(calls)), make([]Result, len(calls)), make([]notice, 0, len(calls))
	}
	b.flush.init(len(b.obs.boxes) > 0)
	if ctx.Done() != nil {
		// Handlers ignoring a cancellation of the caller's context must be
		// watched; a context that cannot be cancelled needs no watcher.
		b.unwatch = context.AfterFunc(ctx, func() { b.interrupt(context.Cause(ctx)) })
	}
	s.mu.Lock()
	if s.closed {
		b.setCause(fmt.Errorf("%w: session %q", ErrClosed, s.id))
	}
	s.mu.Unlock()

	agent, agentErr := batchAgent(ctx)
	if ctxErr != nil {
		agentErr = ctxErr
	}
	b.agent = agent
	var ids *idSet
	if len(calls) > idScan {
		ids = new(idSet)
	}
	reg := tk.reg.Load()
	for i, in := range calls {
		c := &b.calls[i]
		c.batch, c.index, c.call, c.out.c = b, int32(i), in, c
		if c.call.ID == "" {
			c.call.ID = newCallID()
		}
		if err := validateCallID(c.call.ID); err != nil {
			c.preErr = err
		} else if agentErr != nil {
			c.preErr = agentErr
		} else if duplicateID(ids, b.calls, i) {
			c.preErr = &callError{kind: ErrInvalidCall, msg: fmt.Sprintf("duplicate call id %q in this batch; every call needs its own id", c.call.ID)}
		}
		if t, ok := reg.byName[in.Name]; ok {
			c.tool = t
		} // else unknown: a resolver or an interceptor may know it (unknown.go)
	}

	for _, o := range opts {
		if o != nil {
			o(b)
		}
	}

	b.counted = tk.track(b)
	if !b.counted {
		b.setCause(ErrClosed)
	}
	b.startBatchTrace(calls)
	return b
}

// errNilContext fails every call of a batch started with a nil context.
var errNilContext = &callError{kind: ErrInvalidCall, msg: "toolkit: the batch was given a nil context; pass context.Background() or the request's context"}

// ID returns the batch's id: "batch-", a random prefix chosen when the toolkit
// was created, and the batch's number, so ids do not repeat across toolkits
// or restarts.
func (b *Batch) ID() string { return "batch-" + b.tk.nonce + "-" + strconv.FormatUint(b.seq, 10) }

// Session returns the session the batch belongs to.
func (b *Batch) Session() *Session { return b.sess }

// Cancel interrupts the batch, like cancelling its context.
func (b *Batch) Cancel() { b.interrupt(nil) }

// interrupt cancels the batch with a cause; running handlers get their grace
// period.
func (b *Batch) interrupt(cause error) {
	b.setCause(cause)
	if g := b.guard.Load(); g != nil {
		g.interrupt(b.err()) // Before hooks or a resolver are running
	}
	if st := b.current.Load(); st != nil {
		err := b.parent.Err()
		if err == nil {
			err = context.Canceled
		}
		st.interrupt(err, b.err())
	}
}

// setCause records why the batch was interrupted; the first cause stays.
func (b *Batch) setCause(cause error) {
	if cause == nil {
		cause = context.Canceled
	}
	b.cause.CompareAndSwap(nil, &cause)
}

// err returns why the batch was interrupted, or nil.
func (b *Batch) err() error {
	if cause := b.cause.Load(); cause != nil {
		return *cause
	}
	if b.parent.Err() != nil {
		return context.Cause(b.parent)
	}
	return nil
}

// Err returns why the batch was interrupted (Cancel, Toolkit.Close, the
// caller's context, or an interceptor that aborted it), or nil.
func (b *Batch) Err() error { return b.err() }

// Done is closed when every call has its final result and observers have
// taken the result events (or the flush timeout passed).
func (b *Batch) Done() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done == nil {
		if b.ended {
			return closedChan
		}
		b.done = make(chan struct{})
	}
	return b.done
}

// Results yields results as calls finish (completion order). A call of an
// external tool, or one an interceptor suspends, appears first with
// StateSuspended when it starts waiting, then with its final result. The
// sequence ends when the batch is done. Each range over Results sees every
// result from the first.
func (b *Batch) Results() iter.Seq[Result] {
	return func(yield func(Result) bool) {
		for i := 0; ; i++ {
			n, call, ok := b.waitNotice(i)
			if !ok {
				return
			}
			var res Result
			if n.suspended {
				c := &b.calls[n.index]
				res = Result{Call: call, State: events.StateSuspended, Started: c.startedAt()}
			} else {
				res = b.results[n.index]
			}
			if !yield(res) {
				return
			}
		}
	}
}

// waitNotice returns notice i of the completion log, waiting for it; false
// once the batch is done without it.
func (b *Batch) waitNotice(i int) (notice, Call, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i >= len(b.log) && !b.ended {
		b.changed.Wait()
	}
	if i < len(b.log) {
		n := b.log[i]
		var c Call
		if n.suspended { // read under b.mu: a batch hook may still rewrite it
			c = b.calls[n.index].call
		}
		return n, c, true
	}
	return notice{}, Call{}, false
}

// Wait blocks until the batch is done and returns the final results in call
// order. The slice is the batch's own: every call returns the same one.
func (b *Batch) Wait() []Result {
	b.mu.Lock()
	for !b.ended {
		b.changed.Wait()
	}
	b.mu.Unlock()
	return b.results
}

// record logs a final result or a suspension notice.
func (b *Batch) record(n notice) {
	b.mu.Lock()
	b.log = append(b.log, n)
	b.changed.Broadcast()
	b.mu.Unlock()
}

// complete makes a call's result final; called once per call.
func (b *Batch) complete(c *call, res Result) {
	b.results[c.index] = res
	b.record(notice{index: c.index})
	c.stage.pending.Done()
}

// notifySuspended logs that a call is waiting for something outside the
// process.
func (b *Batch) notifySuspended(c *call) { b.record(notice{index: c.index, suspended: true}) }

// end reports the batch done once observers have its result events.
func (b *Batch) end() {
	if !b.ending {
		b.ending = true
		b.decideStop()
		if b.hooks != nil && !b.after() {
			return // abandoned in an After hook: a pool worker ends the batch
		}
	}
	if b.tk.opts.batchEnd && !b.obs.empty() {
		b.emitBatchEnd()
	}
	if b.trace != nil {
		failed := 0
		for _, r := range b.results {
			if r.IsError() {
				failed++
			}
		}
		b.trace.End(failed)
	}
	if fl := b.obs.flushers; len(fl) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), max(b.tk.opts.flushTimeout, time.Millisecond))
		for _, f := range fl {
			if err := f.Flush(ctx); err != nil {
				b.tk.log.Warn().Str("run", b.ID()).Err(err).Msgf("toolstream: %T did not hand the run's events on in time", f)
			}
		}
		cancel()
	}
	b.flush.release()
	if d := b.tk.opts.flushTimeout; b.flush.wait(d) {
		b.tk.log.Warn().Str("run", b.ID()).Dur("waited", d).Msg("toolstream: observers did not take all result events in time")
	}
	b.mu.Lock()
	b.ended = true
	locals := b.locals
	b.locals = nil
	if b.done != nil {
		close(b.done)
	}
	b.changed.Broadcast()
	b.mu.Unlock()
	if locals != nil {
		locals.clear()
	}
	if b.unwatch != nil {
		b.unwatch()
	}
	if b.counted {
		b.tk.untrack(b)
	}
}

// notStarted is the cause of a call the batch's interruption kept from
// starting.
func (b *Batch) notStarted(c *call) error {
	if preState(c.preErr) == events.StateInterrupted {
		return c.preErr // its resolver did not return (unknown.go)
	}
	cause := b.err()
	if g := b.guard.Load(); g != nil {
		if hook, ok := g.abandonedHook(); ok {
			return hookAbandonedErr(c.call.Name, hook, b.tk.opts.cancelGrace, cause)
		}
	}
	return &callError{kind: ErrInterrupted, cause: cause,
		msg: fmt.Sprintf("tool %q was not run: the run was cancelled before the call started (%v)", shownName(c.call.Name), cause)}
}

// A StartOption changes how one batch starts ([Session.Start],
// [Session.Run]).
type StartOption func(*Batch)

// WithOutcome gives call index of the batch its outcome without running
// it, as [BatchPlan.Decide] would, but before any batch hook sees the
// batch: hooks find it decided ([BatchPlan.Decided]), so a batch approval
// does not ask a person about it. No interceptor and no handler sees the
// call; its events are a start, the outcome's content as deltas and the
// result, as for any other call. Use [Failure] for a refusal the model
// reads: an agent loop refuses a call the model's reply was cut in this
// way. An index outside the batch is ignored, and a malformed call (a bad
// or duplicate id) keeps its own failure. A later hook may still decide the
// call otherwise.
func WithOutcome(index int, out Outcome) StartOption {
	return func(b *Batch) {
		if index >= 0 && index < len(b.calls) {
			b.calls[index].decide(out)
		}
	}
}
