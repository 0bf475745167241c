package natsbus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/toolstream/toolstream/events"
	wirenames "github.com/toolstream/toolstream/internal/wire"
)

// Publisher sends a toolkit's events to NATS. Attach it as an inline
// observer (toolkit.WithInlineObserver): Observe only queues the event, and
// one goroutine encodes and publishes, so tools never wait for NATS.
//
// The queue is bounded for progress only: when more progress events than
// the queue size wait, newer ones are dropped, and the next progress event
// of that call published says how many (Progress.Dropped, added to the
// drops the toolkit reports there), or its result when no progress follows
// (Result.Dropped, likewise). Start, delta, suspend, result and
// session-level events are never dropped while NATS is reachable.
// Sequence numbers on the wire are gap-free per call from 1: the
// publisher numbers a call's events itself (an event sent in pieces takes
// one number per piece). Session-level events keep the toolkit's
// per-session numbers, so the publisher keeps no state per session.
//
// Every message fits the server's max payload (the connection's
// MaxPayload, less room for headers): an event too large for one goes out
// as docs/events.md says under "Large content" ([events.Fit]). What cannot
// be carried at all (a session-level event whose data alone is too large)
// is counted in Stats.Undelivered and logged.
//
// When NATS is unreachable, the connection buffers publishes until it is back
// (nats.go's reconnect buffer); what cannot be buffered is counted and logged
// (Stats.Undelivered). In durable mode a publish that fails for a passing
// reason (no connection, no answer) is retried with the same Nats-Msg-Id,
// so the stream stores it once; one the server refuses (a message over a
// stream's size limit) is counted and logged once, never retried. Bus.Close
// waits for the acknowledgements (see there) and counts what it gives up.
type Publisher struct {
	bus   *Bus
	limit int

	mu       sync.Mutex
	queue    []*events.Event
	spare    []*events.Event
	progress atomic.Int64 // progress events queued; changed under mu, read by AcceptProgress without it
	enqueued uint64
	closed   bool
	wake     chan struct{}
	done     chan struct{}

	handled   atomic.Uint64 // events taken out of the queue and handed to NATS (or given up)
	waitMu    sync.Mutex
	waiters   chan struct{} // closed and replaced when handled moves, if someone waits
	flushing  atomic.Int32  // Flush calls waiting
	published atomic.Uint64
	dropped   atomic.Uint64
	// declined counts progress events AcceptProgress declined and no event
	// has told dropped yet (settleDeclined).
	declined atomic.Uint64
	failed   atomic.Uint64
	retried  atomic.Uint64

	cut      atomic.Uint64
	split    atomic.Uint64
	lateTold atomic.Bool // an event observed after close was logged

	// drops counts, per call, progress events Observe dropped since the
	// batch being published was taken; under mu. A call's result queued
	// meanwhile takes its count (tellDrops).
	drops map[callKey]uint64

	// Owned by the publishing goroutine.
	calls   map[callKey]*wire
	buf     []byte
	payload int    // the server's max payload, read once a batch
	nonce   string // tells apart session-level events of two publishers

	// Durable publishes not yet acknowledged, and the end of retrying: a
	// message passes from in flight to retries (or to given up) under
	// retryMu, so that when close gives up, each one is counted once.
	retryMu sync.Mutex
	retries []outMsg
	// Handed to PublishMsgAsync, neither acknowledged nor failed: one whose
	// publish fails asynchronously was handed over, so is counted in
	// Published (handOff takes one that fails at once back out). A set, not a count: the async
	// handlers of the bus's JetStream context also see what other code
	// publishes on it (Bus.JetStream), which is none of the publisher's
	// business.
	inflight map[*nats.Msg]struct{}
	stopped  bool // close gave up: what was in flight or waiting is counted

	// unsent counts core publishes made since the connection was last seen
	// connected: they wait in nats.go's reconnect buffer, which Close
	// drops. A reconnect sends the buffer before the connection reports
	// connected again: unsentAt is the connection's count of reconnections
	// when they were buffered, and once it has moved they were sent.
	unsent   atomic.Int64
	unsentAt atomic.Uint64
}

// buffered returns how many core publishes wait in the reconnect buffer:
// those made while the connection was away, unless it has reconnected
// since (which sent them).
func (p *Publisher) buffered() int64 {
	n := p.unsent.Load()
	if n == 0 || p.bus.nc.IsConnected() || p.bus.nc.Stats().Reconnects != p.unsentAt.Load() {
		return 0
	}
	return n
}

type callKey struct{ session, call string }

// outMsg is a durable publish waiting to be handed to NATS again, and
// whether it is counted in Published (it was handed over once already).
type outMsg struct {
	m       *nats.Msg
	counted bool
}

// wire is the publisher's per-call numbering. It lives from a call's
// first event to its result.
type wire struct {
	seq     uint64 // last sequence published
	dropped uint64 // progress dropped here since the last published progress
	nonce   string // tells apart two calls that reuse a call id

	// Built once per call, in one string: publishing should not build
	// strings per event.
	idBase      string                 // "<session>.<call>.<nonce>."
	subjectBase string                 // "<prefix>.<session>.<call>."
	subjects    [len(callTypes)]string // the subjects of callTypes
}

func (p *Publisher) newWire(ev *events.Event) *wire {
	w := &wire{nonce: nuid.Next()}
	prefix, tokens := p.bus.subjects.CallBase(ev.Session, ev.Call)
	size := len(tokens) + len(w.nonce) + 1
	for _, t := range callTypes {
		size += len(prefix) + len(tokens) + len(t) // lifecycle types are tokens as they are
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteString(tokens)
	b.WriteString(w.nonce)
	b.WriteByte('.')
	var ends [len(callTypes)]int
	for i, t := range callTypes {
		b.WriteString(prefix)
		b.WriteString(tokens)
		b.WriteString(string(t))
		ends[i] = b.Len()
	}
	all := b.String()
	w.idBase = all[:len(tokens)+len(w.nonce)+1]
	start := len(w.idBase)
	for i, end := range ends {
		w.subjects[i] = all[start:end]
		start = end
	}
	w.subjectBase = w.subjects[0][:len(prefix)+len(tokens)]
	return w
}

func (w *wire) subject(t events.Type) string {
	if i := slices.Index(callTypes[:], t); i >= 0 {
		return w.subjects[i]
	}
	return w.subjectBase + events.EncodeToken(string(t)) // not a lifecycle type
}

// callTypes are the types of a call's events.
var callTypes = [...]events.Type{events.TypeStart, events.TypeProgress, events.TypeDelta, events.TypeSuspend, events.TypeResult}

// PublisherStats are the publisher's counters.
type PublisherStats struct {
	// Published counts events handed to NATS, each once (a durable
	// publish that failed and was handed over again is counted once).
	Published uint64
	// DroppedProgress counts progress events the publisher did not
	// publish because its queue was full (NATS slower than the tools) or
	// they could not fit in a message: those it dropped and those a
	// toolkit did not build because it declined them (AcceptProgress) and
	// no other gate took them. Each is counted once, when dropped or, for
	// one not built, when the toolkit tells it in the call's next event;
	// so once a call's result is published, the drops its events told on
	// NATS are all counted.
	DroppedProgress uint64
	// Undelivered counts events given up on: NATS refused them for good
	// (the reconnect buffer full while disconnected, a durable publish the
	// server rejected), they could not be made to fit a message, or the
	// bus closed before the server acknowledged them (durable; one whose
	// acknowledgement was lost may be stored all the same) or while they
	// waited in the reconnect buffer (core NATS). Those given up at close
	// that NATS had taken were counted in Published too.
	Undelivered uint64
	// Retried counts durable publishes retried after a failure, or held
	// back while NATS was away and nats.go held as many unacknowledged
	// publishes as it takes (4,096).
	Retried uint64
	// Split counts events too large for one message that went out whole
	// all the same: as several deltas, as chunks, or as a result whose
	// content is its deltas (see docs/events.md, "Large content").
	Split uint64
	// Cut counts events too large for one message that went out with
	// something left out: a start's arguments, a result's meta, the end of
	// a result's error text. Each is also logged.
	Cut uint64
}

func newPublisher(b *Bus, limit int) *Publisher {
	p := makePublisher(b, limit)
	go p.run()
	return p
}

// makePublisher returns a publisher that does not publish until p.run runs.
func makePublisher(b *Bus, limit int) *Publisher {
	return &Publisher{
		bus: b, limit: limit,
		wake: make(chan struct{}, 1), done: make(chan struct{}), waiters: make(chan struct{}),
		calls: make(map[callKey]*wire), nonce: nuid.Next(),
	}
}

// Observe queues an event for NATS. It never blocks.
func (p *Publisher) Observe(ev *events.Event) {
	p.settleDeclined(ev)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.failed.Add(1)
		if !p.lateTold.Swap(true) {
			p.bus.log.Error().Str("session", ev.Session).Str("call", ev.Call).Str("type", string(ev.Type)).
				Msg("toolstream: events observed after the bus closed are not delivered (counted in Stats.Undelivered; told once)")
		}
		return
	}
	if ev.Type == events.TypeProgress {
		n := p.progress.Load()
		if n >= int64(p.limit) {
			if p.drops == nil {
				p.drops = make(map[callKey]uint64)
			}
			// The event goes, the drops it tells do not: they are told
			// with the next one.
			p.drops[callKey{ev.Session, ev.Call}] += 1 + ev.Progress.Dropped
			p.mu.Unlock()
			p.dropped.Add(1)
			return
		}
		p.progress.Store(n + 1)
	} else if ev.Type == events.TypeResult && p.drops != nil {
		ev = p.tellDrops(ev)
	}
	p.queue = append(p.queue, ev)
	p.enqueued++
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// tellDrops returns a result event, or a copy of it that tells the progress
// of its call dropped since the queue was last taken: they came after every
// progress event of the call queued so far, and no progress of the call
// follows its result. (Other observers share ev: it is not changed.) Drops
// from before are the publishing goroutine's to add (wire.dropped). p.mu
// must be held.
func (p *Publisher) tellDrops(ev *events.Event) *events.Event {
	if ev.Result == nil {
		return ev
	}
	key := callKey{ev.Session, ev.Call}
	out, told := ev.WithDropped(p.drops[key])
	if told {
		delete(p.drops, key)
	}
	return out
}

// The publisher is an inline observer with both optional methods the
// engine looks for (toolkit.Observer): this keeps their signatures in step.
var _ interface {
	Observe(*events.Event)
	Flush(context.Context) error
	AcceptProgress() bool
} = (*Publisher)(nil)

// AcceptProgress tells a toolkit, before it builds a progress event, whether
// the publisher would queue it. When NATS is behind it declines: unless
// another gate of the toolkit takes the event, it is dropped without being
// made, and the toolkit tells so in the call's next event (counted as
// dropped then, see settleDeclined).
func (p *Publisher) AcceptProgress() bool {
	if p.progress.Load() < int64(p.limit) {
		return true
	}
	p.declined.Add(1)
	return false
}

// settleDeclined counts as dropped the progress events that ev says were
// not built, as far as the publisher declined them. A decline is not a drop
// by itself: another gate asked after the publisher may take the event,
// which then comes to Observe like any other (queued or dropped there, and
// counted once). Only when every gate declined does the toolkit skip the
// event, and it tells that in the call's next progress event or its result
// (ProgressGate): each one told was declined by the publisher, so the
// count moves from declined to dropped. A count the publisher did not
// decline (an event relayed from elsewhere, the mailbox of a publisher
// attached asynchronously) is not its drop: it goes out as it came.
func (p *Publisher) settleDeclined(ev *events.Event) {
	var told uint64
	switch {
	case ev.Type == events.TypeProgress && ev.Progress != nil:
		told = ev.Progress.Dropped
	case ev.Type == events.TypeResult && ev.Result != nil:
		told = ev.Result.Dropped
	}
	if told == 0 {
		return
	}
	for {
		d := p.declined.Load()
		n := min(d, told)
		if n == 0 {
			return
		}
		if p.declined.CompareAndSwap(d, d-n) {
			p.dropped.Add(n)
			return
		}
	}
}

// Flush waits until every event queued before the call has been handed to
// NATS (or given up on), or until ctx ends. A toolkit calls it before a run
// reports its results, so that results returned means events published.
func (p *Publisher) Flush(ctx context.Context) error {
	p.mu.Lock()
	target := p.enqueued
	p.mu.Unlock()
	if p.handled.Load() >= target {
		return nil
	}
	// Counted before handled is read again: the publishing goroutine adds
	// to handled before it looks at flushing, so one of the two sees the
	// other.
	p.flushing.Add(1)
	defer p.flushing.Add(-1)
	for {
		p.waitMu.Lock()
		ch := p.waiters
		p.waitMu.Unlock()
		if p.handled.Load() >= target {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Stats returns the publisher's counters.
func (p *Publisher) Stats() PublisherStats {
	return PublisherStats{
		Published:       p.published.Load(),
		DroppedProgress: p.dropped.Load(),
		Undelivered:     p.failed.Load(),
		Retried:         p.retried.Load(),
		Split:           p.split.Load(),
		Cut:             p.cut.Load(),
	}
}

func (p *Publisher) run() {
	defer close(p.done)
	for {
		var again *time.Timer
		var againC <-chan time.Time
		if p.retrying() {
			again = time.NewTimer(250 * time.Millisecond)
			againC = again.C
		}
		select {
		case <-p.wake:
		case <-againC:
			p.publishRetries()
			continue
		}
		if again != nil {
			again.Stop()
		}
		for {
			p.mu.Lock()
			batch := p.queue
			p.queue, p.spare = p.spare, nil
			p.progress.Store(0)
			closed := p.closed
			// Drops so far happened after every progress event of this
			// batch (the queue was full of them): they are told on the
			// next progress event of the call after it.
			drops := p.drops
			p.drops = nil
			p.mu.Unlock()
			p.payload = p.limit0()
			for _, ev := range batch {
				p.publish(ev)
			}
			for key, n := range drops {
				if w := p.calls[key]; w != nil {
					w.dropped += n
				}
			}
			if cap(p.buf) > 2*maxPayload {
				p.buf = nil // a large event passed: do not keep its buffer
			}
			if n := len(batch); n > 0 {
				clear(batch)
				p.mu.Lock()
				p.spare = batch[:0]
				p.mu.Unlock()
				p.handled.Add(uint64(n))
				p.notify()
				continue
			}
			p.mu.Lock()
			p.spare = batch
			p.mu.Unlock()
			if closed {
				p.publishRetries()
				return
			}
			break
		}
	}
}

func (p *Publisher) notify() {
	if p.flushing.Load() == 0 {
		return
	}
	p.waitMu.Lock()
	close(p.waiters)
	p.waiters = make(chan struct{})
	p.waitMu.Unlock()
}

// maxPayload is the max payload assumed while the connection has not
// learnt the server's (nats-server's default).
const maxPayload = 1 << 20

// headerRoom is kept free in each message beside the Nats-Msg-Id header.
const headerRoom = 64

// The longest trace header values sent: a traceparent of version 00 is 55
// bytes (later versions may add fields), a tracestate at most 512 by the
// W3C rule. Longer ones are not sent.
const (
	maxTraceParent = 128
	maxTraceState  = 512
)

// traceRoom is what the trace headers take at most in a message, as nats.go
// writes them: the "NATS/1.0" line and the empty line that end the headers,
// and "key: value\r\n" for each.
func traceRoom(t events.Trace) int {
	if t == nil {
		return 0
	}
	return len("NATS/1.0\r\n\r\n") + len(wirenames.HeaderTraceParent) + maxTraceParent + 4 + len(wirenames.HeaderTraceState) + maxTraceState + 4
}

// setTrace puts an event's trace context in a message's headers.
func setTrace(m *nats.Msg, t events.Trace) {
	tp := t.TraceParent()
	if tp == "" || len(tp) > maxTraceParent {
		return
	}
	if m.Header == nil {
		m.Header = nats.Header{}
	}
	m.Header[wirenames.HeaderTraceParent] = []string{tp}
	if ts := t.TraceState(); ts != "" && len(ts) <= maxTraceState {
		m.Header[wirenames.HeaderTraceState] = []string{ts}
	}
}

// publish numbers, encodes and sends one event, in pieces if it does not
// fit in one message.
func (p *Publisher) publish(in *events.Event) {
	if in.Call == "" {
		p.publishSessionEvent(in)
		return
	}
	key := callKey{in.Session, in.Call}
	w := p.calls[key]
	if w == nil {
		w = p.newWire(in)
		p.calls[key] = w
	}
	if in.Type == events.TypeResult {
		defer delete(p.calls, key)
	}
	// Progress dropped here since the call's last published progress: told
	// by the next progress event, or by the result if none came.
	if told, ok := in.WithDropped(w.dropped); ok {
		in, w.dropped = told, 0
	}
	ev := *in
	subject := w.subject(ev.Type)
	idRoom := 0
	if p.bus.js != nil {
		idRoom = len(jetstream.MsgIDHeader) + len(w.idBase) + 20 + headerRoom
	}
	limit := p.payload - idRoom - traceRoom(ev.Trace)
	ev.Seq = w.seq + 1
	// Arguments far too large are not encoded only to be left out: the
	// events of every other call wait while this goroutine works.
	if !events.Exceeds(&ev, limit) {
		p.buf = events.AppendJSON(p.buf[:0], &ev)
		if len(p.buf) <= limit {
			w.seq++
			p.send(subject, w.idBase, ev.Seq, ev.Trace)
			return
		}
	}
	pieces, lossy, err := events.Fit(&ev, limit)
	if err != nil {
		if ev.Type == events.TypeProgress {
			// Progress is for people: dropped, and told on the next one.
			w.dropped += 1 + ev.Progress.Dropped
			p.dropped.Add(1)
			return
		}
		p.giveUp(subject, err)
		return
	}
	p.noteFit(subject, &ev, lossy)
	for i := range pieces {
		w.seq++
		pieces[i].Seq = w.seq
		p.buf = events.AppendJSON(p.buf[:0], &pieces[i])
		p.send(subject, w.idBase, w.seq, ev.Trace)
	}
}

// publishSessionEvent sends a session-level event. It keeps the toolkit's
// per-session sequence number, so that no state is kept per session; its
// message id adds the publisher's nonce and the event's time, so that a
// session closed and opened again (numbering from 1 again) is not taken
// for a duplicate.
func (p *Publisher) publishSessionEvent(ev *events.Event) {
	prefix, tokens := p.bus.subjects.CallBase(ev.Session, "")
	subject := prefix + tokens + events.EncodeToken(string(ev.Type))
	var idBase string
	limit := p.payload - traceRoom(ev.Trace)
	if p.bus.js != nil {
		idBase = tokens + p.nonce + "." + strconv.FormatInt(ev.Time.UnixNano(), 36) + "."
		limit -= len(jetstream.MsgIDHeader) + len(idBase) + 20 + headerRoom
	}
	p.buf = events.AppendJSON(p.buf[:0], ev)
	if len(p.buf) > limit {
		// Only data events reach here, and data cannot be cut.
		_, _, err := events.Fit(ev, limit)
		if err == nil {
			err = events.ErrTooLarge
		}
		p.giveUp(subject, err)
		return
	}
	p.send(subject, idBase, ev.Seq, ev.Trace)
}

// limit0 is the largest message the server takes. It takes the
// connection's lock, which nats.go holds while it writes: once a batch.
func (p *Publisher) limit0() int {
	if n := p.bus.nc.MaxPayload(); n > 0 {
		return int(n)
	}
	return maxPayload
}

// noteFit counts and, when something was left out, logs an event that did
// not fit in one message.
func (p *Publisher) noteFit(subject string, ev *events.Event, lossy bool) {
	if !lossy {
		p.split.Add(1)
		return
	}
	p.cut.Add(1)
	p.bus.log.Warn().Str("subject", subject).Str("type", string(ev.Type)).
		Msg("toolstream: event too large for one NATS message; sent with part of it left out (see docs/events.md, Large content)")
}

// send publishes p.buf on subject; in durable mode with the message id
// idBase+seq. A traced event carries its trace context in headers.
func (p *Publisher) send(subject, idBase string, seq uint64, trace events.Trace) {
	if p.bus.js == nil {
		var err error
		if trace == nil {
			err = p.bus.nc.Publish(subject, p.buf)
		} else {
			m := &nats.Msg{Subject: subject, Data: p.buf}
			setTrace(m, trace)
			err = p.bus.nc.PublishMsg(m)
		}
		if err != nil {
			p.giveUp(subject, err)
			return
		}
		if p.bus.nc.IsConnected() {
			p.unsent.Store(0)
		} else {
			// Those buffered before a reconnection went with it.
			if rc := p.bus.nc.Stats().Reconnects; rc != p.unsentAt.Load() {
				p.unsent.Store(0)
				p.unsentAt.Store(rc)
			}
			p.unsent.Add(1)
		}
		p.published.Add(1)
		return
	}
	m := nats.NewMsg(subject)
	m.Data = append([]byte(nil), p.buf...) // kept until acknowledged
	if trace != nil {
		setTrace(m, trace)
	}
	// The id is derived from session, call and sequence; the nonce drawn when
	// the publisher first saw the call keeps two calls that reuse an id (a
	// rerun conversation, a new process) from passing for duplicates.
	m.Header.Set(jetstream.MsgIDHeader, idBase+strconv.FormatUint(seq, 10))
	p.handOff(m, false)
}

// errGaveUp is why a durable publish is given up at close.
var errGaveUp = errors.New("events: the bus closed before NATS acknowledged the event")

// asyncMaxPending is how many durable publishes nats.go holds unacknowledged
// before a further one waits for room (its stall wait, 200 ms) and fails.
const asyncMaxPending = 4096

// errAway is why a durable publish waits among the retries without being
// tried: NATS is away and nats.go holds as many as it takes.
var errAway = errors.New("events: NATS is away and as many events as nats.go holds wait for it")

// handOff publishes m asynchronously and counts it in flight until the
// server acknowledges it (acked) or the publish fails (retry). The first
// time m is handed to NATS it is counted in Published (counted says it was
// already). Called on the publishing goroutine, or by close once that has
// returned.
func (p *Publisher) handOff(m *nats.Msg, counted bool) {
	p.retryMu.Lock()
	if p.stopped {
		p.retryMu.Unlock()
		p.giveUp(m.Subject, errGaveUp)
		return
	}
	if !p.bus.nc.IsConnected() && p.bus.js.PublishAsyncPending() >= asyncMaxPending {
		// nats.go would make each publish wait 200 ms for room before it
		// fails: the publisher would hand over 5 events a second, and every
		// Flush would wait its whole bound. It waits for NATS here instead.
		p.retryMu.Unlock()
		p.requeue(m, counted, errAway)
		return
	}
	if p.inflight == nil {
		p.inflight = make(map[*nats.Msg]struct{})
	}
	p.inflight[m] = struct{}{}
	p.retryMu.Unlock()
	if _, err := p.bus.js.PublishMsgAsync(m); err != nil {
		// Not handed over: no async handler sees m.
		p.retryMu.Lock()
		_, mine := p.inflight[m]
		delete(p.inflight, m)
		p.retryMu.Unlock()
		if mine {
			p.requeue(m, counted, err)
		}
		return
	}
	if !counted {
		p.published.Add(1)
	}
}

// acked takes a durable publish the server acknowledged out of flight. One
// close gave up on was counted undelivered then; one of other code is not
// in flight here.
func (p *Publisher) acked(m *nats.Msg) {
	p.retryMu.Lock()
	delete(p.inflight, m)
	p.retryMu.Unlock()
}

// permanent reports whether a failed publish would fail again however often
// it is retried: the client or the server refused the message itself.
func permanent(err error) bool {
	if errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrBadSubject) ||
		errors.Is(err, nats.ErrHeadersNotSupported) || errors.Is(err, nats.ErrBadHeaderMsg) {
		return true
	}
	var api *jetstream.APIError
	if errors.As(err, &api) {
		return api.Code >= 400 && api.Code < 500 // a bad request; 5xx may pass
	}
	return false
}

const maxRetries = 1 << 16

func (p *Publisher) retrying() bool {
	p.retryMu.Lock()
	defer p.retryMu.Unlock()
	return len(p.retries) > 0
}

// retry takes a durable publish whose acknowledgement failed out of flight
// and keeps it for another attempt, unless it can never succeed. A message
// not in flight is another's (Bus.JetStream), or one close gave up on and
// counted.
func (p *Publisher) retry(m *nats.Msg, err error) {
	p.retryMu.Lock()
	if _, ok := p.inflight[m]; !ok {
		p.retryMu.Unlock()
		return
	}
	delete(p.inflight, m)
	p.retryMu.Unlock()
	p.requeue(m, true, err) // it was handed over: counted in Published
}

// requeue keeps a durable publish not in flight for another attempt, unless
// it can never succeed.
func (p *Publisher) requeue(m *nats.Msg, counted bool, err error) {
	p.retryMu.Lock()
	if p.stopped {
		p.retryMu.Unlock()
		p.giveUp(m.Subject, errGaveUp)
		return
	}
	if permanent(err) || len(p.retries) >= maxRetries {
		p.retryMu.Unlock()
		p.giveUp(m.Subject, err)
		return
	}
	p.retries = append(p.retries, outMsg{m, counted})
	p.retryMu.Unlock()
	p.bus.log.Debug().Err(err).Str("subject", m.Subject).Msg("toolstream: publish failed; will retry")
	select {
	case p.wake <- struct{}{}: // so that the loop arms its retry timer
	default:
	}
}

func (p *Publisher) publishRetries() {
	p.retryMu.Lock()
	pending := p.retries
	p.retries = nil
	p.retryMu.Unlock()
	if len(pending) == 0 || p.bus.js == nil {
		return
	}
	if !p.bus.nc.IsConnected() {
		p.retryMu.Lock()
		if p.stopped {
			p.retryMu.Unlock()
			for _, o := range pending {
				p.giveUp(o.m.Subject, errGaveUp)
			}
			return
		}
		p.retries = append(pending, p.retries...)
		p.retryMu.Unlock()
		return
	}
	for _, o := range pending {
		p.retried.Add(1)
		p.handOff(o.m, o.counted)
	}
}

func (p *Publisher) giveUp(subject string, err error) {
	p.failed.Add(1)
	p.bus.log.Error().Err(err).Str("subject", subject).Msg("toolstream: event not delivered to NATS")
}

// close stops taking events, publishes what is queued and waits, bounded by
// ctx (closeWait when ctx has no deadline), for durable publishes to be
// acknowledged, retrying the failed ones once NATS is back. What is still
// unacknowledged then is given up: counted in Stats.Undelivered, logged,
// and reported in the error.
func (p *Publisher) close(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, closeWait)
		defer cancel()
	}
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	var err error
	select {
	case <-p.done:
		if p.bus.js != nil {
			err = p.settle(ctx)
		} else {
			err = p.reconnected(ctx)
		}
	case <-ctx.Done():
		err = ctx.Err()
	}
	if n := p.stop(); n > 0 {
		err = errors.Join(err, fmt.Errorf("events: %d events given up at close, not acknowledged by NATS (counted in Stats.Undelivered)", n))
	}
	if n := p.buffered(); n > 0 {
		p.unsent.Store(0)
		p.failed.Add(uint64(n))
		p.bus.log.Error().Int64("events", n).Msg("toolstream: events not delivered to NATS: the bus closed while NATS was away")
		err = errors.Join(err, fmt.Errorf("events: %d events published while NATS was away were still in the reconnect buffer at close (counted in Stats.Undelivered)", n))
	}
	return err
}

// reconnected waits, when core publishes wait in the reconnect buffer,
// until the connection is back (and has sent them) or ctx ends.
func (p *Publisher) reconnected(ctx context.Context) error {
	for p.buffered() > 0 {
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	return nil
}

// closeWait bounds close when its context has no deadline: as long as
// nats.go waits for one acknowledgement.
var closeWait = 10 * time.Second

// settle waits until no durable publish is in flight or waiting for a
// retry, retrying while NATS is reachable, or until ctx ends. Called once
// the publishing goroutine has returned.
func (p *Publisher) settle(ctx context.Context) error {
	for {
		p.publishRetries()
		p.retryMu.Lock()
		inflight, waiting := len(p.inflight), len(p.retries)
		p.retryMu.Unlock()
		if inflight == 0 && waiting == 0 {
			return nil
		}
		var complete <-chan struct{}
		if waiting == 0 {
			complete = p.bus.js.PublishAsyncComplete()
		}
		t := time.NewTimer(250 * time.Millisecond)
		select {
		case <-complete:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		t.Stop()
	}
}

// stop ends retrying: what is in flight or waiting for a retry is given up
// and counted, once. It returns how many.
func (p *Publisher) stop() int {
	p.retryMu.Lock()
	if p.stopped {
		p.retryMu.Unlock()
		return 0
	}
	p.stopped = true
	n := len(p.inflight) + len(p.retries)
	p.inflight, p.retries = nil, nil
	p.retryMu.Unlock()
	if n > 0 {
		p.failed.Add(uint64(n))
		p.bus.log.Error().Int("events", n).Msg("toolstream: events not delivered to NATS: the bus closed before NATS acknowledged them")
	}
	return n
}
