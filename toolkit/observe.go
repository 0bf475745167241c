package toolkit

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolstream/toolstream/events"
)

// Observer receives the lifecycle events of every call (see package events
// for their order). Events are shared: treat them as read-only.
//
// An observer is attached in one of two ways:
//
//   - Asynchronously ([WithObserver], [Toolkit.Observe]), the default and the
//     safe choice for code you do not control. The observer gets its own
//     goroutine and queue: tools never wait for it and a slow observer delays
//     only itself. When more than the observer queue's worth of progress
//     events wait for it, newer progress events are dropped for it (counted
//     in [Toolkit.Stats], and told to it in the call's next progress event
//     or, when none follows, its result: Progress.Dropped, Result.Dropped);
//     start, delta, suspend and result events are never dropped. A batch reports its results only once every asynchronous
//     observer has taken the batch's result events, or after the flush timeout
//     ([WithFlushTimeout]), whichever comes first.
//   - Inline ([WithInlineObserver], [Toolkit.ObserveInline]), for observers
//     that only hand the event on (to a buffer, a channel with room, a
//     non-blocking publisher). Observe runs on the goroutine that emitted the
//     event, under the call's lock, before the emitting method returns: it
//     costs nothing extra, but it must be quick, must not block and must not
//     call back into the same call.
//
// Either way, each observer sees each call's events in sequence order and
// never concurrently for the same call, and a panic in Observe is recovered,
// logged and counted: the tool and the other observers carry on.
//
// An inline observer that hands events on asynchronously (the NATS
// publisher queues them for its own goroutine) may also have a method
// Flush(ctx context.Context) error: before a batch reports its results,
// the toolkit calls it, bounded by the flush timeout, so that results
// returned means events handed on. One that can decline progress events
// before they are built (a publisher whose queue is full) may have a
// method AcceptProgress() bool: when every observer of a batch has it and
// all decline, the engine skips building the event and counts it in
// Progress.Dropped of the next progress event it builds for the call, or
// in Result.Dropped of its result when none follows (sequence numbers
// have no gaps).
type Observer interface {
	Observe(ev *events.Event)
}

// ObserverFunc adapts a function to [Observer].
type ObserverFunc func(ev *events.Event)

// Observe calls f(ev).
func (f ObserverFunc) Observe(ev *events.Event) { f(ev) }

// CallInfo identifies a call.
type CallInfo struct {
	Session string
	CallID  string
	Tool    string
	// Agent is the agent that made the call ([WithAgent]), or "".
	Agent string
}

func infoOf(ev *events.Event) CallInfo {
	return CallInfo{Session: ev.Session, CallID: ev.Call, Tool: ev.Tool, Agent: ev.Agent}
}

// Callbacks is an [Observer] made of optional functions, one per event type.
// They follow the Observer contract: called one at a time, in order.
type Callbacks struct {
	OnStart    func(c CallInfo, args []byte)
	OnProgress func(c CallInfo, p events.Progress)
	OnDelta    func(c CallInfo, d events.Part)
	OnSuspend  func(c CallInfo, reason string)
	OnResult   func(c CallInfo, r events.Result)
}

// Observe dispatches ev to the matching callback.
func (cb Callbacks) Observe(ev *events.Event) {
	switch ev.Type {
	case events.TypeStart:
		if cb.OnStart != nil {
			cb.OnStart(infoOf(ev), ev.Start.Args)
		}
	case events.TypeProgress:
		if cb.OnProgress != nil {
			cb.OnProgress(infoOf(ev), *ev.Progress)
		}
	case events.TypeDelta:
		if cb.OnDelta != nil {
			cb.OnDelta(infoOf(ev), *ev.Delta)
		}
	case events.TypeSuspend:
		if cb.OnSuspend != nil {
			cb.OnSuspend(infoOf(ev), ev.Suspend.Reason)
		}
	case events.TypeResult:
		if cb.OnResult != nil {
			cb.OnResult(infoOf(ev), *ev.Result)
		}
	}
}

// Observe attaches an asynchronous observer while the toolkit runs and
// returns a function that detaches it. Batches that start after Observe
// returns are seen from their first event.
func (tk *Toolkit) Observe(obs Observer) (remove func()) {
	return tk.attach(obs, false)
}

// ObserveInline attaches an inline observer (see [Observer]) and returns a
// function that detaches it.
func (tk *Toolkit) ObserveInline(obs Observer) (remove func()) {
	return tk.attach(obs, true)
}

// observerSet is an immutable snapshot of the attached observers.
type observerSet struct {
	inline   []*inlineObserver
	boxes    []*mailbox
	flushers []flusher      // inline observers that hand events on later
	gates    []progressGate // set when every observer is a progressGate
}

// progressGate is an inline observer that can decline progress events
// before they are built (see [Observer]).
type progressGate interface {
	Observer
	AcceptProgress() bool
}

// acceptsProgress reports whether a progress event should be built.
func (s *observerSet) acceptsProgress() bool {
	if len(s.gates) == 0 {
		return true
	}
	for _, g := range s.gates {
		if g.AcceptProgress() {
			return true
		}
	}
	return false
}

// newObserverSet makes a snapshot of these observers, with the flushers
// and gates derived from them.
func newObserverSet(inline []*inlineObserver, boxes []*mailbox) *observerSet {
	s := &observerSet{inline: inline, boxes: boxes}
	for _, o := range inline {
		if f, ok := o.obs.(flusher); ok {
			s.flushers = append(s.flushers, f)
		}
		if g, ok := o.obs.(progressGate); ok {
			s.gates = append(s.gates, g)
		}
	}
	if len(boxes) > 0 || len(s.gates) < len(inline) {
		s.gates = nil // an observer that is not a gate takes every progress event
	}
	return s
}

// dispatch hands an event to every observer: inline ones at once,
// asynchronous ones through their mailboxes. f, if set, counts the event
// until each mailbox has delivered it.
func (s *observerSet) dispatch(tk *Toolkit, ev *events.Event, f *flush) {
	for _, o := range s.inline {
		tk.deliverInline(o.obs, ev)
	}
	for _, mb := range s.boxes {
		if f != nil {
			f.add()
		}
		mb.push(item{ev: ev, flush: f})
	}
}

// flusher is an inline observer that hands events on asynchronously (see
// [Observer]).
type flusher interface {
	Observer
	Flush(ctx context.Context) error
}

// inlineObserver gives an inline observer an identity for removal: the
// observer value itself may not be comparable.
type inlineObserver struct{ obs Observer }

func (s *observerSet) empty() bool { return len(s.inline) == 0 && len(s.boxes) == 0 }

func (tk *Toolkit) attach(obs Observer, inline bool) (remove func()) {
	var mb *mailbox
	if !inline {
		mb = newMailbox(obs, tk.opts.observerQueue, tk.log, &tk.stats)
	}
	tk.obsMu.Lock()
	if tk.closed.Load() {
		tk.obsMu.Unlock()
		if mb != nil {
			mb.close()
		}
		return func() {}
	}
	old := tk.observers.Load()
	var io *inlineObserver
	if inline {
		io = &inlineObserver{obs}
		tk.observers.Store(newObserverSet(append(slices.Clone(old.inline), io), old.boxes))
	} else {
		tk.observers.Store(newObserverSet(old.inline, append(slices.Clone(old.boxes), mb)))
	}
	tk.obsMu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			tk.obsMu.Lock()
			cur := tk.observers.Load()
			tk.observers.Store(newObserverSet(
				slices.DeleteFunc(slices.Clone(cur.inline), func(o *inlineObserver) bool { return o == io }),
				slices.DeleteFunc(slices.Clone(cur.boxes), func(m *mailbox) bool { return m == mb })))
			tk.obsMu.Unlock()
			if mb != nil {
				mb.close()
			}
		})
	}
}

// deliverInline calls an inline observer, recovering its panics.
func (tk *Toolkit) deliverInline(obs Observer, ev *events.Event) {
	defer func() {
		if r := recover(); r != nil {
			observerPanicked(&tk.log, &tk.stats, obs, ev, r)
		}
	}()
	obs.Observe(ev)
}

// observerPanicked counts and logs a panic recovered from an observer.
func observerPanicked(log *zerolog.Logger, stats *counters, obs Observer, ev *events.Event, r any) {
	stats.panics.Add(1)
	log.Error().Str("observer", fmt.Sprintf("%T", obs)).
		Str("event", string(ev.Type)).Str("call", ev.Call).
		Interface("panic", r).Bytes("stack", debug.Stack()).
		Msg("toolstream: observer panicked; event skipped for it")
}

// checkFreeType refuses the types code may not emit: the call lifecycle
// types, which only the engine emits, and names that are not valid event
// types ([events.CheckType]).
func checkFreeType(typ events.Type) error {
	switch typ {
	case events.TypeStart, events.TypeProgress, events.TypeDelta, events.TypeSuspend, events.TypeResult, events.TypeArgs:
		return fmt.Errorf("toolkit: %q is a call lifecycle type, which only the engine emits", typ)
	}
	if err := events.CheckType(typ); err != nil {
		return fmt.Errorf("toolkit: %w", err)
	}
	return nil
}

// Stats are counters of the toolkit's event delivery.
type Stats struct {
	// DroppedProgress counts progress events dropped for slow observers.
	DroppedProgress uint64
	// ObserverPanics counts panics recovered from observers.
	ObserverPanics uint64
}

// Stats returns the toolkit's counters.
func (tk *Toolkit) Stats() Stats {
	return Stats{DroppedProgress: tk.stats.dropped.Load(), ObserverPanics: tk.stats.panics.Load()}
}

// flush counts result events not yet taken by observers; done closes when
// the count reaches zero. The batch holds one count until it has pushed all
// of its results.
type flush struct {
	n    atomic.Int64
	done chan struct{}
}

// init prepares the flush; without asynchronous observers there is nothing
// to wait for and no channel is made.
func (f *flush) init(needed bool) {
	if needed {
		f.done = make(chan struct{})
	} else {
		f.done = closedChan
	}
	f.n.Store(1)
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (f *flush) add() { f.n.Add(1) }

// wait waits for the result events to be taken, at most the flush timeout.
func (f *flush) wait(d time.Duration) (timedOut bool) {
	select {
	case <-f.done:
		return false
	default:
	}
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-f.done:
		return false
	case <-t.C:
		return true
	}
}

func (f *flush) release() {
	if f.n.Add(-1) == 0 && f.done != closedChan {
		close(f.done)
	}
}

type item struct {
	ev    *events.Event
	flush *flush // set on result events
}

// mailbox decouples one observer from the tools: pushes never block, a
// goroutine delivers.
type mailbox struct {
	obs   Observer
	limit int
	log   zerolog.Logger
	stats *counters

	mu       sync.Mutex
	queue    []item
	spare    []item
	progress int // progress events in queue
	closed   bool
	// Progress dropped here, by call, told in the call's next progress
	// event (Progress.Dropped) this observer gets, or in its result
	// (Result.Dropped). Made on the first drop.
	drops map[mailKey]uint64

	wake chan struct{}
	quit chan struct{}
	done chan struct{}
}

type counters struct {
	dropped atomic.Uint64
	panics  atomic.Uint64
}

func newMailbox(obs Observer, limit int, log zerolog.Logger, stats *counters) *mailbox {
	mb := &mailbox{
		obs: obs, limit: limit, log: log, stats: stats,
		wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
	}
	go mb.run()
	return mb
}

// push queues an event. It reports false when the event was dropped.
func (mb *mailbox) push(it item) bool {
	mb.mu.Lock()
	if mb.closed {
		mb.mu.Unlock()
		if it.flush != nil {
			it.flush.release()
		}
		return false
	}
	switch it.ev.Type {
	case events.TypeProgress:
		if mb.progress >= mb.limit {
			if mb.drops == nil {
				mb.drops = map[mailKey]uint64{}
			}
			mb.drops[mailKey{it.ev.Session, it.ev.Call}]++
			mb.mu.Unlock()
			mb.stats.dropped.Add(1)
			return false
		}
		mb.progress++
		if mb.drops != nil {
			it.ev = mb.tellDrops(it.ev)
		}
	case events.TypeResult:
		if mb.drops != nil {
			it.ev = mb.tellDrops(it.ev)
		}
	}
	mb.queue = append(mb.queue, it)
	mb.mu.Unlock()
	select {
	case mb.wake <- struct{}{}:
	default:
	}
	return true
}

// mailKey is a call, for a mailbox's drop counts.
type mailKey struct{ session, call string }

// tellDrops returns ev, a progress event or the call's result, or a copy of
// it that tells the drops of its call since its previous progress event
// (other observers share ev: it is not changed). A result ends the call's
// count. mb.mu must be held.
func (mb *mailbox) tellDrops(ev *events.Event) *events.Event {
	key := mailKey{ev.Session, ev.Call}
	out, told := ev.WithDropped(mb.drops[key])
	if told {
		delete(mb.drops, key)
	}
	return out
}

func (mb *mailbox) run() {
	defer close(mb.done)
	for {
		select {
		case <-mb.wake:
		case <-mb.quit:
			mb.deliverAll() // what was queued before close still goes out
			return
		}
		mb.deliverAll()
	}
}

func (mb *mailbox) deliverAll() {
	for {
		mb.mu.Lock()
		batch := mb.queue
		mb.queue, mb.spare = mb.spare, nil // reuse the other buffer
		mb.progress = 0
		mb.mu.Unlock()
		for i := range batch {
			mb.deliver(batch[i])
		}
		clear(batch)
		mb.mu.Lock()
		mb.spare = batch[:0]
		mb.mu.Unlock()
		if len(batch) == 0 {
			return
		}
	}
}

func (mb *mailbox) deliver(it item) {
	defer func() {
		// Account for a panic before releasing the flush: whoever waits on
		// the flush must see the count.
		if r := recover(); r != nil {
			observerPanicked(&mb.log, mb.stats, mb.obs, it.ev, r)
		}
		if it.flush != nil {
			it.flush.release()
		}
	}()
	mb.obs.Observe(it.ev)
}

// close stops the mailbox: what is queued is still delivered, later pushes
// are refused. It does not wait (an observer may remove itself).
func (mb *mailbox) close() {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if !mb.closed {
		mb.closed = true
		close(mb.quit)
	}
}
