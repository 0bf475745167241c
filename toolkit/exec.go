package toolkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
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
	inline    bool // executed by the run's driver goroutine
	em        stream.Emitter

	mu        sync.Mutex
	stopWatch func() bool // external calls: stops the suspension watcher
	seq       uint64
	started   time.Time
	running   bool
	content   content
	meta      map[string]any
	finished  bool

	result Result // set once by finish; read after the run is done
}

var _ stream.Sink = (*call)(nil)

// startedAt returns when the call started.
func (c *call) startedAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started
}

// scope returns the call's context as the engine's scope.
func (c *call) scope() *scope { return c.Context.(*scope) }

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
		if c.scope().timedOut() {
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
	args, err := c.tool.prepare(c.call.Args)
	if err != nil {
		c.finish(StateError, nil, err)
		return true
	}
	if c.tool.spec.External {
		c.suspendExternal()
		return true
	}

	c.em.Init(c, listening)
	parts, err := c.invoke(stream.NewContext(c, &c.em), args)
	switch {
	case err == nil:
		return c.finish(StateSuccess, parts, nil)
	case errors.Is(err, ErrPanic):
		return c.finish(StateError, nil, err)
	case c.Err() != nil:
		state, cerr := c.contextFailure(err)
		return c.finish(state, parts, cerr)
	default:
		return c.finish(StateError, parts, err)
	}
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

// onSuspensionEnd runs when a suspended external call's context ends.
func (c *call) onSuspensionEnd() {
	c.run.sess.unsuspend(c)
	state, err := c.contextFailure(nil)
	c.finish(state, nil, err)
}

// contextFailure classifies a call whose context ended: its own deadline
// (timeout) or the run's cancellation (interrupted). handlerErr is what the
// handler returned, if it did.
func (c *call) contextFailure(handlerErr error) (State, error) {
	name := c.call.Name
	suffix := ""
	if handlerErr != nil {
		suffix = ": " + handlerErr.Error()
	}
	if c.scope().timedOut() {
		cause := handlerErr
		if cause == nil {
			cause = context.DeadlineExceeded
		}
		return StateTimeout, &callError{kind: ErrTimeout, cause: cause,
			msg: fmt.Sprintf("tool %q timed out after %v%s", name, c.timeout, suffix)}
	}
	cause := c.run.err()
	if cause == nil {
		cause = context.Cause(c) // the caller's context, seen through ours
	}
	if handlerErr != nil {
		cause = errors.Join(cause, handlerErr)
	}
	return StateInterrupted, &callError{kind: ErrInterrupted, cause: cause,
		msg: fmt.Sprintf("tool %q was interrupted (%v)%s", name, cause, suffix)}
}

// suspendExternal parks a call of an external tool until Session.Submit, its
// deadline or the run's end.
func (c *call) suspendExternal() {
	// Everything happens under c.mu so that a Submit, which finishes the call
	// under c.mu too, always comes after the suspension notice.
	c.mu.Lock()
	if c.finished {
		c.mu.Unlock()
		return
	}
	if err := c.run.sess.suspend(c); err != nil {
		c.mu.Unlock()
		c.finish(StateError, nil, &callError{kind: ErrInvalidCall, cause: err,
			msg: fmt.Sprintf("call %q of tool %q cannot be suspended: %v", c.call.ID, c.call.Name, err)})
		return
	}
	if c.observed() {
		ev, body := newEvent[events.Suspend](c, events.TypeSuspend)
		body.Reason = "external"
		ev.Suspend = body
		c.dispatch(ev, nil)
	}
	c.run.completed <- ^c.index
	c.stopWatch = context.AfterFunc(c, c.onSuspensionEnd)
	c.mu.Unlock()
	c.releaseSlot() // waiting outside uses no local capacity
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
	c.finished = true
	for _, p := range parts {
		c.addDelta(p)
	}
	if err != nil && state.IsError() {
		c.addDelta(events.Text("Error: " + err.Error()))
	}
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
	stop := c.stopWatch
	c.mu.Unlock()

	if stop != nil {
		stop()
	}
	c.logResult(res)
	c.run.complete(c, res)
	return true
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
	for _, o := range c.run.obs.inline {
		c.run.tk.deliverInline(o.obs, ev)
	}
	for _, mb := range c.run.obs.boxes {
		if f != nil {
			f.add()
		}
		mb.push(item{ev: ev, flush: f})
	}
}

// addDelta appends to the content and emits a delta event. c.mu must be held.
func (c *call) addDelta(p Part) {
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

// Progress implements stream.Sink.
func (c *call) Progress(message string, fraction float64, data json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished || !c.observed() {
		return
	}
	if !c.run.obs.acceptsProgress() {
		c.seq++ // the gap tells observers downstream that progress was dropped
		return
	}
	ev, body := newEvent[progressBody](c, events.TypeProgress)
	body.Message, body.Data = message, data
	if fraction >= 0 {
		body.fraction = fraction
		body.Fraction = &body.fraction
	}
	ev.Progress = &body.Progress
	c.dispatch(ev, nil)
}

// Delta implements stream.Sink.
func (c *call) Delta(p Part) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished {
		return stream.ErrClosed
	}
	c.addDelta(p)
	return nil
}

// SetMeta implements stream.Sink.
func (c *call) SetMeta(key string, value any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished {
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
