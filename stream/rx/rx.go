// Package rx gives toolstream's events as rxgo observables: from the tools
// of a toolkit in the same process ([Hub]), or from NATS, live ([Live]) or
// replayed from the durable stream ([Replay]); with views that keep what the
// model sees ([ModelVisible]) or what people see ([ProgressOnly]), and one
// that rebuilds each call's result from its deltas ([Accumulate]).
//
// It is apart from package stream so that tools and the engine do not link
// rxgo.
package rx

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/reactivex/rxgo/v2"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
)

// Filter selects events. Empty fields match everything.
type Filter struct {
	Session string
	Call    string
	Tool    string
	Types   []events.Type
}

// Match reports whether ev passes the filter.
func (f Filter) Match(ev *events.Event) bool {
	return (f.Session == "" || ev.Session == f.Session) &&
		(f.Call == "" || ev.Call == f.Call) &&
		(f.Tool == "" || ev.Tool == f.Tool) &&
		(len(f.Types) == 0 || slices.Contains(f.Types, ev.Type))
}

// Subject returns the narrowest NATS subject that covers the filter; Match
// still applies on top (the tool is not part of subjects, and a filter
// with several types subscribes to all types).
func (f Filter) Subject(s events.Subjects) string {
	if f.Session == "" {
		if f.Call == "" && len(f.Types) == 1 {
			return s.AllOfType(f.Types[0])
		}
		return s.All()
	}
	if f.Call != "" {
		if len(f.Types) == 1 {
			return s.Call(f.Session, f.Call, string(f.Types[0]))
		}
		return s.CallAll(f.Session, f.Call)
	}
	return s.Session(f.Session)
}

// ModelVisible keeps the events a model sees: deltas and results.
func ModelVisible(o rxgo.Observable) rxgo.Observable {
	return o.Filter(func(i any) bool {
		ev, ok := i.(*events.Event)
		return ok && (ev.Type == events.TypeDelta || ev.Type == events.TypeResult)
	})
}

// ProgressOnly keeps progress events: what people watch.
func ProgressOnly(o rxgo.Observable) rxgo.Observable {
	return o.Filter(func(i any) bool {
		ev, ok := i.(*events.Event)
		return ok && ev.Type == events.TypeProgress
	})
}

// Hub is the in-process source of observables: attach it to a toolkit as an
// observer (toolkit.WithObserver(hub), asynchronous, so that a slow
// subscriber never slows a tool) and observe the events of its calls without
// NATS. The zero Hub is ready, with no subscribers: hub := &rx.Hub{}.
type Hub struct {
	mu     sync.Mutex                // serializes changes to subs and closed
	subs   atomic.Pointer[[]*hubSub] // copied on change: Observe reads it without a lock
	closed bool
}

type hubSub struct {
	ctx    context.Context
	filter Filter
	ch     chan rxgo.Item
	quit   chan struct{} // closed when the subscription ends
	// Senders hold mu shared; end closes ch holding it exclusively, so that
	// no send can meet a closed channel.
	mu   sync.RWMutex
	once sync.Once
}

// send hands ev over unless the subscription ends (or its context) first.
func (s *hubSub) send(ev *events.Event) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	select {
	case <-s.quit: // ended: ch may be closed
		return
	default:
	}
	select {
	case s.ch <- rxgo.Of(ev):
	case <-s.quit:
	case <-s.ctx.Done():
	}
}

// end completes the subscription's observable. A send waiting for room gives
// up first.
func (s *hubSub) end() {
	s.once.Do(func() {
		close(s.quit)
		s.mu.Lock()
		close(s.ch)
		s.mu.Unlock()
	})
}

// Observe hands ev to every subscriber whose filter matches. It waits for a
// slow subscriber (a hub is meant to be an asynchronous observer) unless
// that subscriber's context ends or the hub is closed.
func (h *Hub) Observe(ev *events.Event) {
	subs := h.subs.Load()
	if subs == nil {
		return
	}
	for _, s := range *subs {
		if s.filter.Match(ev) {
			s.send(ev)
		}
	}
}

// Observable returns the events matching f from now on, until ctx ends or
// the hub is closed. Items hold *events.Event values.
func (h *Hub) Observable(ctx context.Context, f Filter) rxgo.Observable {
	s := &hubSub{ctx: ctx, filter: f, ch: make(chan rxgo.Item, 256), quit: make(chan struct{})}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		s.end()
		return rxgo.FromChannel(s.ch)
	}
	var subs []*hubSub
	if old := h.subs.Load(); old != nil {
		subs = slices.Clone(*old)
	}
	subs = append(subs, s)
	h.subs.Store(&subs)
	h.mu.Unlock()
	context.AfterFunc(ctx, func() { h.remove(s) })
	return rxgo.FromChannel(s.ch, rxgo.WithContext(ctx))
}

func (h *Hub) remove(s *hubSub) {
	h.mu.Lock()
	if old := h.subs.Load(); old != nil {
		if i := slices.Index(*old, s); i >= 0 {
			subs := slices.Delete(slices.Clone(*old), i, i+1)
			h.subs.Store(&subs)
		}
	}
	h.mu.Unlock()
	s.end()
}

// Close ends every observable of the hub.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	subs := h.subs.Swap(nil)
	h.mu.Unlock()
	if subs != nil {
		for _, s := range *subs {
			s.end()
		}
	}
}

// Live returns the events matching f as they are published on the bus (core
// NATS: from now on), until ctx ends.
func Live(ctx context.Context, bus *natsbus.Bus, f Filter) (rxgo.Observable, error) {
	return feed(ctx, f, func(send func(*events.Event)) (func(), error) {
		sub, err := bus.Subscribe(f.Subject(bus.Subjects()), send)
		if err != nil {
			return nil, err
		}
		return func() { _ = sub.Unsubscribe() }, nil
	})
}

// Replay returns the events matching f that the bus's stream keeps, from
// stream sequence from on (0 or 1: everything kept), then new ones as they
// come, until ctx ends. Each event's Stream field holds its stream sequence:
// a subscriber that stops resumes with from = last Stream + 1 and misses
// nothing. It needs a durable bus.
func Replay(ctx context.Context, bus *natsbus.Bus, f Filter, from uint64) (rxgo.Observable, error) {
	return feed(ctx, f, func(send func(*events.Event)) (func(), error) {
		return bus.Replay(ctx, f.Subject(bus.Subjects()), from, func(seq uint64, ev *events.Event) {
			ev.Stream = seq
			send(ev)
		})
	})
}

// feed is the observable of Live and Replay: subscribe starts delivering
// events to send and returns how to stop; once ctx ends, feed stops the
// delivery and completes the observable. A callback still running after
// stop (core NATS gives no such promise) is turned away, never sent on a
// closed channel.
func feed(ctx context.Context, f Filter, subscribe func(send func(*events.Event)) (stop func(), err error)) (rxgo.Observable, error) {
	ch := make(chan rxgo.Item, 1024)
	var mu sync.Mutex
	closed := false
	stop, err := subscribe(func(ev *events.Event) {
		if !f.Match(ev) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return
		}
		select {
		case ch <- rxgo.Of(ev):
		case <-ctx.Done():
		}
	})
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, func() {
		stop()
		mu.Lock()
		closed = true
		close(ch)
		mu.Unlock()
	})
	return rxgo.FromChannel(ch, rxgo.WithContext(ctx)), nil
}

// Rebuilt is a call's model-visible result rebuilt from its deltas, and
// checked against its result event.
type Rebuilt struct {
	Session, Call, Tool string
	// Content is the concatenation of the call's deltas, in sequence order
	// (with the parts of chunked deltas put back together). When the result
	// event left its content out (too large for one NATS message), this is
	// the content.
	Content []events.Part
	// Result is the call's result event body.
	Result *events.Result
	// Mismatch is empty when Content equals Result.Content (or, when the
	// result omits its content, has its size and number of parts);
	// otherwise it says how they differ, or how the deltas were broken.
	Mismatch string
}

// Accumulate rebuilds each call's model-visible result from its delta
// events and emits a Rebuilt when the call's result event arrives.
// Deltas are put in sequence order first, so events that crossed on the way
// still add up; a reset delta starts the content over; the chunks of a part
// too large for one message are put back together ([events.Reassembler]);
// events other than deltas and results are ignored.
//
// Every result is delivered, also after o completed, until ctx ends: the
// reader reads until the observable completes, or ends ctx when it stops
// before. Then the observable completes, whether or not its reader took
// every result, and nothing is left running.
func Accumulate(ctx context.Context, o rxgo.Observable) rxgo.Observable {
	ch := make(chan rxgo.Item)
	go func() {
		defer close(ch)
		send := func(item rxgo.Item) bool {
			select {
			case ch <- item:
				return true
			case <-ctx.Done():
				return false
			}
		}
		pending := map[[2]string][]*events.Event{}
		in := o.Observe()
		for {
			var item rxgo.Item
			var ok bool
			select {
			case item, ok = <-in:
			case <-ctx.Done():
				return
			}
			if !ok {
				return
			}
			if item.E != nil {
				if !send(item) {
					return
				}
				continue
			}
			ev, ok := item.V.(*events.Event)
			if !ok {
				continue
			}
			key := [2]string{ev.Session, ev.Call}
			switch ev.Type {
			case events.TypeDelta:
				pending[key] = append(pending[key], ev)
			case events.TypeResult:
				deltas := pending[key]
				delete(pending, key)
				if !send(rxgo.Of(accumulate(ev, deltas))) {
					return
				}
			}
		}
	}()
	return rxgo.FromChannel(ch)
}

func accumulate(result *events.Event, deltas []*events.Event) Rebuilt {
	slices.SortStableFunc(deltas, func(a, b *events.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	var re events.Reassembler
	var broken []error
	for _, d := range deltas {
		if err := re.Add(d); err != nil {
			broken = append(broken, err)
		}
	}
	if re.Pending() {
		broken = append(broken, errors.New("the chunks of a part stop before its last one"))
	}
	content := re.Content()
	cr := Rebuilt{Session: result.Session, Call: result.Call, Tool: result.Tool, Content: content, Result: result.Result}
	r := result.Result
	switch {
	case r == nil:
		cr.Mismatch = "result event without a result body"
	case len(broken) > 0:
		cr.Mismatch = "broken deltas: " + errors.Join(broken...).Error()
	case r.ContentOmitted:
		if size := events.ContentSize(content); size != r.ContentSize || len(content) != r.ContentParts {
			cr.Mismatch = fmt.Sprintf("deltas add up to %d parts of %d bytes, the result says %d parts of %d bytes",
				len(content), size, r.ContentParts, r.ContentSize)
		}
	case !events.EqualContent(content, r.Content):
		cr.Mismatch = fmt.Sprintf("deltas add up to %q, the result says %q",
			clip(events.ContentText(content)), clip(events.ContentText(r.Content)))
	}
	return cr
}

// clip shortens s for a message.
func clip(s string) string {
	const n = 300
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("... (%d bytes)", len(s))
}
