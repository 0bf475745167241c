package toolkit

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/stream"
)

// output is a call's output, and the stream.Sink its tool writes to: its
// content (the concatenation of its deltas, through its stream filters),
// its metadata, its events and their numbering, the progress not built
// since the last that was, and which attempt may still write (the fence:
// only the latest; attemptSink is an earlier one's sink).
// Locking: every field but c and em (set before the tool runs) is under the
// call's lock, o.c.mu: the sink's methods take it, and the call's life
// holds it to end the call, so that the result event is the call's last.
type output struct {
	c        *call          // whose output: its identity, its batch's observers, its trace
	em       stream.Emitter // the first attempt's emitter, over this sink (call.Value)
	filters  *filtering     // the stream filters of a call interceptors wrap, nil before
	seq      uint64         // events numbered so far
	dropped  uint32         // progress events not built since the last one that was; told by the next progress or the result
	attempt  int32          // how many times the tool started; only the latest writes
	finished bool
	content  content
	meta     map[string]any
}

// StreamFilter sees a call's deltas before anyone else and may hold text
// back until it knows what it is: a redactor that must not let half of a
// secret out before it has seen the other half. The engine calls its
// methods one at a time, under the call's lock: they must be quick and
// must not call back into the call.
type StreamFilter interface {
	// Filter returns what goes out in place of p: nothing yet, p as it is
	// or changed, and what it held back before p.
	Filter(p events.Part) []events.Part
	// Flush returns everything held back. It is called when an attempt's
	// content is complete: what the handler returned has gone through
	// Filter, and the result is about to be taken.
	Flush() []events.Part
	// Reset drops what is held back: the content started over (a retry, or
	// an interceptor replaced the result).
	Reset()
}

// partFilter is a filter that holds nothing back.
type partFilter func(events.Part) events.Part

func (f partFilter) Filter(p events.Part) []events.Part { return []events.Part{f(p)} }
func (f partFilter) Flush() []events.Part               { return nil }
func (f partFilter) Reset()                             {}

// filtering is a call's stream filters, in the allocation of its chained
// (FilterStream adds them).
type filtering struct {
	list   []StreamFilter
	broken error // a filter panicked: the output is withheld and the call fails
}

var (
	_ stream.Sink     = (*output)(nil)
	_ stream.Resetter = (*output)(nil)
	_ stream.Resetter = (*attemptSink)(nil)
)

// newAttempt starts an attempt of the tool and returns its number. What an
// earlier attempt streamed is void: a reset delta says so.
func (o *output) newAttempt() int {
	o.c.mu.Lock()
	defer o.c.mu.Unlock()
	o.attempt++
	if o.content.len() > 0 && !o.finished {
		o.resetContent()
	}
	return int(o.attempt)
}

// attempts returns how many times the tool started.
func (o *output) attempts() int {
	o.c.mu.Lock()
	defer o.c.mu.Unlock()
	return int(o.attempt)
}

// final reports whether the call's result is final.
func (o *output) final() bool {
	o.c.mu.Lock()
	defer o.c.mu.Unlock()
	return o.finished
}

// addLast appends what the handler returned (one part, or several) and,
// for a failure, the line that tells the model about it, as the last
// deltas. o.c.mu must be held.
func (o *output) addLast(state events.State, one events.Part, parts []events.Part, err error) {
	if !one.IsEmpty() {
		o.addDelta(one)
	}
	for _, p := range parts {
		o.addDelta(p)
	}
	if err != nil && state.IsError() {
		o.addDelta(events.Text("Error: " + err.Error()))
	}
}

// outcome is the end of attempt n: what the handler returned (and the line
// that tells the model about a failure) become the last deltas, and the
// content so far is the outcome's. An attempt that is no longer the latest
// adds nothing.
func (o *output) outcome(attempt int, state events.State, one events.Part, parts []events.Part, err error) Result {
	o.c.mu.Lock()
	defer o.c.mu.Unlock()
	if o.finished || int32(attempt) != o.attempt {
		return Result{State: state, Err: err}
	}
	o.addLast(state, one, parts, err)
	o.flushFilters()
	content := o.content.parts()
	if o.filters != nil {
		// Interceptors get their own copy: one that edits it in place must
		// not edit the call's record of what was streamed.
		content = slices.Clone(content)
	}
	return Result{State: state, Content: content, Err: err}
}

// replace makes content the call's, when it is not already: the deltas
// start over (a reset delta, then the new content) so that they still add
// up to the result. o.c.mu must be held.
func (o *output) replace(content []events.Part) {
	cur := o.content.parts()
	if sameSlice(content, cur) || events.EqualContent(content, cur) {
		return
	}
	if len(cur) > 0 || o.filters != nil && len(o.filters.list) > 0 {
		o.resetContent() // void what went out (or a filter holds)
	}
	for _, p := range content {
		o.addDelta(p)
	}
	o.flushFilters()
}

// broken returns why a stream filter broke the output, or nil. o.c.mu must
// be held.
func (o *output) broken() error {
	if o.filters == nil {
		return nil
	}
	return o.filters.broken
}

// withhold fails a call whose stream filter broke closed: none of its
// output goes out, whatever its ending, and the message does not pass
// through the filters again. It returns the call's state and error. o.c.mu
// must be held.
func (o *output) withhold() (events.State, error) {
	o.resetContent()
	o.putDelta(events.Text(fmt.Sprintf("Error: the output of tool %q was withheld: a stream filter failed on it. This is a fault in the application, not in the call",
		shownName(o.c.call.Name))))
	return events.StateError, o.filters.broken
}

// result ends the output with the call's result event and returns the
// result. o.c.mu must be held.
func (o *output) result(state events.State, err error, started time.Time) Result {
	o.finished = true
	c := o.c
	res := Result{Call: c.call, State: state, Content: o.content.parts(), Err: err, Meta: o.meta, Started: started}
	if !started.IsZero() {
		res.Duration = time.Since(started) // the monotonic clock alone
	}
	if o.emits() {
		ev, body := newEvent[events.Result](o, events.TypeResult)
		ev.Time = time.Now()
		body.State, body.Content, body.Meta, body.Err = state, res.Content, res.Meta, err
		body.DurationMS = float64(res.Duration) / float64(time.Millisecond)
		// Progress not built since the last one that was: no progress
		// event follows to tell it, so the result does.
		body.Dropped, o.dropped = uint64(o.dropped), 0
		if err != nil {
			body.Error = err.Error()
		}
		ev.Result = body
		o.dispatch(ev, &c.batch.flush)
	}
	return res
}

// observed reports whether the batch has observers.
func (o *output) observed() bool { return !o.c.batch.obs.empty() }

// emits reports whether the call's events are built: for observers, or for
// its trace (which takes all but deltas and progress on its own).
func (o *output) emits() bool { return o.c.trace() != nil || !o.c.batch.obs.empty() }

// eventBox puts an event and its body in one allocation.
type eventBox[B any] struct {
	ev   events.Event
	body B
}

// newEvent returns the next event of the call. o.c.mu must be held.
func newEvent[B any](o *output, typ events.Type) (*events.Event, *B) {
	b := &eventBox[B]{}
	o.seq++
	c := o.c
	b.ev = events.Event{
		Version: events.Version, Type: typ, Session: c.batch.sess.id, Agent: c.batch.agent,
		Call: c.call.ID, Tool: c.call.Name, Seq: o.seq, Time: time.Now(),
	}
	if t := c.trace(); t != nil {
		b.ev.Trace = t
	}
	return &b.ev, &b.body
}

// dispatch hands an event to the call's trace (recovering a panic as for
// an inline observer) and every observer. o.c.mu must be held so that each
// observer sees the call's events in sequence order.
func (o *output) dispatch(ev *events.Event, f *flush) {
	b := o.c.batch
	if t := o.c.trace(); t != nil {
		b.tk.deliverInline(t, ev)
	}
	b.obs.dispatch(b.tk, ev, f)
}

// addDelta passes a delta through the call's filters, appends what comes
// out to the content and emits it as delta events. o.c.mu must be held.
func (o *output) addDelta(p events.Part) {
	if o.filters == nil || len(o.filters.list) == 0 {
		o.putDelta(p)
		return
	}
	o.filterFrom(0, []events.Part{p})
}

// filterFrom passes parts through the filters from the i-th on and puts
// out what comes out of the last. o.c.mu must be held.
func (o *output) filterFrom(i int, parts []events.Part) {
	for _, f := range o.filters.list[i:] {
		var next []events.Part
		for _, p := range parts {
			out, ok := o.filter(f, filterPart, p)
			if !ok {
				return
			}
			next = append(next, out...)
		}
		parts = next
	}
	for _, p := range parts {
		o.putDelta(p)
	}
}

// flushFilters puts out what the filters hold back, each filter's through
// the ones after it. o.c.mu must be held.
func (o *output) flushFilters() {
	if o.filters == nil {
		return
	}
	for i, f := range o.filters.list {
		held, ok := o.filter(f, filterFlush, events.Part{})
		if !ok {
			return
		}
		if len(held) > 0 {
			o.filterFrom(i+1, held)
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
// when it finishes (finishOutcome). o.c.mu must be held.
func (o *output) filter(f StreamFilter, step filterStep, p events.Part) (out []events.Part, ok bool) {
	if o.filters.broken != nil {
		return nil, false
	}
	defer func() {
		if v := recover(); v != nil {
			o.filters.broken = o.c.panicked("a stream filter", v)
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
// and emits it. o.c.mu must be held.
func (o *output) putDelta(p events.Part) {
	if p.IsEmpty() {
		return
	}
	o.content.add(p)
	if o.observed() {
		ev, body := newEvent[events.Part](o, events.TypeDelta)
		*body = p
		ev.Delta = body
		o.dispatch(ev, nil)
	}
}

// resetContent voids the content so far and tells observers with a reset
// delta. o.c.mu must be held.
func (o *output) resetContent() {
	o.content = content{}
	if o.filters != nil {
		for _, f := range o.filters.list {
			if _, ok := o.filter(f, filterReset, events.Part{}); !ok {
				break
			}
		}
	}
	if o.emits() {
		ev, body := newEvent[events.Part](o, events.TypeDelta)
		*body = events.Text("")
		ev.Delta, ev.Reset = body, true
		o.dispatch(ev, nil)
	}
}

// emit sends a call-level event of a free type (Invocation.Emit); a call
// reported already sends nothing.
func (o *output) emit(typ events.Type, data json.RawMessage) {
	o.c.mu.Lock()
	defer o.c.mu.Unlock()
	if o.finished || !o.emits() {
		return
	}
	ev, _ := newEvent[struct{}](o, typ)
	ev.Data = data
	o.dispatch(ev, nil)
}

// progressBody keeps the fraction in the event's allocation.
type progressBody struct {
	events.Progress
	fraction float64
}

// Progress implements stream.Sink for the call's first attempt.
func (o *output) Progress(message string, fraction float64, data json.RawMessage) {
	o.progress(1, message, fraction, data)
}

func (o *output) progress(attempt int, message string, fraction float64, data json.RawMessage) {
	o.c.mu.Lock()
	defer o.c.mu.Unlock()
	if o.finished || !o.observed() || int32(attempt) != o.attempt {
		return
	}
	obs := o.c.batch.obs
	if !obs.acceptsProgress() {
		o.dropped++ // told with the next progress event that is built
		return
	}
	ev, body := newEvent[progressBody](o, events.TypeProgress)
	body.Message, body.Data, body.Dropped = message, data, uint64(o.dropped)
	o.dropped = 0
	if fraction >= 0 {
		body.fraction = fraction
		body.Fraction = &body.fraction
	}
	ev.Progress = &body.Progress
	o.dispatch(ev, nil)
}

// Delta implements stream.Sink for the call's first attempt.
func (o *output) Delta(p events.Part) error { return o.delta(1, p) }

func (o *output) delta(attempt int, p events.Part) error {
	o.c.mu.Lock()
	defer o.c.mu.Unlock()
	if o.finished || int32(attempt) != o.attempt {
		return stream.ErrCallFinished
	}
	o.addDelta(p)
	return nil
}

// Reset implements stream.Resetter for the call's first attempt.
func (o *output) Reset() error { return o.reset(1) }

func (o *output) reset(attempt int) error {
	o.c.mu.Lock()
	defer o.c.mu.Unlock()
	if o.finished || int32(attempt) != o.attempt {
		return stream.ErrCallFinished
	}
	o.resetContent()
	return nil
}

// SetMeta implements stream.Sink for the call's first attempt.
func (o *output) SetMeta(key string, value any) { o.setMeta(1, key, value) }

// setMeta records metadata from attempt n, or from an interceptor (0).
func (o *output) setMeta(attempt int, key string, value any) {
	o.c.mu.Lock()
	defer o.c.mu.Unlock()
	if o.finished || int32(attempt) != o.attempt && attempt != 0 {
		return
	}
	if o.meta == nil {
		o.meta = make(map[string]any)
	}
	o.meta[key] = value
}

// metaValue returns metadata set so far.
func (o *output) metaValue(key string) (any, bool) {
	o.c.mu.Lock()
	defer o.c.mu.Unlock()
	v, ok := o.meta[key]
	return v, ok
}

// attemptSink is the stream.Sink of the second and later attempts.
type attemptSink struct {
	o *output
	n int
}

func (s *attemptSink) Progress(message string, fraction float64, data json.RawMessage) {
	s.o.progress(s.n, message, fraction, data)
}
func (s *attemptSink) Delta(p events.Part) error     { return s.o.delta(s.n, p) }
func (s *attemptSink) SetMeta(key string, value any) { s.o.setMeta(s.n, key, value) }
func (s *attemptSink) Reset() error                  { return s.o.reset(s.n) }

// content accumulates deltas by the rule of events.AppendPart, without
// quadratic copying for long text streams.
type content struct {
	list []events.Part
	tail string // text not yet in list: the last text delta, or
	more []byte // the text deltas since it, when there are several
}

func (ct *content) len() int {
	if ct.tail != "" || len(ct.more) > 0 {
		return len(ct.list) + 1
	}
	return len(ct.list)
}

func (ct *content) add(p events.Part) {
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
func (ct *content) parts() []events.Part {
	ct.flushTail()
	if ct.list == nil {
		return []events.Part{}
	}
	return ct.list
}
