package toolkit

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/stream"
)

// output is what a call has put out so far: its content (the concatenation
// of its deltas), its events' numbering, and which attempt may still write.
// It lives in the call, under c.mu; the call's methods in this file are the
// stream.Sink its emitter writes to.
type output struct {
	seq      uint64 // events numbered so far
	dropped  uint32 // progress events not built since the last one that was; told by the next progress or the result
	attempt  int32  // how many times the tool started; only the latest writes
	finished bool
	content  content
	meta     map[string]any
}

var (
	_ stream.Sink     = (*call)(nil)
	_ stream.Resetter = (*call)(nil)
	_ stream.Resetter = (*attemptSink)(nil)
)

// newAttempt starts an attempt of the tool and returns its number. What an
// earlier attempt streamed is void: a reset delta says so.
func (c *call) newAttempt() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out.attempt++
	if c.out.content.len() > 0 && !c.out.finished {
		c.resetContent()
	}
	return int(c.out.attempt)
}

// addLast appends what the handler returned (one part, or several) and,
// for a failure, the line that tells the model about it, as the last
// deltas. c.mu must be held.
func (c *call) addLast(state State, one Part, parts []Part, err error) {
	if !one.IsEmpty() {
		c.addDelta(one)
	}
	for _, p := range parts {
		c.addDelta(p)
	}
	if err != nil && state.IsError() {
		c.addDelta(events.Text("Error: " + err.Error()))
	}
}

// outcome is the end of attempt n: what the handler returned (and the line
// that tells the model about a failure) become the last deltas, and the
// content so far is the outcome's. An attempt that is no longer the latest
// adds nothing.
func (c *call) outcome(attempt int, state State, one Part, parts []Part, err error) Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.out.finished || int32(attempt) != c.out.attempt {
		return Result{State: state, Err: err}
	}
	c.addLast(state, one, parts, err)
	c.flushFilters()
	content := c.out.content.parts()
	if c.ic != nil {
		// Interceptors get their own copy: one that edits it in place must
		// not edit the call's record of what was streamed.
		content = slices.Clone(content)
	}
	return Result{State: state, Content: content, Err: err}
}

// observed reports whether the batch has observers.
func (c *call) observed() bool { return !c.batch.obs.empty() }

// emits reports whether the call's events are built: for observers, or for
// its trace (which takes all but deltas and progress on its own).
func (c *call) emits() bool { return c.trace() != nil || !c.batch.obs.empty() }

// eventBox puts an event and its body in one allocation.
type eventBox[B any] struct {
	ev   events.Event
	body B
}

// newEvent returns the next event of the call. c.mu must be held.
func newEvent[B any](c *call, typ events.Type) (*events.Event, *B) {
	b := &eventBox[B]{}
	c.out.seq++
	b.ev = events.Event{
		Version: events.Version, Type: typ, Session: c.batch.sess.id, Agent: c.batch.agent,
		Call: c.call.ID, Tool: c.call.Name, Seq: c.out.seq, Time: time.Now(),
	}
	if t := c.trace(); t != nil {
		b.ev.Trace = t
	}
	return &b.ev, &b.body
}

// dispatch hands an event to every observer. c.mu must be held so that each
// observer sees the call's events in sequence order.
func (c *call) dispatch(ev *events.Event, f *flush) {
	if c.trace() != nil {
		c.traceEvent(ev)
	}
	c.batch.obs.dispatch(c.batch.tk, ev, f)
}

// addDelta passes a delta through the call's filters, appends what comes
// out to the content and emits it as delta events. c.mu must be held.
func (c *call) addDelta(p Part) {
	if c.ic == nil || len(c.ic.filters) == 0 {
		c.putDelta(p)
		return
	}
	c.filterFrom(0, []Part{p})
}

// filterFrom passes parts through the filters from the i-th on and puts
// out what comes out of the last. c.mu must be held.
func (c *call) filterFrom(i int, parts []Part) {
	for _, f := range c.ic.filters[i:] {
		var next []Part
		for _, p := range parts {
			out, ok := c.filter(f, filterPart, p)
			if !ok {
				return
			}
			next = append(next, out...)
		}
		parts = next
	}
	for _, p := range parts {
		c.putDelta(p)
	}
}

// flushFilters puts out what the filters hold back, each filter's through
// the ones after it. c.mu must be held.
func (c *call) flushFilters() {
	if c.ic == nil {
		return
	}
	for i, f := range c.ic.filters {
		held, ok := c.filter(f, filterFlush, Part{})
		if !ok {
			return
		}
		if len(held) > 0 {
			c.filterFrom(i+1, held)
		}
	}
}

// filterStep is what filter asks of a stream filter.
type filterStep uint8

const (
	filterPart  filterStep = iota // Filter(p)
	filterFlush                   // Flush()
	filterReset                   // Reset()
)

// filter runs one step of stream filter f. A filter that panicked, now or
// before, breaks the call's output: nothing passes any more (a filter may
// be all that stands between a secret and the model), and the call fails
// when it finishes (finishOutcome). c.mu must be held.
func (c *call) filter(f StreamFilter, step filterStep, p Part) (out []Part, ok bool) {
	if c.ic.broken != nil {
		return nil, false
	}
	defer func() {
		if v := recover(); v != nil {
			c.ic.broken = c.panicked("a stream filter", v)
			out, ok = nil, false
		}
	}()
	switch step {
	case filterFlush:
		return f.Flush(), true
	case filterReset:
		f.Reset()
		return nil, true
	}
	return f.Filter(p), true
}

// putDelta appends a delta that went through the filters to the content
// and emits it. c.mu must be held.
func (c *call) putDelta(p Part) {
	if p.IsEmpty() {
		return
	}
	c.out.content.add(p)
	if c.observed() {
		ev, body := newEvent[Part](c, events.TypeDelta)
		*body = p
		ev.Delta = body
		c.dispatch(ev, nil)
	}
}

// resetContent voids the content so far and tells observers with a reset
// delta. c.mu must be held.
func (c *call) resetContent() {
	c.out.content = content{}
	if c.ic != nil {
		for _, f := range c.ic.filters {
			if _, ok := c.filter(f, filterReset, Part{}); !ok {
				break
			}
		}
	}
	if c.emits() {
		ev, body := newEvent[Part](c, events.TypeDelta)
		*body = events.Text("")
		ev.Delta, ev.Reset = body, true
		c.dispatch(ev, nil)
	}
}

// progressBody keeps the fraction in the event's allocation.
type progressBody struct {
	events.Progress
	fraction float64
}

// Progress implements stream.Sink for the call's first attempt.
func (c *call) Progress(message string, fraction float64, data json.RawMessage) {
	c.progress(1, message, fraction, data)
}

func (c *call) progress(attempt int, message string, fraction float64, data json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.out.finished || !c.observed() || int32(attempt) != c.out.attempt {
		return
	}
	if !c.batch.obs.acceptsProgress() {
		c.out.dropped++ // told with the next progress event that is built
		return
	}
	ev, body := newEvent[progressBody](c, events.TypeProgress)
	body.Message, body.Data, body.Dropped = message, data, uint64(c.out.dropped)
	c.out.dropped = 0
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
	if c.out.finished || int32(attempt) != c.out.attempt {
		return stream.ErrCallFinished
	}
	c.addDelta(p)
	return nil
}

// Reset implements stream.Resetter for the call's first attempt.
func (c *call) Reset() error { return c.reset(1) }

func (c *call) reset(attempt int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.out.finished || int32(attempt) != c.out.attempt {
		return stream.ErrCallFinished
	}
	c.resetContent()
	return nil
}

// SetMeta implements stream.Sink for the call's first attempt.
func (c *call) SetMeta(key string, value any) { c.setMeta(1, key, value) }

// setMeta records metadata from attempt n, or from an interceptor (0).
func (c *call) setMeta(attempt int, key string, value any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.out.finished || int32(attempt) != c.out.attempt && attempt != 0 {
		return
	}
	if c.out.meta == nil {
		c.out.meta = make(map[string]any)
	}
	c.out.meta[key] = value
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
func (s *attemptSink) Reset() error                  { return s.c.reset(s.n) }

// content accumulates deltas by the rule of events.AppendPart, without
// quadratic copying for long text streams.
type content struct {
	list []Part
	tail string // text not yet in list: the last text delta, or
	more []byte // the text deltas since it, when there are several
}

func (ct *content) len() int {
	if ct.tail != "" || len(ct.more) > 0 {
		return len(ct.list) + 1
	}
	return len(ct.list)
}

func (ct *content) add(p Part) {
	if p.Type != events.PartText {
		ct.flushTail()
		ct.list = append(ct.list, p)
		return
	}
	switch {
	case ct.tail == "" && len(ct.more) == 0:
		ct.tail = p.Text // one text delta is kept as is: no copy
	case len(ct.more) == 0:
		ct.more = append(append(make([]byte, 0, 2*(len(ct.tail)+len(p.Text))), ct.tail...), p.Text...)
		ct.tail = ""
	default:
		ct.more = append(ct.more, p.Text...)
	}
}

func (ct *content) flushTail() {
	text := ct.tail
	if len(ct.more) > 0 {
		text = string(ct.more)
	}
	if text != "" {
		ct.list = append(ct.list, events.Text(text))
	}
	ct.tail, ct.more = "", nil
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
