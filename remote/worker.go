package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// WorkerOptions configure a worker. The zero value of a field picks its
// default.
type WorkerOptions struct {
	// Service is the micro service name (DefaultService).
	Service string
	// Prefix is the subject prefix of the endpoints (DefaultPrefix).
	Prefix string
	// QueueGroup is the queue group the workers of a tool share
	// (DefaultQueueGroup).
	QueueGroup string
	// MaxInFlight bounds the calls this worker runs at once
	// (DefaultMaxInFlight). A call above it is refused at once with code
	// 503, and the caller tries another worker.
	MaxInFlight int
	// Version is the service's semantic version ("1.0.0").
	Version string
	// Metadata is added to the service's metadata (a worker's host name,
	// say).
	Metadata map[string]string
	// Extract, if set, makes the context a call runs with from its
	// request headers: the place to start a span from traceparent and
	// tracestate. Without it, TraceContext(ctx) gives the two headers.
	Extract func(ctx context.Context, h nats.Header) context.Context
	// Tools limits the tools served to these names; empty: every tool of
	// the toolkit except external ones.
	Tools []string
}

// Worker serves a toolkit's tools over NATS. Its toolkit is its own: the
// worker runs each call in it, in the call's session, with the toolkit's
// interceptors.
type Worker struct {
	nc   *nats.Conn
	tk   *toolkit.Toolkit
	opts WorkerOptions
	svc  micro.Service
	ctl  *nats.Subscription
	// controlSubject receives cancellations: the body is the reply subject
	// of the call to stop.
	controlSubject string
	id             string
	removeObserver func()

	base     context.Context
	stopBase context.CancelFunc

	mu       sync.Mutex
	relays   map[relayKey]*relay // running calls by session and call id
	byReply  map[string]*relay   // the same by reply subject, until their result went
	stopping bool                // Stop began: calls are refused, under mu
	smu      sync.Mutex
	sessions map[string]int // calls running per session, under smu
	running  sync.WaitGroup

	inFlight atomic.Int64
	calls    atomic.Uint64
	refused  atomic.Uint64
	failed   atomic.Uint64

	// onRequest, if set, runs first in every endpoint handler: tests hold
	// a request there, delivered by micro but not yet taken.
	onRequest atomic.Pointer[func()]
}

type relayKey struct{ session, call string }

// WorkerStats are a worker's counters, also reported in the endpoints'
// stats data ($SRV.STATS).
type WorkerStats struct {
	InFlight    int64  `json:"in_flight"`
	MaxInFlight int    `json:"max_in_flight"`
	Calls       uint64 `json:"calls"`
	Refused     uint64 `json:"refused"`
	Failed      uint64 `json:"failed"`
}

// Serve starts a worker that serves tk's tools on nc. Stop it with
// [Worker.Stop]; nc stays open.
func Serve(nc *nats.Conn, tk *toolkit.Toolkit, opts WorkerOptions) (*Worker, error) {
	if opts.Service == "" {
		opts.Service = DefaultService
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.QueueGroup == "" {
		opts.QueueGroup = DefaultQueueGroup
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.Version == "" {
		opts.Version = "1.0.0"
	}
	w := &Worker{nc: nc, tk: tk, opts: opts,
		relays: map[relayKey]*relay{}, byReply: map[string]*relay{}, sessions: map[string]int{}}
	w.base, w.stopBase = context.WithCancel(context.Background())
	tools, err := w.served()
	if err != nil {
		return nil, err
	}
	meta := map[string]string{MetaProtocol: protocol}
	for k, v := range opts.Metadata {
		meta[k] = v
	}
	svc, err := micro.AddService(nc, micro.Config{
		Name: opts.Service, Version: opts.Version, QueueGroup: opts.QueueGroup,
		Description: "toolstream tools", Metadata: meta,
		StatsHandler: func(*micro.Endpoint) any { return w.Stats() },
	})
	if err != nil {
		return nil, fmt.Errorf("remote: starting the service: %w", err)
	}
	w.svc = svc
	id := svc.Info().ID
	w.id = id
	w.controlSubject = controlSubject(opts.Prefix, id)
	w.ctl, err = nc.Subscribe(w.controlSubject, w.onCancel)
	if err != nil {
		_ = svc.Stop()
		return nil, fmt.Errorf("remote: subscribing to cancellations: %w", err)
	}
	w.removeObserver = tk.ObserveInline(toolkit.ObserverFunc(w.observe))
	for _, t := range tools {
		md := map[string]string{MetaSchema: string(t.InputSchema())}
		spec, _ := json.Marshal(toWire(t.Spec()))
		md[MetaSpec] = string(spec)
		if out := t.OutputSchema(); len(out) > 0 {
			md[MetaOutputSchema] = string(out)
		}
		if err := svc.AddEndpoint(t.Name(), w.handler(t.Name()), micro.WithEndpointSubject(opts.Prefix+"."+t.Name()),
			micro.WithEndpointMetadata(md)); err != nil {
			w.abort()
			return nil, fmt.Errorf("remote: serving tool %q: %w", t.Name(), err)
		}
	}
	// A round trip: the server has the subscriptions when Serve returns,
	// so a call sent right after finds the worker.
	if err := nc.Flush(); err != nil {
		w.abort()
		return nil, fmt.Errorf("remote: %w", err)
	}
	return w, nil
}

func (w *Worker) served() ([]*toolkit.Tool, error) {
	if len(w.opts.Tools) == 0 {
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
	for _, name := range w.opts.Tools {
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
	return WorkerStats{InFlight: w.inFlight.Load(), MaxInFlight: w.opts.MaxInFlight,
		Calls: w.calls.Load(), Refused: w.refused.Load(), Failed: w.failed.Load()}
}

// Stop stops taking calls and waits for the running ones until ctx ends;
// then it interrupts them (their callers get the interrupted results) and
// waits for them to return. A call that reaches the worker once Stop has
// begun is refused with 503 (the caller tries another worker) and never
// runs, even when micro hands it over after Stop returns.
func (w *Worker) Stop(ctx context.Context) error {
	// micro's Stop drains the endpoints' subscriptions: the requests already
	// on their way are still handed to the handlers, on micro's goroutines,
	// possibly after Stop returns. From here on the handlers refuse them;
	// stopping is set under mu, where a handler counts its call in running,
	// so the wait below sees every call that will ever run.
	w.mu.Lock()
	w.stopping = true
	w.mu.Unlock()
	err := w.svc.Stop()
	// A round trip after the drain's unsubscription: once Stop returns,
	// NATS sends this worker no more calls (best effort: the connection may
	// be down or closed).
	fctx, fcancel := context.WithTimeout(ctx, time.Second)
	_ = w.nc.FlushWithContext(fctx)
	fcancel()
	done := make(chan struct{})
	go func() { w.running.Wait(); close(done) }()
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
	if w.removeObserver != nil {
		w.removeObserver()
	}
}

// handler takes a call of one tool: it checks the request, refuses it above
// the in-flight bound or once Stop began, and runs it on a goroutine of its
// own so that the endpoint's subscription goes on to the next request. A
// request whose reply subject is one of the server's own (serverAPI) is
// dropped unanswered, counted as refused.
func (w *Worker) handler(tool string) micro.HandlerFunc {
	return func(req micro.Request) {
		if hook := w.onRequest.Load(); hook != nil {
			(*hook)()
		}
		if req.Reply() == "" {
			return // nobody to answer: not a call
		}
		if serverAPI(req.Reply()) {
			w.refused.Add(1) // not answered: the reply subject is the server's API
			return
		}
		h := nats.Header(req.Headers())
		session, err := getID(h, HeaderSession, HeaderSessionQuoted)
		if err != nil {
			w.refuse(req, codeBadRequest, err.Error())
			return
		}
		call, err := getID(h, HeaderCall, HeaderCallQuoted)
		if err != nil {
			w.refuse(req, codeBadRequest, err.Error())
			return
		}
		if session == "" || call == "" {
			w.refuse(req, codeBadRequest, "a call needs the headers "+HeaderSession+" and "+HeaderCall)
			return
		}
		timeout, err := parseMS(h.Get(HeaderTimeout))
		if err != nil {
			w.refuse(req, codeBadRequest, HeaderTimeout+": "+err.Error())
			return
		}
		beat, err := parseMS(h.Get(HeaderHeartbeat))
		if err != nil {
			w.refuse(req, codeBadRequest, HeaderHeartbeat+": "+err.Error())
			return
		}
		if beat == 0 {
			beat = DefaultHeartbeat
		}
		beat = min(max(beat, minHeartbeat), 30*time.Second)
		// The call's context exists before the call is known, so that a
		// cancellation finds something to cancel from the first moment.
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
		r := &relay{w: w, reply: req.Reply(), key: relayKey{session, call}, every: beat, cancel: cancel}
		code, why := w.take(r)
		if code != "" {
			cancel()
			w.refuse(req, code, why)
			return
		}
		w.smu.Lock()
		w.sessions[session]++
		w.smu.Unlock()
		w.calls.Add(1)
		args := append(json.RawMessage(nil), req.Data()...)
		go w.run(ctx, r, tool, args, h, beat)
	}
}

// take registers a call, or says why it is refused.
func (w *Worker) take(r *relay) (code, why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopping {
		return codeBusy, fmt.Sprintf("worker %s is stopping: it takes no new calls", w.ID())
	}
	if w.relays[r.key] != nil {
		return codeConflict, fmt.Sprintf("call %q of session %q is already running on worker %s", r.key.call, r.key.session, w.ID())
	}
	if n := w.inFlight.Add(1); n > int64(w.opts.MaxInFlight) {
		w.inFlight.Add(-1)
		return codeBusy, fmt.Sprintf("worker %s is busy: %d calls in flight, its limit", w.ID(), w.opts.MaxInFlight)
	}
	w.relays[r.key] = r
	w.byReply[r.reply] = r
	w.running.Add(1)
	return "", ""
}

func (w *Worker) refuse(req micro.Request, code, msg string) {
	w.refused.Add(1)
	_ = req.Error(code, msg, nil, micro.WithHeaders(micro.Headers{HeaderWorker: []string{w.ID()}}))
}

// run runs one call in the worker's toolkit and sends its frames.
func (w *Worker) run(ctx context.Context, r *relay, tool string, args json.RawMessage, h nats.Header, beat time.Duration) {
	defer w.running.Done()
	defer r.cancel()
	ctx = withTrace(ctx, h.Get(HeaderTraceParent), h.Get(HeaderTraceState))
	if w.opts.Extract != nil {
		ctx = w.opts.Extract(ctx, h)
	}
	if a := h.Get(HeaderAgent); a != "" {
		ctx = toolkit.WithAgent(ctx, a)
	}
	r.send(frameAccept, nil, nats.Header{HeaderWorker: {w.ID()}, HeaderControl: {w.controlSubject}})

	stopBeat := make(chan struct{})
	beatDone := make(chan struct{})
	go func() {
		defer close(beatDone)
		t := time.NewTicker(beat)
		defer t.Stop()
		for {
			select {
			case <-stopBeat:
				return
			case <-t.C:
				r.beat()
			}
		}
	}()

	var res toolkit.Result
	sess, err := w.tk.Session(r.key.session)
	if err != nil {
		res = toolkit.Result{State: toolkit.StateError, Err: err, Content: []toolkit.Part{events.Text("Error: " + err.Error())}}
	} else {
		res = sess.Run(ctx, []toolkit.Call{{ID: r.key.call, Name: tool, Args: args}})[0]
	}
	close(stopBeat)
	<-beatDone
	if res.IsError() {
		w.failed.Add(1)
	}
	// The call is forgotten before its result goes: the caller may send
	// the same call id again at once (a retry), and must not be refused as
	// running.
	w.mu.Lock()
	delete(w.relays, r.key)
	w.mu.Unlock()
	w.inFlight.Add(-1) // likewise: the caller's next call must find room
	r.finish(res)
	// Its reply subject is forgotten after the result went, on the same
	// connection as any answer to a cancellation: a caller that is told
	// "no such call" has had the call's result first.
	w.mu.Lock()
	if w.byReply[r.reply] == r {
		delete(w.byReply, r.reply)
	}
	w.mu.Unlock()

	// The worker keeps nothing per session between calls. smu (not mu,
	// which the observer takes) orders this with the next call's count.
	w.smu.Lock()
	w.sessions[r.key.session]--
	if w.sessions[r.key.session] == 0 {
		delete(w.sessions, r.key.session)
		if sess != nil {
			sess.Close()
		}
	}
	w.smu.Unlock()
}

// deadlineSlack is how long after the caller's deadline a worker stops a
// call on its own.
const deadlineSlack = 100 * time.Millisecond

// onCancel stops the call whose reply subject the message names. A
// cancellation with a reply subject gets an answer there (unless it is
// one of the server's own, serverAPI): a cancel frame,
// with micro's error headers when the worker refuses it (400: it names no
// call; 404: no such call runs here), so that the caller stops waiting at
// once. An accepted cancellation is answered before the call's result
// frame, which confirms it.
func (w *Worker) onCancel(m *nats.Msg) {
	reply := string(m.Data)
	if reply == "" {
		w.answerCancel(m, codeBadRequest, "a cancellation names the call's reply subject in its body")
		return
	}
	w.mu.Lock()
	r := w.byReply[reply]
	w.mu.Unlock()
	if r == nil {
		w.answerCancel(m, codeUnknown, fmt.Sprintf("worker %s runs no call with reply subject %q: it has ended or never started here", w.ID(), reply))
		return
	}
	// Under the relay's lock, which its result frame is sent under: the
	// answer says what the caller will see, a result already sent or one
	// still to come.
	r.mu.Lock()
	if r.done {
		r.mu.Unlock()
		w.answerCancel(m, codeUnknown, fmt.Sprintf("the call has ended on worker %s: its result was sent", w.ID()))
		return
	}
	w.answerCancel(m, "", "")
	r.mu.Unlock()
	r.cancel()
}

// answerCancel answers a cancellation, if it asks for an answer.
func (w *Worker) answerCancel(m *nats.Msg, code, why string) {
	if m.Reply == "" || serverAPI(m.Reply) {
		return // a caller that does not wait for one, or not a caller's inbox
	}
	h := nats.Header{HeaderFrame: {frameCancel}, HeaderWorker: {w.ID()}}
	if code != "" {
		h.Set(micro.ErrorCodeHeader, code)
		h.Set(micro.ErrorHeader, why)
	}
	_ = w.nc.PublishMsg(&nats.Msg{Subject: m.Reply, Header: h})
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

// relay sends one call's frames to its caller, in order, numbered.
type relay struct {
	w      *Worker
	reply  string
	key    relayKey
	mu     sync.Mutex
	seq    uint64
	cancel context.CancelFunc
	// pending is the last delta, held back until the next event: when the
	// call fails, the engine's last delta is the "Error: ..." line, which
	// the caller's engine writes itself.
	pending *events.Event
	done    bool
	every   time.Duration
}

func (r *relay) send(frame string, data []byte, h nats.Header) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sendLocked(frame, data, h)
}

func (r *relay) sendLocked(frame string, data []byte, h nats.Header) {
	if h == nil {
		h = nats.Header{}
	}
	r.seq++
	h.Set(HeaderFrame, frame)
	h.Set(HeaderSeq, strconv.FormatUint(r.seq, 10))
	// Errors (a closed connection) surface to the caller as missed
	// heartbeats, or as a gap in the numbering, which the caller notices.
	// A frame the connection refuses as too large never left: it takes no
	// number, so that it leaves no gap (deltas, progress and results are
	// made to fit: flushPending, event, finish).
	if err := r.w.nc.PublishMsg(&nats.Msg{Subject: r.reply, Header: h, Data: data}); errors.Is(err, nats.ErrMaxPayload) {
		r.seq--
	}
}

func (r *relay) beat() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	// A delta held back goes out now unless it may be the error line.
	if r.pending != nil && !mayBeErrorLine(r.pending) {
		r.flushPending()
	}
	r.sendLocked(frameBeat, nil, nil)
}

func mayBeErrorLine(ev *events.Event) bool {
	return ev.Delta != nil && ev.Delta.Type == events.PartText && !ev.Reset && len(ev.Delta.Text) >= 7 && ev.Delta.Text[:7] == "Error: "
}

func (r *relay) flushPending() {
	ev := r.pending
	r.pending = nil
	data, _ := ev.Delta.MarshalJSON() // events' encoding, as events.Fit measures it
	limit := frameLimit(r.w.nc)
	if len(data) <= limit {
		r.sendDelta(data, ev.Reset, "")
		return
	}
	// Too large for one message (a tool that returns a long text at once):
	// cut as the publisher cuts events (docs/events.md, "Large content"),
	// a text into several text deltas, any other part into chunks. The
	// pieces' envelope, left out here, makes them smaller than limit.
	pieces, _, err := events.Fit(&events.Event{Type: events.TypeDelta, Delta: ev.Delta, Reset: ev.Reset}, limit)
	if err != nil {
		r.seq++ // cannot be with a limit this large: a gap, which the caller notices
		return
	}
	for _, p := range pieces {
		if p.Chunk != nil {
			r.sendDelta([]byte(p.Chunk.Data), p.Reset, strconv.Itoa(p.Chunk.Index)+"/"+strconv.Itoa(p.Chunk.Count))
			continue
		}
		d, _ := p.Delta.MarshalJSON()
		r.sendDelta(d, p.Reset, "")
	}
}

func (r *relay) sendDelta(data []byte, reset bool, chunk string) {
	var h nats.Header
	if reset || chunk != "" {
		h = nats.Header{}
		if reset {
			h.Set(HeaderReset, "1")
		}
		if chunk != "" {
			h.Set(HeaderChunk, chunk)
		}
	}
	r.sendLocked(frameDelta, data, h)
}

func (r *relay) event(ev *events.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	switch ev.Type {
	case events.TypeDelta:
		if ev.Delta == nil {
			return
		}
		if r.pending != nil {
			r.flushPending()
		}
		cp := *ev
		part := *ev.Delta
		cp.Delta = &part
		r.pending = &cp
	case events.TypeProgress:
		if r.pending != nil {
			r.flushPending()
		}
		p := ev.Progress
		if p == nil {
			return
		}
		wp := wireProgress{Message: p.Message, Fraction: p.Fraction, Data: p.Data}
		data, _ := json.Marshal(wp)
		if limit := frameLimit(r.w.nc); len(data) > limit {
			// Too large for one message: the report goes without its data,
			// and with its message cut if need be, rather than not at all.
			wp.Data = nil
			if data, _ = json.Marshal(wp); len(data) > limit {
				n := max(len(wp.Message)-(len(data)-limit), 0) // each byte cut takes one or more
				for n > 0 && !utf8.RuneStart(wp.Message[n]) {
					n--
				}
				wp.Message = wp.Message[:n]
				data, _ = json.Marshal(wp)
			}
		}
		r.sendLocked(frameProgress, data, nil)
	case events.TypeResult:
		if r.pending != nil {
			res := ev.Result
			if res != nil && res.State.IsError() && r.pending.Delta.Type == events.PartText && !r.pending.Reset &&
				r.pending.Delta.Text == "Error: "+res.Error {
				r.pending = nil // the caller's engine writes this line
			} else {
				r.flushPending()
			}
		}
	}
}

// finish sends the result frame.
func (r *relay) finish(res toolkit.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending != nil {
		r.flushPending()
	}
	r.done = true
	wr := wireResult{State: res.State, Content: res.Content, Meta: res.Meta}
	if wr.Content == nil {
		wr.Content = []events.Part{}
	}
	if res.Err != nil {
		wr.Error = res.Err.Error()
		wr.Transient = interceptors.IsTransient(res.Err)
	}
	wr.Timeout = res.State == toolkit.StateTimeout
	data, err := json.Marshal(wr)
	if err != nil { // meta that does not marshal
		wr.Meta = nil
		data, _ = json.Marshal(wr)
	}
	data = fitResult(wr, data, frameLimit(r.w.nc))
	// The result names its worker: a caller whose call two workers took
	// (two queue groups serve the tool) keeps the one it followed.
	r.sendLocked(frameResult, data, nats.Header{HeaderWorker: {r.w.ID()}})
	// The result goes out twice more, a heartbeat apart: a caller whose
	// connection was down when it went (its server died) has reconnected
	// by then, within the time it waits for a heartbeat. It keeps the first.
	again := &nats.Msg{Subject: r.reply, Data: data, Header: nats.Header{
		HeaderFrame: {frameResult}, HeaderSeq: {strconv.FormatUint(r.seq, 10)}, HeaderWorker: {r.w.ID()}}}
	for i := 1; i <= 2; i++ {
		time.AfterFunc(time.Duration(i)*r.every, func() { _ = r.w.nc.PublishMsg(again) })
	}
}

// fitResult makes a result frame's body fit in limit bytes: too large, it
// leaves the content out (the deltas, all sent, are the content); still too
// large, the meta; then it cuts the error text, saying so, as the events
// publisher does. A result frame that did not fit never went, and the
// caller, hearing nothing more, gave the worker up as lost.
func fitResult(wr wireResult, data []byte, limit int) []byte {
	if len(data) <= limit {
		return data
	}
	wr.Content, wr.Omitted = nil, true
	data, _ = json.Marshal(wr)
	if len(data) > limit && wr.Meta != nil {
		wr.Meta, wr.MetaOmitted = nil, true
		data, _ = json.Marshal(wr)
	}
	orig := wr.Error
	note := fmt.Sprintf(" [cut to fit one message: %d bytes in all]", len(orig))
	keep := len(orig) - len(note)
	for len(data) > limit && keep > 0 {
		// Each byte cut takes at least one byte of its escaped form.
		keep = max(keep-(len(data)-limit), 0)
		for keep > 0 && !utf8.RuneStart(orig[keep]) {
			keep--
		}
		wr.Error = orig[:keep] + note
		data, _ = json.Marshal(wr)
	}
	return data
}
