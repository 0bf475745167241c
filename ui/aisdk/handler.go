// Package aisdk serves a toolstream agent to the Vercel AI SDK's useChat:
// an http.Handler that takes useChat's request (POST, the chat's
// messages), runs the agent loop for the chat and streams the v1 UI
// message stream (x-vercel-ai-ui-message-stream: v1, data: <json> frames,
// data: [DONE]); and the resume route useChat calls after a reload
// (GET <api>/<chat id>/stream), read back from the durable stream.
//
// Each response is one response of a thread.Thread: the model's turns are
// steps, its words text parts, its calls dynamic tool parts whose input
// streams as the model writes it; a running call's accumulated result is
// a preliminary output (a reset sends the new accumulation); the result
// is the final output, an error or a denial; a call waiting for approval
// is an approval request, answered by the next request's
// approval-responded tool part; progress, groups and skills are data
// parts. docs/ui-protocols.md has the mapping and what the protocol
// cannot express.
package aisdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/ui"
	"github.com/toolstream/toolstream/ui/internal/body"
	sse "github.com/toolstream/toolstream/ui/internal/frames"
	"github.com/toolstream/toolstream/ui/internal/thread"
)

// Handler serves useChat's requests and resumes on a ui.Host.
type Handler struct {
	host *thread.Host
	bus  *natsbus.Bus
}

// Option configures a Handler.
type Option func(*Handler)

// WithReplay reads resumed streams back from the bus's durable stream
// (natsbus.WithDurable; the toolkit must publish there). Without it a
// resume reads the response kept in memory.
func WithReplay(bus *natsbus.Bus) Option { return func(h *Handler) { h.bus = bus } }

// NewHandler returns a handler running the host's agent. Mount it for
// POST at useChat's api (default /api/chat) and for GET at
// <api>/{id}/stream (the resume route); it serves both (with no method
// in the patterns if another origin is allowed: its CORS preflights come
// as OPTIONS). Who may call is the host's: its origin checks (ui.WithAllowedOrigins, JSON)
// and its ui.WithAuthorize hook, asked ActionRead on the resume route.
func NewHandler(host *ui.Host, opts ...Option) *Handler {
	h := &Handler{host: (*thread.Host)(host)}
	for _, o := range opts {
		o(h)
	}
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.host.Admit(w, r) { // another origin, not JSON, a preflight
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.chat(w, r)
	case http.MethodGet:
		h.resume(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		sse.HTTPError(w, http.StatusMethodNotAllowed, "POST useChat's request, or GET <api>/<chat id>/stream to resume")
	}
}

func (h *Handler) chat(w http.ResponseWriter, r *http.Request) {
	req, err := readChatRequest(http.MaxBytesReader(w, r.Body, maxWire))
	if err != nil {
		status := http.StatusBadRequest
		if body.TooLarge(err) {
			status = http.StatusRequestEntityTooLarge
		}
		sse.HTTPError(w, status, err.Error())
		return
	}
	input := req.input()
	t, err := h.host.Open(r, req.ID, input) // the host's WithAuthorize decides
	if err != nil {
		sse.HTTPError(w, status(err), err.Error())
		return
	}
	log, err := t.Begin(input)
	var partly *thread.AnswersError
	switch {
	case errors.As(err, &partly):
		// Some answers were given, one could not be (its approval expired
		// just then): the run goes on, and the response says which.
	case errors.Is(err, thread.ErrBusy), errors.Is(err, interceptors.ErrNotPending):
		sse.HTTPError(w, http.StatusConflict, err.Error())
		return
	case err != nil:
		sse.HTTPError(w, status(err), err.Error())
		return
	}
	// The client may go: the run goes on, and a reload resumes it.
	h.stream(w, r.Context(), t, log, partly, func(ctx context.Context, fn func(*events.Event), _ func(*thread.End)) (*thread.End, error) {
		return readLog(ctx, log, fn)
	})
}

// resume serves GET .../<id>/stream: the response in progress from its
// start, or the last one if no client got all of it (it went before the
// end), or 204 No Content when there is none.
func (h *Handler) resume(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if id == "" {
		rest, ok := strings.CutSuffix(strings.TrimSuffix(r.URL.Path, "/"), "/stream")
		if !ok {
			sse.HTTPError(w, http.StatusNotFound, "resume at GET <api>/<chat id>/stream")
			return
		}
		id = rest[strings.LastIndexByte(rest, '/')+1:]
	}
	// Asked whether the chat exists or not: a refusal says nothing of it.
	if err := h.host.Authorize(r, thread.Access{Thread: id, Action: thread.ActionRead}); err != nil {
		sse.HTTPError(w, status(err), err.Error())
		return
	}
	t := h.host.Lookup(id)
	var log *thread.Log
	if t != nil {
		log = t.Undelivered()
	}
	if log == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	// The client starts the message over (useChat's resume is a replay):
	// a response that continues a run after a pause comes with the run's
	// responses before it, whose tool parts it goes on with.
	logs := append(log.Earlier(), log)
	read := func(ctx context.Context, fn func(*events.Event), between func(*thread.End)) (*thread.End, error) {
		return readLogs(ctx, logs, fn, between)
	}
	if e := log.End(); h.bus != nil && (e == nil || !e.Closed) {
		// (A response the host's closing ended has no end in the stream:
		// memory has it whole.)
		read = func(ctx context.Context, fn func(*events.Event), between func(*thread.End)) (*thread.End, error) {
			end, err := h.replay(ctx, t, logs, fn, between)
			if errors.Is(err, errNoReplay) {
				// Nothing was sent yet: the responses kept in memory are the same.
				return readLogs(ctx, logs, fn, between)
			}
			return end, err
		}
	}
	h.stream(w, r.Context(), t, log, nil, read)
}

// readLogs hands the responses' events to fn, one response after the
// other, and the ends before the last one to between; it returns the
// last one's end.
func readLogs(ctx context.Context, logs []*thread.Log, fn func(*events.Event), between func(*thread.End)) (*thread.End, error) {
	for _, l := range logs[:len(logs)-1] {
		end, err := readLog(ctx, l, fn)
		if err != nil {
			return nil, err
		}
		between(end)
	}
	return readLog(ctx, logs[len(logs)-1], fn)
}

// stream writes one response; partly, if set, is said first.
func (h *Handler) stream(w http.ResponseWriter, ctx context.Context, t *thread.Thread, log *thread.Log, partly *thread.AnswersError,
	read func(ctx context.Context, fn func(*events.Event), between func(*thread.End)) (*thread.End, error)) {
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Connection", "keep-alive")
	hd.Set("X-Vercel-AI-UI-Message-Stream", "v1")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	out := &writer{sse.New(w, h.host.WriteTimeout())} // each write bounded (ui.WithWriteTimeout)
	// A failed write (a client that went, or stopped reading for longer
	// than the write timeout) ends the reading as a client that went:
	// the run goes on, and the response stays undelivered for a resume.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	tr := newTranslator(out, fmt.Sprintf("msg-%s-%d", t.Nonce(), log.Run), log.Run)
	tr.begin()
	if partly != nil {
		out.chunk(map[string]any{"type": "data-" + dataAnswers, "id": fmt.Sprintf("answers-%d", log.N), "data": partly.Report()})
	}
	end, err := read(ctx, func(ev *events.Event) {
		tr.event(ev)
		out.Flush()
		if out.Err() != nil {
			stop()
		}
	}, tr.between)
	if err != nil {
		return // the client went
	}
	tr.finish(end)
	out.done()
	out.Flush()
	if out.Err() == nil && ctx.Err() == nil {
		log.Delivered() // as far as the server can tell
	}
}

// readLog hands the response's events to fn until its end.
func readLog(ctx context.Context, log *thread.Log, fn func(*events.Event)) (*thread.End, error) {
	for i := 0; ; {
		if err := ctx.Err(); err != nil {
			return nil, err // the client went: the response stays undelivered
		}
		evs, end, err := log.Next(ctx, i)
		if err != nil {
			return nil, err
		}
		for _, ev := range evs {
			fn(ev)
		}
		i += len(evs)
		if end != nil {
			return end, nil
		}
	}
}

// errNoReplay: the replay could not start (the bus is down or not
// durable) or the stream no longer holds the thread's start; nothing was
// sent from it.
var errNoReplay = errors.New("aisdk: resume from the durable stream")

// replay reads responses logs of the thread (one run's, in order) back
// from the durable stream: the session's events from the start, cut as
// the live thread cut them, until the last one's end. When the host
// closes or forgets the thread meanwhile, the last response ends without
// a mark in the stream: it ends as its log did.
func (h *Handler) replay(ctx context.Context, t *thread.Thread, logs []*thread.Log, fn func(*events.Event), between func(*thread.End)) (*thread.End, error) {
	log := logs[len(logs)-1]
	subject := h.bus.Subjects().Session(t.Session().ID())
	// Where the stored session ends now: a replay that gets there without
	// the thread's first mark (the stream's limits dropped it, or it is
	// not stored yet) would wait for it for ever; the response kept in
	// memory is sent instead.
	var last uint64
	st, err := h.bus.JetStream().Stream(ctx, h.bus.Stream())
	if err == nil {
		var m *jetstream.RawStreamMsg
		if m, err = st.GetLastMsgForSubject(ctx, subject); err == nil {
			last = m.Sequence
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNoReplay, err)
	}
	var (
		mu     sync.Mutex
		queue  []item
		wake   = make(chan struct{}, 1)
		rps    = make([]*thread.Replayer, len(logs)) // one per response
		end    *thread.End
		first  bool // the thread's first mark was found
		absent bool // the stored events up to last do not hold it
	)
	for i := range rps {
		rps[i] = t.NewReplayer()
	}
	stop, err := h.bus.Replay(ctx, subject, 1, func(seq uint64, ev *events.Event) {
		mu.Lock()
		defer mu.Unlock()
		if end != nil || absent {
			return
		}
		for i, rp := range rps {
			keep, e := rp.Add(ev, logs[i].N)
			if keep {
				queue = append(queue, item{ev: ev})
			}
			switch {
			case e != nil && i == len(rps)-1:
				end = e
			case e != nil:
				queue = append(queue, item{end: e}) // an earlier response's end
			}
		}
		if !first && ev.Type == thread.MarkEvent {
			var m thread.Mark
			first = json.Unmarshal(ev.Data, &m) == nil && m.Thread == t.Nonce() && m.Response == 1
		}
		absent = !first && seq >= last
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNoReplay, err)
	}
	defer stop()
	logDone := log.Done()
	var closed *thread.End // the log ended with no mark to come
	for {
		mu.Lock()
		evs, e, none := queue, end, absent
		queue = nil
		mu.Unlock()
		if none {
			return nil, fmt.Errorf("%w: the stream no longer holds the thread's start", errNoReplay)
		}
		for _, it := range evs {
			if it.ev != nil {
				fn(it.ev)
			} else {
				between(it.end)
			}
		}
		if e != nil {
			return e, nil
		}
		if closed != nil {
			return closed, nil
		}
		select {
		case <-wake:
		case <-logDone:
			logDone = nil
			if e := log.End(); e.Closed {
				closed = e // what the replay queued meanwhile goes first
			}
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// item is an event of a replayed response, or the end of a response
// before the last one.
type item struct {
	ev  *events.Event
	end *thread.End
}

// status is the HTTP status of a refused request: the authorization
// hook's (401, 403), 503 while the host closes or when the thread was
// forgotten meanwhile (the request may be tried again), else 400.
func status(err error) int {
	var denied *thread.AccessError
	if errors.As(err, &denied) {
		return denied.Status
	}
	if errors.Is(err, thread.ErrClosed) || errors.Is(err, thread.ErrForgotten) {
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest
}

// writer writes the protocol's chunks as JSON data: frames.
type writer struct{ *sse.Frames }

func (o *writer) chunk(v any) {
	if o.Err() != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"type": "error", "errorText": "toolstream: " + err.Error()})
	}
	o.Data(b)
}

func (o *writer) done() { o.Data([]byte("[DONE]")) }
