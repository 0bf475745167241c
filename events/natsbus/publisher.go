package natsbus

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/toolstream/toolstream/events"
)

// Publisher sends a toolkit's events to NATS. Attach it as an inline
// observer (toolkit.WithInlineObserver): Observe only queues the event, and
// one goroutine encodes and publishes, so tools never wait for NATS.
//
// The queue is bounded for progress only: when more progress events than
// the queue size wait, newer ones are dropped, and the next progress event
// of that call published says how many (Progress.Dropped). Start, delta,
// suspend, result and session-level events are never dropped while NATS is
// reachable. Sequence numbers on the wire are the publisher's own, gap-free
// per call from 1.
//
// When NATS is unreachable, the connection buffers publishes until it is back
// (nats.go's reconnect buffer); what cannot be buffered is counted and logged
// (Stats.Undelivered). In durable mode a publish that fails is retried with
// the same Nats-Msg-Id, so the stream stores it once.
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
	waiters   chan struct{} // closed and replaced when handled moves
	published atomic.Uint64
	dropped   atomic.Uint64
	failed    atomic.Uint64
	retried   atomic.Uint64

	// Owned by the publishing goroutine.
	calls map[callKey]*wire
	buf   []byte

	retryMu sync.Mutex
	retries []*nats.Msg
}

type callKey struct{ session, call string }

// wire is the publisher's per-call numbering.
type wire struct {
	seq     uint64 // last sequence published
	lastIn  uint64 // last toolkit sequence seen, to count drops
	dropped uint64 // progress dropped since the last published progress
	nonce   string // tells apart two calls that reuse a call id

	// Built once per call: publishing should not build strings per event.
	subjectBase string                 // "<prefix>.<session>.<call>."
	subjects    map[events.Type]string // full subjects by type
	idBase      string                 // "<session>.<call>.<nonce>."
}

func (p *Publisher) newWire(ev *events.Event) *wire {
	w := &wire{nonce: nuid.Next(), subjects: make(map[events.Type]string, 5)}
	prefix, tokens := p.bus.subjects.CallBase(ev.Session, ev.Call)
	w.subjectBase = prefix + tokens
	w.idBase = tokens + w.nonce + "."
	return w
}

func (w *wire) subject(t events.Type) string {
	s, ok := w.subjects[t]
	if !ok {
		s = w.subjectBase + events.EncodeToken(string(t))
		w.subjects[t] = s
	}
	return s
}

// PublisherStats are the publisher's counters.
type PublisherStats struct {
	// Published counts events handed to NATS.
	Published uint64
	// DroppedProgress counts progress events dropped because the queue was
	// full (NATS slower than the tools).
	DroppedProgress uint64
	// Undelivered counts events NATS refused and that were given up on.
	Undelivered uint64
	// Retried counts durable publishes retried after a failure.
	Retried uint64
}

func newPublisher(b *Bus, limit int) *Publisher {
	p := &Publisher{
		bus: b, limit: limit,
		wake: make(chan struct{}, 1), done: make(chan struct{}), waiters: make(chan struct{}),
		calls: make(map[callKey]*wire),
	}
	go p.run()
	return p
}

// Observe queues an event for NATS. It never blocks.
func (p *Publisher) Observe(ev *events.Event) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.failed.Add(1)
		return
	}
	if ev.Type == events.TypeProgress {
		n := p.progress.Load()
		if n >= int64(p.limit) {
			p.mu.Unlock()
			p.dropped.Add(1)
			return
		}
		p.progress.Store(n + 1)
	}
	p.queue = append(p.queue, ev)
	p.enqueued++
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// AcceptProgress tells a toolkit, before it builds a progress event, whether
// the publisher would queue it. When NATS is behind it declines: the event
// is dropped without being made (and counted as dropped).
func (p *Publisher) AcceptProgress() bool {
	if p.progress.Load() < int64(p.limit) {
		return true
	}
	p.dropped.Add(1)
	return false
}

// Flush waits until every event queued before the call has been handed to
// NATS (or given up on), or until ctx ends. A toolkit calls it before a run
// reports its results, so that results returned means events published.
func (p *Publisher) Flush(ctx context.Context) error {
	p.mu.Lock()
	target := p.enqueued
	p.mu.Unlock()
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
			p.mu.Unlock()
			for _, ev := range batch {
				p.publish(ev)
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
	p.waitMu.Lock()
	close(p.waiters)
	p.waiters = make(chan struct{})
	p.waitMu.Unlock()
}

// publish numbers, encodes and sends one event.
func (p *Publisher) publish(in *events.Event) {
	key := callKey{in.Session, in.Call}
	w := p.calls[key]
	if w == nil {
		w = p.newWire(in)
		p.calls[key] = w
	}
	if in.Seq > w.lastIn+1 {
		w.dropped += in.Seq - w.lastIn - 1 // only progress is ever dropped
	}
	if in.Seq > w.lastIn {
		w.lastIn = in.Seq
	}
	ev := *in
	w.seq++
	ev.Seq = w.seq
	if ev.Type == events.TypeProgress && w.dropped > 0 && ev.Progress != nil {
		pr := *ev.Progress
		pr.Dropped += w.dropped
		ev.Progress = &pr
		w.dropped = 0
	}
	if ev.Type == events.TypeResult {
		delete(p.calls, key)
	}

	p.buf = events.AppendJSON(p.buf[:0], &ev)
	subject := w.subject(ev.Type)
	if p.bus.js == nil {
		if err := p.bus.nc.Publish(subject, p.buf); err != nil {
			p.giveUp(subject, err)
			return
		}
		p.published.Add(1)
		return
	}
	m := nats.NewMsg(subject)
	m.Data = append([]byte(nil), p.buf...) // kept until acknowledged
	// The id is derived from session, call and sequence; the nonce drawn when
	// the publisher first saw the call keeps two calls that reuse an id (a
	// rerun conversation, a new process) from passing for duplicates.
	m.Header.Set(jetstream.MsgIDHeader, w.idBase+strconv.FormatUint(ev.Seq, 10))
	if _, err := p.bus.js.PublishMsgAsync(m); err != nil {
		p.retry(m, err)
		return
	}
	p.published.Add(1)
}

const maxRetries = 1 << 16

func (p *Publisher) retrying() bool {
	p.retryMu.Lock()
	defer p.retryMu.Unlock()
	return len(p.retries) > 0
}

// retry keeps a failed durable publish for another attempt.
func (p *Publisher) retry(m *nats.Msg, err error) {
	p.retryMu.Lock()
	defer p.retryMu.Unlock()
	if len(p.retries) >= maxRetries {
		p.giveUp(m.Subject, err)
		return
	}
	p.retries = append(p.retries, m)
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
		p.retries = append(pending, p.retries...)
		p.retryMu.Unlock()
		return
	}
	for _, m := range pending {
		p.retried.Add(1)
		if _, err := p.bus.js.PublishMsgAsync(m); err != nil {
			p.retry(m, err)
		}
	}
}

func (p *Publisher) giveUp(subject string, err error) {
	p.failed.Add(1)
	p.bus.log.Error().Err(err).Str("subject", subject).Msg("toolstream: event not delivered to NATS")
}

// close stops taking events, publishes what is queued and waits (bounded by
// ctx) for durable publishes to be acknowledged.
func (p *Publisher) close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if p.bus.js != nil {
		select {
		case <-p.bus.js.PublishAsyncComplete():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
