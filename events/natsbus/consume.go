package natsbus

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/events"
	wirenames "github.com/toolstream/toolstream/internal/wire"
)

// ErrNotDurable is returned by operations that need the JetStream stream
// (replay, resume) on a bus opened without WithDurable.
var ErrNotDurable = errors.New("events: the bus is not durable (open it with WithDurable)")

// Subscribe delivers the live events on subject (for example
// Subjects().Session(id), or Subjects().AllOfType(TypeResult)) to fn, one at
// a time in arrival order. Messages that are not valid events are skipped
// and logged. Unsubscribe the returned subscription to stop.
func (b *Bus) Subscribe(subject string, fn func(ev *events.Event)) (*nats.Subscription, error) {
	sub, err := b.nc.Subscribe(subject, func(m *nats.Msg) {
		ev, err := events.Decode(m.Data)
		if err != nil {
			b.log.Warn().Err(err).Str("subject", m.Subject).Msg("toolstream: skipping a message that is not an event")
			return
		}
		ev.Trace = traceOf(m.Header)
		fn(ev)
	})
	if err != nil {
		return nil, fmt.Errorf("events: subscribing to %s: %w", subject, err)
	}
	return sub, nil
}

// Replay delivers the events stored on subject from stream sequence from on
// (1, or 0, for everything kept), then the new ones as they are published, in
// stream order and each once, to fn with its stream sequence. A subscriber
// that remembers the last sequence it handled resumes with from = last+1 and
// misses nothing. It needs a durable bus. Call stop to end the replay: when
// it returns, fn is not running and will not be called again, and the
// JetStream consumer the replay used is deleted. fn runs on one
// goroutine at a time and must not call stop itself.
func (b *Bus) Replay(ctx context.Context, subject string, from uint64, fn func(seq uint64, ev *events.Event)) (stop func(), err error) {
	return b.replayRaw(ctx, subject, from, func(seq uint64, subj string, data []byte, h nats.Header) {
		ev, err := events.Decode(data)
		if err != nil {
			b.log.Warn().Err(err).Str("subject", subj).Msg("toolstream: skipping a message that is not an event")
			return
		}
		ev.Trace = traceOf(h)
		fn(seq, ev)
	})
}

// traceOf reads an event's trace context from its message's headers: an
// events.TraceContext, or nil when the message has none.
func traceOf(h nats.Header) events.Trace {
	tp := h.Get(wirenames.HeaderTraceParent)
	if tp == "" {
		return nil
	}
	return events.TraceContext{Parent: tp, State: h.Get(wirenames.HeaderTraceState)}
}

// replayRaw is Replay without decoding.
func (b *Bus) replayRaw(ctx context.Context, subject string, from uint64, fn func(seq uint64, subject string, data []byte, h nats.Header)) (stop func(), err error) {
	if b.js == nil {
		return nil, ErrNotDurable
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if from > 1 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	}
	cons, err := b.js.OrderedConsumer(ctx, b.durable.Stream, cfg)
	if err != nil {
		err, _ = denied(b.nc, err)
		return nil, fmt.Errorf("events: replaying %s from %d: %w", subject, from, err)
	}
	// nats.go may still be inside (or about to enter) the callback when its
	// consumer reports closed. fn runs holding mu, so stop, taking mu to set
	// stopped, waits for a callback in flight and turns later ones away: fn
	// never runs after stop returns (nor on two goroutines at once).
	var (
		mu      sync.Mutex
		stopped bool
	)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		md, err := m.Metadata()
		if err != nil {
			return
		}
		fn(md.Sequence.Stream, m.Subject(), m.Data(), m.Headers())
	})
	if err != nil {
		deleteConsumer(b, b.nc, b.js, cons)
		return nil, fmt.Errorf("events: replaying %s: %w", subject, err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			cc.Stop()
			mu.Lock()
			stopped = true
			mu.Unlock()
			<-cc.Closed()
			// A stopped ordered consumer stays on the server until it has
			// been idle for 5 minutes: delete it now.
			deleteConsumer(b, b.nc, b.js, cons)
		})
	}, nil
}
