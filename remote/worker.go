package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/wire"
	"github.com/toolstream/toolstream/toolkit"
)

// Worker serves a toolkit's tools over NATS. Its toolkit is its own: the
// worker runs each call in it, in the call's session, with the toolkit's
// interceptors.
type Worker struct {
	nc             *nats.Conn
	tk             *toolkit.Toolkit
	opts           workerOptions
	svc            micro.Service
	ctl            *nats.Subscription
	id             string
	idValue        []string // {id}, the Toolstream-Worker header's value, shared
	removeObserver func()
	status         chan nats.Status

	base     context.Context
	stopBase context.CancelFunc

	mu       sync.Mutex
	relays   map[relayKey]*relay // calls held (waiting or running) by session and call id
	byInbox  map[string]*relay   // the same by inbox
	queue    []*relay            // calls waiting for a slot, oldest first
	qbytes   int                 // their arguments' bytes
	running  int                 // calls running, at most opts.maxInFlight
	stopping bool                // Stop began: calls are refused, under mu
	recent   recentResults       // results sent, kept for resends
	ticking  bool                // the pulse runs
	wake     chan struct{}       // starts the pulse
	handoff  chan *relay         // to a runner that is idle
	smu      sync.Mutex
	sessions map[string]int // calls held per session, under smu
	held     sync.WaitGroup // one per call held

	inFlight atomic.Int64
	queued   atomic.Int64
	calls    atomic.Uint64
	refused  atomic.Uint64
	failed   atomic.Uint64
}

type relayKey struct{ session, call string }

// WorkerStats are a worker's counters, also reported in the endpoints'
// stats data ($SRV.STATS).
type WorkerStats struct {
	InFlight    int64  `json:"in_flight"`
	Queued      int64  `json:"queued"`
	MaxInFlight int    `json:"max_in_flight"`
	MaxQueued   int    `json:"max_queued"`
	Calls       uint64 `json:"calls"`
	Refused     uint64 `json:"refused"`
	Failed      uint64 `json:"failed"`
}

// Serve starts a worker that serves tk's tools on nc. Stop it with
// [Worker.Stop]; nc stays open.
func Serve(nc *nats.Conn, tk *toolkit.Toolkit, options ...WorkerOption) (*Worker, error) {
	opts := workerOptions{service: wire.DefaultService, prefix: wire.DefaultPrefix, queueGroup: wire.DefaultQueueGroup,
		maxInFlight: defaultMaxInFlight, maxQueued: defaultMaxQueued, maxQueuedBytes: defaultMaxQueuedBytes,
		keepResults: defaultKeepResults, version: "1.0.0"}
	for _, o := range options {
		o.applyWorker(&opts)
	}
	switch {
	case opts.maxInFlight < 1:
		return nil, fmt.Errorf("remote: WithMaxInFlight(%d): a worker runs at least one call at once", opts.maxInFlight)
	case opts.maxQueued < 0 || opts.maxQueuedBytes < 0:
		return nil, fmt.Errorf("remote: WithMaxQueued(%d) or WithMaxQueuedBytes(%d): the bounds are 0 or more (0 calls: none wait)", opts.maxQueued, opts.maxQueuedBytes)
	case opts.keepResults <= 0:
		return nil, fmt.Errorf("remote: WithKeepResults(%v): a worker keeps results for a while above 0, to send them again", opts.keepResults)
	}
	w := &Worker{nc: nc, tk: tk, opts: opts, wake: make(chan struct{}, 1), handoff: make(chan *relay),
		relays: map[relayKey]*relay{}, byInbox: map[string]*relay{}, sessions: map[string]int{},
		recent: recentResults{keep: opts.keepResults, byInbox: map[string]*kept{}}}
	w.base, w.stopBase = context.WithCancel(context.Background())
	tools, err := w.served()
	if err != nil {
		return nil, err
	}
	meta := map[string]string{wire.MetaProtocol: protocol}
	for k, v := range opts.metadata {
		meta[k] = v
	}
	svc, err := micro.AddService(nc, micro.Config{
		Name: opts.service, Version: opts.version, QueueGroup: opts.queueGroup,
		Description: "toolstream tools", Metadata: meta,
		StatsHandler: func(*micro.Endpoint) any { return w.Stats() },
	})
	if err != nil {
		return nil, fmt.Errorf("remote: starting the service: %w", err)
	}
	w.svc = svc
	w.id = svc.Info().ID
	w.idValue = []string{w.id}
	go w.pulse()
	w.ctl, err = nc.Subscribe(wire.ControlSubject(opts.prefix, opts.service, "*"), w.onControl)
	if err != nil {
		w.abort()
		return nil, fmt.Errorf("remote: subscribing to control messages: %w", err)
	}
	w.status = nc.StatusChanged(nats.CONNECTED)
	go w.watch(w.status)
	w.removeObserver = tk.ObserveInline(toolkit.ObserverFunc(w.observe))
	for _, t := range tools {
		md := map[string]string{wire.MetaSchema: string(t.Definition().Parameters)}
		spec, _ := json.Marshal(toWire(t.Spec()))
		md[wire.MetaSpec] = string(spec)
		if out := t.Definition().OutputSchema; len(out) > 0 {
			md[wire.MetaOutputSchema] = string(out)
		}
		if err := svc.AddEndpoint(t.Name(), w.handler(t), micro.WithEndpointSubject(opts.prefix+"."+t.Name()),
			micro.WithEndpointMetadata(md)); err != nil {
			w.abort()
			return nil, fmt.Errorf("remote: serving tool %q: %w", t.Name(), err)
		}
	}
	// A round trip: the server has the subscriptions when Serve returns,
	// so a call sent right after finds the worker. The server refuses a
	// subscription its user may not make with an asynchronous error, sent
	// before the round trip's answer: a worker that could not take a tool's
	// subject (or discovery's, or control's) says so here instead of
	// serving nothing while calls fail with "no worker serves the tool".
	if err := nc.Flush(); err != nil {
		w.abort()
		return nil, fmt.Errorf("remote: %w", err)
	}
	if err := refusedSubscription(nc, opts, tools); err != nil {
		w.abort()
		return nil, err
	}
	return w, nil
}

// refusedSubscription returns the permission violation the server sent
// for one of the worker's subscriptions, if its connection's last error is
// one.
func refusedSubscription(nc *nats.Conn, opts workerOptions, tools []*toolkit.Tool) error {
	last := nc.LastError()
	if !errors.Is(last, nats.ErrPermissionViolation) || !strings.Contains(strings.ToLower(last.Error()), "subscription") {
		return nil
	}
	mine := []string{`"$SRV.`, `"` + wire.ControlSubject(opts.prefix, opts.service, "*") + `"`}
	for _, t := range tools {
		mine = append(mine, `"`+opts.prefix+"."+t.Name()+`"`)
	}
	for _, subject := range mine {
		if strings.Contains(last.Error(), subject) {
			return fmt.Errorf("remote: the NATS server refused a subscription this worker needs (its user's permissions): %w; allow the worker's user to subscribe to each tool's subject %s.<tool> in queue group %q, to %s and to service discovery ($SRV.*): deploy/nats/worker-responses.conf shows how",
				last, opts.prefix, opts.queueGroup, wire.ControlSubject(opts.prefix, opts.service, "*"))
		}
	}
	return nil
}

func (w *Worker) served() ([]*toolkit.Tool, error) {
	if len(w.opts.tools) == 0 {
		var out []*toolkit.Tool
		for _, t := range w.tk.Tools() {
			if !t.Spec().External {
				out = append(out, t)
			}
		}
		if len(out) == 0 {
			return nil, errors.New("remote: the toolkit has no tool to serve")
		}
		return out, nil
	}
	var out []*toolkit.Tool
	for _, name := range w.opts.tools {
		t, ok := w.tk.Tool(name)
		if !ok {
			return nil, fmt.Errorf("remote: the toolkit has no tool %q", name)
		}
		if t.Spec().External {
			return nil, fmt.Errorf("remote: tool %q is external: a worker cannot run it", name)
		}
		out = append(out, t)
	}
	return out, nil
}

// ID returns the worker's id: its micro service instance id.
func (w *Worker) ID() string { return w.id }

// Service returns the worker's micro service.
func (w *Worker) Service() micro.Service { return w.svc }

// Stats returns the worker's counters.
func (w *Worker) Stats() WorkerStats {
	return WorkerStats{InFlight: w.inFlight.Load(), Queued: w.queued.Load(),
		MaxInFlight: w.opts.maxInFlight, MaxQueued: w.opts.maxQueued,
		Calls: w.calls.Load(), Refused: w.refused.Load(), Failed: w.failed.Load()}
}

// Stop stops taking calls and hands the calls that wait for a slot back to
// their callers (refused with 503: they never ran, and go to another
// worker); it waits for the running ones until ctx ends, then interrupts
// them (their callers get the interrupted results) and waits for them to
// return. A call that reaches the worker once Stop has begun is refused
// with 503 too, even when micro hands it over after Stop returns.
func (w *Worker) Stop(ctx context.Context) error {
	// micro's Stop drains the endpoints' subscriptions: the requests already
	// on their way are still handed to the handlers, on micro's goroutines,
	// possibly after Stop returns. From here on the handlers refuse them;
	// stopping is set under mu, where a handler counts its call in held,
	// so the wait below sees every call that will ever run.
	w.mu.Lock()
	w.stopping = true
	var waiting []*relay
	for len(w.queue) > 0 {
		waiting = append(waiting, w.unqueueLocked(0))
	}
	w.mu.Unlock()
	for _, r := range waiting {
		r.refuse(codeBusy, fmt.Sprintf("worker %s is stopping: it takes no new calls (the call waited for a slot and never ran)", w.id))
		w.leave(r, nil)
	}
	err := w.svc.Stop()
	// A round trip after the drain's unsubscription: once Stop returns,
	// NATS sends this worker no more calls (best effort: the connection may
	// be down or closed).
	fctx, fcancel := context.WithTimeout(ctx, time.Second)
	_ = w.nc.FlushWithContext(fctx)
	fcancel()
	done := make(chan struct{})
	go func() { w.held.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		w.stopBase()
		<-done
	}
	w.stopNow()
	return err
}

// abort stops a worker that Serve could not finish starting: a call may
// have reached an endpoint already added.
func (w *Worker) abort() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = w.Stop(ctx)
}

func (w *Worker) stopNow() {
	_ = w.svc.Stop()
	w.stopBase()
	if w.ctl != nil {
		_ = w.ctl.Unsubscribe()
	}
	if w.status != nil {
		w.nc.RemoveStatusListener(w.status)
	}
	if w.removeObserver != nil {
		w.removeObserver()
	}
}

// idempotentTool reports whether another run of a call of the tool is
// harmless, by the rule of the Retry interceptor: only a tool that
// declares itself not idempotent, and is not read-only, is not.
func idempotentTool(s toolkit.Spec) bool {
	a, _ := s.Annotations()
	return s.Idempotent == nil || a.IdempotentHint
}

// handler takes a call of one tool: it checks the request, refuses it when
// the worker's queue is full or Stop began, and runs it on a goroutine of
// its own, or queues it, so that the endpoint's subscription goes on to the
// next request. A request whose reply subject is one of the server's own
// (serverAPI) is dropped unanswered, counted as refused.
func (w *Worker) handler(t *toolkit.Tool) micro.HandlerFunc {
	tool, acceptNow := t.Name(), !idempotentTool(t.Spec())
	return func(req micro.Request) {
		requestHook(w)
		if req.Reply() == "" {
			return // nobody to answer: not a call
		}
		if serverAPI(req.Reply()) {
			w.refused.Add(1) // not answered: the reply subject is the server's API
			return
		}
		h := nats.Header(req.Headers())
		session, err := getID(h, wire.HeaderSession, wire.HeaderSessionQuoted)
		if err != nil {
			w.refuse(req, codeBadRequest, err.Error())
			return
		}
		call, err := getID(h, wire.HeaderCall, wire.HeaderCallQuoted)
		if err != nil {
			w.refuse(req, codeBadRequest, err.Error())
			return
		}
		if session == "" || call == "" {
			w.refuse(req, codeBadRequest, "a call needs the headers "+wire.HeaderSession+" and "+wire.HeaderCall)
			return
		}
		timeout, err := parseMS(h.Get(wire.HeaderTimeout))
		if err != nil {
			w.refuse(req, codeBadRequest, wire.HeaderTimeout+": "+err.Error())
			return
		}
		beat, err := parseMS(h.Get(wire.HeaderHeartbeat))
		if err != nil {
			w.refuse(req, codeBadRequest, wire.HeaderHeartbeat+": "+err.Error())
			return
		}
		if beat == 0 {
			beat = defaultHeartbeat
		}
		beat = min(max(beat, minHeartbeat), 30*time.Second)
		// The call's context exists before the call runs, so that a
		// cancellation finds something to cancel from the first moment,
		// and its deadline counts the time it waits for a slot.
		var ctx context.Context
		var cancel context.CancelFunc
		if timeout > 0 {
			// The caller's deadline passes first and its cancellation stops
			// the call; this one is the worker's own bound when that message
			// is lost.
			ctx, cancel = context.WithTimeout(w.base, timeout+deadlineSlack)
		} else {
			ctx, cancel = context.WithCancel(w.base)
		}
		r := &relay{w: w, reply: req.Reply(), key: relayKey{session, call}, every: beat, ctx: ctx, cancel: cancel,
			tool: tool, args: append(json.RawMessage(nil), req.Data()...), h: h, taken: time.Now()}
		start, code, why := w.take(r)
		if code != "" {
			cancel()
			w.refuse(req, code, why)
			return
		}
		w.calls.Add(1)
		if acceptNow {
			// A tool that is not idempotent: its caller knows the call was
			// taken before it can have run, so that no refusal or "no
			// responders" status that comes later is believed.
			r.accept()
		}
		if start {
			w.start(r)
		}
	}
}

// take registers a call and says whether it starts now (or waits in the
// queue), or why it is refused.
func (w *Worker) take(r *relay) (start bool, code, why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopping {
		return false, codeBusy, fmt.Sprintf("worker %s is stopping: it takes no new calls", w.id)
	}
	if w.relays[r.key] != nil {
		return false, codeConflict, fmt.Sprintf("call %q of session %q is already running on worker %s", r.key.call, r.key.session, w.id)
	}
	start = w.running < w.opts.maxInFlight
	if !start && (len(w.queue) >= w.opts.maxQueued || w.qbytes+len(r.args) > w.opts.maxQueuedBytes) {
		return false, codeBusy, fmt.Sprintf("worker %s is busy: %d calls running and %d waiting, its limits", w.id, w.running, len(w.queue))
	}
	if start {
		w.running++
		w.inFlight.Add(1)
	} else {
		w.queue = append(w.queue, r)
		w.qbytes += len(r.args)
		w.queued.Add(1)
	}
	w.relays[r.key] = r
	w.byInbox[r.reply] = r
	w.held.Add(1)
	if !w.ticking {
		w.ticking = true
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	w.smu.Lock()
	w.sessions[r.key.session]++
	w.smu.Unlock()
	return start, "", ""
}

func (w *Worker) refuse(req micro.Request, code, msg string) {
	w.refused.Add(1)
	_ = req.Error(code, msg, nil, micro.WithHeaders(micro.Headers{wire.HeaderWorker: []string{w.ID()}}))
}

// runnerIdle is how long a runner whose calls ran out waits for another
// before its goroutine ends: a worker under load keeps its runners, whose
// stacks have grown to what a call needs.
const runnerIdle = time.Second

// start gives a call that takes a slot to a runner: one that is idle, or a
// new one.
func (w *Worker) start(r *relay) {
	select {
	case w.handoff <- r:
	default:
		go w.run(r)
	}
}

// run runs calls in the worker's toolkit and sends their results: the one
// given, the next one that waits, if any, and the ones handed over while it
// is idle.
func (w *Worker) run(r *relay) {
	idle := time.NewTimer(runnerIdle)
	defer idle.Stop()
	for r != nil {
		res, sess, notRun := w.runOne(r)
		if res.IsError() {
			w.failed.Add(1)
		}
		// The call is forgotten before its result goes: the caller may send
		// the same call id again at once (a retry), and must not be refused
		// as running; likewise its slot is free for the caller's next call.
		w.mu.Lock()
		w.forgetLocked(r)
		next := w.nextLocked()
		if next == nil {
			w.running--
			w.inFlight.Add(-1)
		}
		w.mu.Unlock()
		r.finish(res, notRun)
		w.leave(r, sess)
		r = next
		if r == nil {
			idle.Reset(runnerIdle)
			select {
			case r = <-w.handoff:
			case <-idle.C:
			case <-w.base.Done():
			}
		}
	}
}

// runOne runs the call, unless it ended while it waited.
func (w *Worker) runOne(r *relay) (res toolkit.Result, sess *toolkit.Session, notRun bool) {
	if err := r.ctx.Err(); err != nil {
		return w.notRun(r, err), nil, true
	}
	r.begin()
	ctx := withTrace(r.ctx, r.h.Get(wire.HeaderTraceParent), r.h.Get(wire.HeaderTraceState))
	if w.opts.extract != nil {
		ctx = w.opts.extract(ctx, r.h)
	}
	if a := r.h.Get(wire.HeaderAgent); a != "" {
		ctx = toolkit.WithAgent(ctx, a)
	}
	sess, err := w.tk.Session(r.key.session)
	if err != nil {
		return toolkit.Result{State: events.StateError, Err: err, Content: []events.Part{events.Text("Error: " + err.Error())}}, nil, true
	}
	return sess.Run(ctx, []toolkit.Call{{ID: r.key.call, Name: r.tool, Args: r.args}})[0], sess, false
}

// notRun is the result of a call that ended while it waited for a slot.
func (w *Worker) notRun(r *relay, err error) toolkit.Result {
	if errors.Is(err, context.DeadlineExceeded) {
		e := fmt.Errorf("%w: the call waited for a free slot on worker %s past its deadline and never ran", toolkit.ErrTimeout, w.id)
		return toolkit.Result{State: events.StateTimeout, Err: e, Content: []events.Part{events.Text("Error: " + e.Error())}}
	}
	e := fmt.Errorf("%w: the call was cancelled while it waited for a free slot on worker %s, and never ran", toolkit.ErrInterrupted, w.id)
	return toolkit.Result{State: events.StateInterrupted, Err: e, Content: []events.Part{events.Text("Error: " + e.Error())}}
}

// forgetLocked drops a call from the calls held.
func (w *Worker) forgetLocked(r *relay) {
	if w.relays[r.key] == r {
		delete(w.relays, r.key)
	}
	if w.byInbox[r.reply] == r {
		delete(w.byInbox, r.reply)
	}
}

// nextLocked takes the oldest call that waits, which takes over the slot.
func (w *Worker) nextLocked() *relay {
	if len(w.queue) == 0 {
		return nil
	}
	r := w.queue[0]
	w.queue[0] = nil
	w.queue = w.queue[1:]
	w.qbytes -= len(r.args)
	w.queued.Add(-1)
	return r
}

// unqueueLocked takes the call at index i out of the queue and forgets it:
// it leaves without running.
func (w *Worker) unqueueLocked(i int) *relay {
	r := w.queue[i]
	w.queue = slices.Delete(w.queue, i, i+1)
	w.qbytes -= len(r.args)
	w.queued.Add(-1)
	w.forgetLocked(r)
	return r
}

// leave ends what the worker holds of a call once its result or refusal
// went: its context, its count in its session, its count in held.
func (w *Worker) leave(r *relay, sess *toolkit.Session) {
	r.cancel()
	w.closeSession(r, sess)
	w.held.Done()
}

// closeSession counts a call out of its session: the worker keeps nothing
// per session between calls. smu (not mu, which the observer takes)
// orders this with the next call's count.
func (w *Worker) closeSession(r *relay, sess *toolkit.Session) {
	w.smu.Lock()
	defer w.smu.Unlock()
	w.sessions[r.key.session]--
	if w.sessions[r.key.session] > 0 {
		return
	}
	delete(w.sessions, r.key.session)
	if sess == nil { // the call never ran: the session an earlier call opened, if any
		sess, _ = w.tk.Session(r.key.session)
	}
	if sess != nil {
		sess.Close()
	}
}

// deadlineSlack is how long after the caller's deadline a worker stops a
// call on its own.
const deadlineSlack = 100 * time.Millisecond

// onControl acts on a control message: the calls it names that this worker
// holds are cancelled (ControlCancel) or get a heartbeat (ControlResync);
// those whose result it keeps get their result again. A message addressed
// to another worker, or naming no call of this one, changes nothing.
func (w *Worker) onControl(m *nats.Msg) {
	if to := m.Header.Get(wire.HeaderWorker); to != "" && to != w.id {
		return
	}
	kind := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	if kind != wire.ControlCancel && kind != wire.ControlResync {
		return
	}
	keys := map[string]bool{}
	for k := range strings.SplitSeq(string(m.Data), "\n") {
		if len(k) == 32 {
			keys[k] = true
		}
	}
	if len(keys) == 0 {
		return
	}
	var hit []*relay
	w.mu.Lock()
	for _, r := range w.byInbox {
		if keys[r.callKey()] {
			hit = append(hit, r)
		}
	}
	again := w.recent.named(keys, w.id)
	var dequeued []*relay
	if kind == wire.ControlCancel {
		for _, r := range hit {
			if i := slices.Index(w.queue, r); i >= 0 {
				dequeued = append(dequeued, w.unqueueLocked(i))
			}
		}
	}
	w.mu.Unlock()
	for _, msg := range again {
		_ = w.nc.PublishMsg(msg)
	}
	for _, r := range hit {
		if kind == wire.ControlResync {
			r.beat()
			continue
		}
		r.cancelled()
	}
	for _, r := range dequeued {
		// It never ran: its result says so, and its slot was never taken.
		r.finish(w.notRun(r, context.Canceled), true)
		w.leave(r, nil)
	}
}

// watch sends, after each reconnection of the worker's connection, a
// heartbeat for every call held and the results kept again: what it sent
// just before its server died may be lost.
func (w *Worker) watch(status chan nats.Status) {
	for {
		select {
		case <-w.base.Done():
			return
		case s, ok := <-status:
			if !ok {
				return
			}
			if s != nats.CONNECTED {
				continue
			}
			w.mu.Lock()
			held := make([]*relay, 0, len(w.byInbox))
			for _, r := range w.byInbox {
				held = append(held, r)
			}
			again := w.recent.all(w.id)
			w.mu.Unlock()
			for _, r := range held {
				r.beat()
			}
			for _, m := range again {
				_ = w.nc.PublishMsg(m)
			}
		}
	}
}

// pulse sends the frames that are due (accepts, heartbeats, deltas held
// back) and ends calls that waited past their deadlines, every pulse
// interval while the worker holds calls or keeps results.
func (w *Worker) pulse() {
	t := time.NewTicker(pulse)
	defer t.Stop()
	var held []*relay
	var expired []*relay
	for {
		select {
		case <-w.base.Done():
			return
		case <-t.C:
		case <-w.wake:
			t.Reset(pulse)
			continue
		}
		now := time.Now()
		held, expired = held[:0], expired[:0]
		w.mu.Lock()
		for _, r := range w.byInbox {
			held = append(held, r)
		}
		for i := 0; i < len(w.queue); {
			if w.queue[i].ctx.Err() != nil {
				expired = append(expired, w.unqueueLocked(i))
				continue
			}
			i++
		}
		w.recent.evict(now)
		if len(w.byInbox) == 0 && w.recent.empty() {
			w.ticking = false
		}
		idle := !w.ticking
		w.mu.Unlock()
		for _, r := range held {
			r.tick(now)
		}
		for _, r := range expired {
			r.finish(w.notRun(r, r.ctx.Err()), true)
			w.leave(r, nil)
		}
		clear(held)
		clear(expired)
		if idle {
			t.Stop()
			select {
			case <-w.base.Done():
				return
			case <-w.wake:
				t.Reset(pulse)
			}
		}
	}
}

// observe routes the worker toolkit's events to the relays of the calls
// they belong to. It runs inline, under the call's lock: it only publishes.
func (w *Worker) observe(ev *events.Event) {
	if ev.Call == "" {
		return
	}
	switch ev.Type {
	case events.TypeProgress, events.TypeDelta, events.TypeResult:
	default:
		return
	}
	w.mu.Lock()
	r := w.relays[relayKey{ev.Session, ev.Call}]
	w.mu.Unlock()
	if r != nil {
		r.event(ev)
	}
}
