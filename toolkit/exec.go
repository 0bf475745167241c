package toolkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/stream"
)

// errCallDeadline is the cancellation cause of a call's own deadline, which
// tells a timeout apart from the caller cancelling the run.
var errCallDeadline = errors.New("call deadline exceeded")

// call is the engine's state for one call. It is the stream.Sink of the
// call's emitter, and the context its handler runs with: the embedded
// Context is the call's deadline context, and Value answers callKey with the
// call itself (one allocation less per call than a context.WithValue).
type call struct {
	context.Context

	run    *Run
	index  int
	call   Call
	tool   *Tool // nil for unknown tools
	preErr error // set when the call fails before running

	timeout   time.Duration
	holdsSlot atomic.Bool
	inline    bool   // executed by the run's driver goroutine
	group     *group // the group the call runs in
	em        stream.Emitter
	ext       chan extResult // external calls: what Session.Submit hands over

	argsIn   json.RawMessage // the arguments prepared last, and the result
	argsPrep prepared
	inv      Invocation
	chained  bool     // interceptors wrap the call: outcomes hand out copies
	attempt  int      // how many times the tool started; under mu
	values   sync.Map // Invocation.CallValues

	mu       sync.Mutex
	cur      *scope // the scope the call runs on now; it changes on resume
	filters  []func(Part) Part
	seq      uint64
	dropped  uint64 // progress declined by every observer since the last one built
	started  time.Time
	running  bool
	content  content
	meta     map[string]any
	finished bool

	result Result // set once by finish; read after the run is done
}

var _ stream.Sink = (*call)(nil)

// startedAt returns when the call started.
func (c *call) startedAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started
}

// Value implements context.Context.
func (c *call) Value(key any) any {
	if key == (callKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// parallel reports whether the call may overlap its neighbours. Calls that
// fail before running never touch anything, so they do not split a group.
func (c *call) parallel() bool {
	return c.tool == nil || c.preErr != nil || c.tool.spec.ConcurrencySafe
}

func (c *call) external() bool { return c.tool != nil && c.tool.spec.External }

func (c *call) setTimeout() {
	c.timeout = c.run.tk.opts.timeout
	if c.tool != nil {
		switch t := c.tool.spec.Timeout; {
		case t > 0:
			c.timeout = t
		case t < 0:
			c.timeout = 0
		case c.tool.spec.External:
			c.timeout = 0 // people and browsers take their time
		}
	}
}

func (c *call) releaseSlot() {
	if c.holdsSlot.CompareAndSwap(true, false) {
		<-c.run.sem
	}
}

// exec runs the call. It reports false only when the call was abandoned
// (reported while its handler still ran): the caller is then a goroutine
// that returned late and must not touch the run again.
func (c *call) exec() bool {
	c.mu.Lock()
	if c.Err() != nil {
		// The deadline passed or the run was cancelled between the slot and
		// here: the call never starts (and no watcher would cover it).
		c.mu.Unlock()
		if c.currentScope().timedOut() {
			c.finishUnstarted(StateTimeout, &callError{kind: ErrTimeout, cause: context.DeadlineExceeded,
				msg: fmt.Sprintf("tool %q timed out after %v before it could start", c.call.Name, c.timeout)})
		} else {
			c.finishUnstarted(c.run.interruptedBeforeStart(c))
		}
		return true
	}
	c.started = time.Now()
	c.running = true
	listening := c.observed()
	if listening {
		ev, body := newEvent[events.Start](c, events.TypeStart)
		body.Args, body.Index = c.call.Args, c.index
		ev.Start = body
		c.dispatch(ev, nil)
	}
	c.mu.Unlock()

	if c.preErr != nil {
		c.finish(StateError, nil, c.refinePreErr())
		return true
	}
	if v := c.run.vis; v != nil {
		if err := v.Allow(c, c.run.sess, c.tool); err != nil {
			c.finish(StateError, nil, &callError{kind: ErrUnavailable, cause: err, msg: err.Error()})
			return true
		}
	}
	c.em.Init(c, listening)
	inv := &c.inv
	*inv = Invocation{Session: c.run.sess.id, Call: c.call, Tool: c.tool, c: c}
	var out Outcome
	if len(c.run.tk.ics.Load().list) == 0 {
		out = c.core(c, inv) // no interceptors: no chain to build
	} else {
		c.chained = true
		out = c.run.tk.chainFor(c.tool)(c, inv)
	}
	return c.finishOutcome(out)
}

// runCore is the center of every interceptor chain. It is a plain function,
// not a method value, so that a chain built once serves every call.
func runCore(ctx context.Context, inv *Invocation) Outcome { return inv.c.core(ctx, inv) }

// core runs the tool itself: the center of the interceptor chain. It may run
// several times for one call (a retry); each run starts the content over.
//
// Each run is an attempt with its own number. Only the latest attempt may
// write: an attempt an interceptor gave up on (a per-attempt timeout whose
// handler ignored the cancellation) can no longer stream or add to the
// content, so it cannot leak into the attempt after it.
func (c *call) core(ctx context.Context, inv *Invocation) Outcome {
	c.mu.Lock()
	c.attempt++
	n := c.attempt
	if c.content.len() > 0 && !c.finished {
		c.resetContent() // a new attempt: what the last one streamed is void
	}
	c.mu.Unlock()
	if ctx.Err() != nil {
		state, err := c.ctxFailure(ctx, nil)
		return c.outcome(n, state, nil, err)
	}
	args, err := c.prepareArgs(inv.Call.Args)
	if err != nil {
		return c.outcome(n, StateError, nil, err)
	}
	if c.tool.spec.External {
		return c.waitExternal(ctx, n)
	}
	em := &c.em // the first attempt writes through the call itself
	if n > 1 {
		em = stream.NewEmitter(&attemptSink{c: c, n: n}, c.em.Listening())
	}
	parts, err := c.invoke(stream.NewContext(ctx, em), args)
	switch {
	case err == nil:
		return c.outcome(n, StateSuccess, parts, nil)
	case errors.Is(err, ErrPanic):
		return c.outcome(n, StateError, nil, err)
	case ctx.Err() != nil:
		state, cerr := c.ctxFailure(ctx, err)
		return c.outcome(n, state, parts, cerr)
	default:
		return c.outcome(n, StateError, parts, err)
	}
}

// attemptSink is the stream.Sink of the second and later attempts.
type attemptSink struct {
	c *call
	n int
}

func (s *attemptSink) Progress(message string, fraction float64, data json.RawMessage) {
	s.c.progress(s.n, message, fraction, data)
}
func (s *attemptSink) Delta(p Part) error            { return s.c.delta(s.n, p) }
func (s *attemptSink) SetMeta(key string, value any) { s.c.setMeta(s.n, key, value) }

// prepareArgs checks arguments, reusing the last result when an attempt
// runs with the same ones.
func (c *call) prepareArgs(args json.RawMessage) (prepared, error) {
	if c.argsIn != nil && sameSlice(args, c.argsIn) {
		return c.argsPrep, nil
	}
	p, err := c.tool.prepare(args)
	if err != nil {
		return prepared{}, err
	}
	if len(args) > 0 {
		c.argsIn, c.argsPrep = args, p
	}
	return p, nil
}

// sameSlice reports whether a is b (the same array and length, not merely
// equal contents).
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// addLast appends what the handler returned and, for a failure, the line
// that tells the model about it, as the last deltas. c.mu must be held.
func (c *call) addLast(state State, parts []Part, err error) {
	for _, p := range parts {
		c.addDelta(p)
	}
	if err != nil && state.IsError() {
		c.addDelta(events.Text("Error: " + err.Error()))
	}
}

// outcome appends what the handler returned (and the line that tells the
// model about a failure) as the last deltas and takes the content so far.
func (c *call) outcome(attempt int, state State, parts []Part, err error) Outcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished || attempt != c.attempt {
		return Outcome{State: state, Err: err}
	}
	c.addLast(state, parts, err)
	content := c.content.parts()
	if c.chained {
		// Interceptors get their own copy: one that edits it in place must
		// not edit the call's record of what was streamed.
		content = slices.Clone(content)
	}
	return Outcome{State: state, Content: content, Err: err}
}

// refinePreErr lists, for an unknown tool, what this session can call rather
// than everything registered.
func (c *call) refinePreErr() error {
	ue, ok := c.preErr.(*UnknownToolError)
	if !ok || c.run.vis == nil {
		return c.preErr
	}
	tools, err := c.run.sess.Tools(c)
	if err != nil {
		return c.preErr
	}
	return unknownTool(ue.Name, tools)
}

func (c *call) invoke(ctx context.Context, args prepared) (parts []Part, err error) {
	defer func() {
		if v := recover(); v != nil {
			stack := debug.Stack()
			c.run.tk.log.Error().Str("tool", c.call.Name).Str("call", c.call.ID).
				Interface("panic", v).Bytes("stack", stack).Msg("toolstream: tool panicked")
			parts, err = nil, &PanicError{Tool: c.call.Name, Value: v, Stack: stack}
		}
	}()
	if c.tool.typed != nil {
		return c.tool.typed(ctx, args.tree)
	}
	raw, err := args.bytes()
	if err != nil {
		return nil, err
	}
	return c.tool.handler(ctx, raw)
}

// abandon reports a running call whose context ended and whose handler did
// not return within the grace period. The handler's goroutine is left to
// finish on its own; its later writes are refused.
// It reports whether it finished the call.
func (c *call) abandon() bool {
	c.mu.Lock()
	running := c.running && !c.finished
	c.mu.Unlock()
	if !running {
		return false
	}
	state, err := c.contextFailure(nil)
	return c.finish(state, nil, err)
}

// contextFailure classifies a call whose context ended, seen from the scope
// it runs on now.
func (c *call) contextFailure(handlerErr error) (State, error) {
	return c.ctxFailure(c.currentScope(), handlerErr)
}

// ctxFailure classifies a call whose context ctx ended: its own deadline
// (timeout) or the run's cancellation (interrupted). handlerErr is what the
// handler returned, if it did.
func (c *call) ctxFailure(ctx context.Context, handlerErr error) (State, error) {
	name := c.call.Name
	suffix := ""
	if handlerErr != nil {
		suffix = ": " + handlerErr.Error()
	}
	s, _ := ctx.Value(scopeKey{}).(*scope)
	ownDeadline := s != nil && s.timedOut()
	// A deadline of an interceptor's own (a per-attempt timeout) is a
	// timeout too, unless the run itself is being stopped.
	innerDeadline := !ownDeadline && errors.Is(ctx.Err(), context.DeadlineExceeded) && c.run.err() == nil
	if ownDeadline || innerDeadline {
		// The cause matches context.DeadlineExceeded even when the handler
		// returned an error of its own (a closed socket, say).
		cause := handlerErr
		if cause == nil {
			cause = context.DeadlineExceeded
		} else if !errors.Is(cause, context.DeadlineExceeded) {
			cause = errors.Join(context.DeadlineExceeded, cause)
		}
		after := c.timeout
		if innerDeadline {
			after = time.Since(c.startedAt()).Round(time.Millisecond)
		}
		return StateTimeout, &callError{kind: ErrTimeout, cause: cause,
			msg: fmt.Sprintf("tool %q timed out after %v%s", name, after, suffix)}
	}
	why := c.run.err()
	if why == nil {
		why = context.Cause(c) // the caller's context, seen through ours
	}
	cause := why
	msg := fmt.Sprintf("tool %q was interrupted (%v)", name, why)
	// A handler that returns the context's error says nothing new: say it once.
	if handlerErr != nil && !errors.Is(handlerErr, why) {
		cause = errors.Join(why, handlerErr)
		msg += suffix
	}
	return StateInterrupted, &callError{kind: ErrInterrupted, cause: cause, msg: msg}
}

// extResult is what Session.Submit (or Session.Close) hands a waiting
// external call.
type extResult struct {
	state State
	parts []Part
	err   error
}

// waitExternal parks a call of an external tool until Session.Submit, its
// deadline or the run's end.
func (c *call) waitExternal(ctx context.Context, attempt int) Outcome {
	// Registration, the suspend event and the notice happen under c.mu, and
	// Submit needs the registration: so the notice always comes first.
	c.mu.Lock()
	if c.ext == nil {
		c.ext = make(chan extResult, 1)
	}
	if err := c.run.sess.suspend(c); err != nil {
		c.mu.Unlock()
		return c.outcome(attempt, StateError, nil, &callError{kind: ErrInvalidCall, cause: err,
			msg: fmt.Sprintf("call %q of tool %q cannot be suspended: %v", c.call.ID, c.call.Name, err)})
	}
	c.announceSuspension("external")
	c.mu.Unlock()
	c.releaseSlot() // waiting outside uses no local capacity
	select {
	case r := <-c.ext:
		return c.outcome(attempt, r.state, r.parts, r.err)
	case <-ctx.Done():
		c.run.sess.unsuspend(c)
		select {
		case r := <-c.ext: // submitted just in time
			return c.outcome(attempt, r.state, r.parts, r.err)
		default:
		}
		state, err := c.ctxFailure(ctx, nil)
		return c.outcome(attempt, state, nil, err)
	}
}

// announceSuspension emits the suspend event and the run's notice. c.mu must
// be held.
func (c *call) announceSuspension(reason string) {
	if c.observed() {
		ev, body := newEvent[events.Suspend](c, events.TypeSuspend)
		body.Reason = reason
		ev.Suspend = body
		c.dispatch(ev, nil)
	}
	c.run.notifySuspended(c)
}

// suspend implements Invocation.Suspend.
func (c *call) suspend(reason string) (context.Context, func() context.Context) {
	g := c.group
	wait := g.callScope(c, 0) // no deadline: only the run's end stops a wait
	c.mu.Lock()
	c.cur = wait
	c.announceSuspension(reason)
	c.mu.Unlock()
	c.releaseSlot()
	return wait, func() context.Context {
		s := g.callScope(c, c.timeout)
		c.mu.Lock()
		c.cur = s
		c.mu.Unlock()
		return s
	}
}

// currentScope returns the scope the call runs on now.
func (c *call) currentScope() *scope {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}

// finishUnstarted reports a call that never left the queue.
func (c *call) finishUnstarted(state State, err error) {
	c.finish(state, nil, err)
}

// finish makes the call's result final: the remaining content becomes the
// last deltas, the result event goes out, the run learns of it. Only the
// first finish counts; it reports whether this one did.
func (c *call) finish(state State, parts []Part, err error) bool {
	c.mu.Lock()
	if c.finished {
		c.mu.Unlock()
		return false
	}
	c.addLast(state, parts, err)
	c.completeLocked(state, err)
	return true
}

// finishOutcome makes an interceptor chain's outcome the call's result. When
// the chain replaced the content, the deltas start over (a reset delta, then
// the new content), so that they still add up to the result.
func (c *call) finishOutcome(out Outcome) bool {
	c.mu.Lock()
	if c.finished {
		c.mu.Unlock()
		return false
	}
	if cur := c.content.parts(); !sameSlice(out.Content, cur) && !events.EqualContent(out.Content, cur) {
		c.resetContent()
		for _, p := range out.Content {
			c.addDelta(p)
		}
	}
	state := out.State
	if state == "" {
		state = StateSuccess
	}
	c.completeLocked(state, out.Err)
	return true
}

// completeLocked emits the result and hands it to the run. c.mu must be
// held; it is released.
func (c *call) completeLocked(state State, err error) {
	c.finished = true
	now := time.Now()
	res := Result{Call: c.call, State: state, Content: c.content.parts(), Err: err, Meta: c.meta, Started: c.started}
	if !c.started.IsZero() {
		res.Duration = now.Sub(c.started)
	}
	if c.observed() {
		ev, body := newEvent[events.Result](c, events.TypeResult)
		ev.Time = now
		body.State, body.Content, body.Meta, body.Err = state, res.Content, res.Meta, err
		body.DurationMS = float64(res.Duration) / float64(time.Millisecond)
		if err != nil {
			body.Error = err.Error()
		}
		ev.Result = body
		c.dispatch(ev, &c.run.flush)
	}
	c.running = false
	c.mu.Unlock()
	c.logResult(res)
	c.run.complete(c, res)
}

func (c *call) logResult(res Result) {
	log := &c.run.tk.log
	var e = log.Debug()
	if res.IsError() {
		e = log.Info()
	}
	if !e.Enabled() {
		return
	}
	e.Str("session", c.run.sess.id).Str("run", c.run.ID()).Str("call", c.call.ID).Str("tool", c.call.Name).
		Str("state", string(res.State)).Dur("duration", res.Duration).Err(res.Err).Msg("toolstream: call finished")
}

// observed reports whether the run has observers.
func (c *call) observed() bool {
	return !c.run.obs.empty()
}

// eventBox puts an event and its body in one allocation.
type eventBox[B any] struct {
	ev   events.Event
	body B
}

// newEvent returns the next event of the call. c.mu must be held.
func newEvent[B any](c *call, typ events.Type) (*events.Event, *B) {
	b := &eventBox[B]{}
	c.seq++
	b.ev = events.Event{
		Version: events.Version, Type: typ, Session: c.run.sess.id,
		Call: c.call.ID, Tool: c.call.Name, Seq: c.seq, Time: time.Now(),
	}
	return &b.ev, &b.body
}

// dispatch hands an event to every observer. c.mu must be held so that each
// observer sees the call's events in sequence order.
func (c *call) dispatch(ev *events.Event, f *flush) {
	c.run.obs.dispatch(c.run.tk, ev, f)
}

// addDelta passes a delta through the call's filters, appends it to the
// content and emits a delta event. c.mu must be held.
func (c *call) addDelta(p Part) {
	for _, f := range c.filters {
		p = f(p)
	}
	if p.IsEmpty() {
		return
	}
	c.content.add(p)
	if c.observed() {
		ev, body := newEvent[Part](c, events.TypeDelta)
		*body = p
		ev.Delta = body
		c.dispatch(ev, nil)
	}
}

// progressBody keeps the fraction in the event's allocation.
type progressBody struct {
	events.Progress
	fraction float64
}

// resetContent voids the content so far and tells observers with a reset
// delta. c.mu must be held.
func (c *call) resetContent() {
	c.content = content{}
	if c.observed() {
		ev, body := newEvent[Part](c, events.TypeDelta)
		*body = events.Text("")
		ev.Delta, ev.Reset = body, true
		c.dispatch(ev, nil)
	}
}

// Progress implements stream.Sink for the call's first attempt.
func (c *call) Progress(message string, fraction float64, data json.RawMessage) {
	c.progress(1, message, fraction, data)
}

func (c *call) progress(attempt int, message string, fraction float64, data json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished || !c.observed() || attempt != c.attempt {
		return
	}
	if !c.run.obs.acceptsProgress() {
		c.dropped++ // said on the next progress event built (Progress.Dropped)
		return
	}
	ev, body := newEvent[progressBody](c, events.TypeProgress)
	body.Message, body.Data = message, data
	body.Dropped, c.dropped = c.dropped, 0
	if fraction >= 0 {
		body.fraction = fraction
		body.Fraction = &body.fraction
	}
	ev.Progress = &body.Progress
	c.dispatch(ev, nil)
}

// Delta implements stream.Sink for the call's first attempt.
func (c *call) Delta(p Part) error { return c.delta(1, p) }

func (c *call) delta(attempt int, p Part) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished || attempt != c.attempt {
		return stream.ErrClosed
	}
	c.addDelta(p)
	return nil
}

// SetMeta implements stream.Sink for the call's first attempt.
func (c *call) SetMeta(key string, value any) { c.setMeta(1, key, value) }

func (c *call) setMeta(attempt int, key string, value any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished || attempt != c.attempt && attempt != 0 {
		return
	}
	if c.meta == nil {
		c.meta = make(map[string]any)
	}
	c.meta[key] = value
}

// content accumulates deltas by the rule of events.AppendPart, without
// quadratic copying for long text streams.
type content struct {
	list    []Part
	tail    strings.Builder
	hasTail bool
}

func (ct *content) len() int {
	if ct.hasTail {
		return len(ct.list) + 1
	}
	return len(ct.list)
}

func (ct *content) add(p Part) {
	if p.Type == events.PartText {
		ct.tail.WriteString(p.Text)
		ct.hasTail = true
		return
	}
	ct.flushTail()
	ct.list = append(ct.list, p)
}

func (ct *content) flushTail() {
	if ct.hasTail {
		ct.list = append(ct.list, events.Text(ct.tail.String()))
		ct.tail.Reset()
		ct.hasTail = false
	}
}

// parts returns the content, never nil: "content" is always an array on
// the wire.
func (ct *content) parts() []Part {
	ct.flushTail()
	if ct.list == nil {
		return []Part{}
	}
	return ct.list
}
