package natsbus

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events"
)

// SSEHandler returns an http.Handler that streams one session's events as
// Server-Sent Events: "id" is the event's JetStream sequence, "event" its
// type and "data" its JSON. A browser EventSource that reconnects sends the
// last id it saw (Last-Event-ID) and the stream resumes right after it, so
// nothing is lost or repeated; an id at or past the end of the stream
// resumes at the end. The bus must be durable.
//
// A viewer costs no JetStream consumer: the stored events are read with
// direct gets and the live ones come from one consumer the bus shares
// between all viewers, so nothing is left on the server when a client goes.
// Both come on two NATS connections of the bridge's own (made with the
// bus's options with the first viewer, closed 5s after the last), never on
// the publisher's, so that viewers do not slow the agent's events. At most
// [WithMaxViewers] clients are served at once.
//
// The session id is untrusted input: it is checked like a toolkit session id
// and encoded into the subject, so one session's stream can never carry
// another's events.
func (b *Bus) SSEHandler(options ...SSEOption) http.Handler {
	opts := sseOptions{
		session:   func(r *http.Request) string { return r.URL.Query().Get("session") },
		keepAlive: 15 * time.Second, retry: time.Second,
		maxViewers: defaultMaxViewers, retryAfter: 5 * time.Second, writeTimeout: 30 * time.Second,
	}
	for _, o := range options {
		o(&opts)
	}
	var active atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.serveSSE(w, r, &opts, &active)
	})
}

// parseLastEventID reads the id a reconnecting client sends: a stream
// sequence, in decimal.
func parseLastEventID(s string) (uint64, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad Last-Event-ID %q: want a stream sequence number", s)
	}
	return n, nil
}

// sseWriter writes the response, sending the headers with the first flush
// so that a failure before it can still be an HTTP error.
type sseWriter struct {
	w       http.ResponseWriter
	f       http.Flusher
	v       *viewer
	timeout time.Duration // each flush's bound; <= 0: none
	started bool
	buf     []byte
}

func newSSEWriter(w http.ResponseWriter, f http.Flusher, v *viewer, timeout, retry time.Duration) *sseWriter {
	s := &sseWriter{w: w, f: f, v: v, timeout: timeout}
	s.buf = append(s.buf, "retry: "...)
	s.buf = strconv.AppendInt(s.buf, retry.Milliseconds(), 10)
	s.buf = append(s.buf, "\n\n"...)
	return s
}

func (s *sseWriter) start() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
}

// flush writes what is buffered.
func (s *sseWriter) flush() error {
	if s.timeout > 0 {
		s.v.deadline(time.Now().Add(s.timeout))
	}
	s.start()
	if len(s.buf) > 0 {
		_, err := s.w.Write(s.buf)
		s.buf = s.buf[:0]
		if err != nil {
			return err
		}
	}
	s.f.Flush()
	return nil
}

// trim lets a large buffer go (a catch-up's, a large event's): an idle
// viewer keeps at most a small one. A catch-up's goes back to the pool.
func (s *sseWriter) trim() {
	if cap(s.buf) <= 8<<10 {
		return
	}
	if cap(s.buf) <= 2*getBytes {
		b := s.buf[:0]
		catchUpBufs.Put(&b)
	}
	s.buf = nil
}

// forBatch makes the buffer room for a direct get's answer, from the pool.
func (s *sseWriter) forBatch() {
	if cap(s.buf) >= getBytes {
		return
	}
	b := *catchUpBufs.Get().(*[]byte)
	s.buf = append(b, s.buf...)
}

// catchUpBufs holds the buffers in which viewers frame a direct get's answer
// (about getBytes), between batches: thousands of viewers catching up hold
// one only while they write it, and allocate none per batch.
var catchUpBufs = sync.Pool{New: func() any {
	b := make([]byte, 0, getBytes+4<<10)
	return &b
}}

func (b *Bus) serveSSE(w http.ResponseWriter, r *http.Request, opts *sseOptions, active *atomic.Int64) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "use GET", http.StatusMethodNotAllowed)
		return
	}
	if b.js == nil {
		http.Error(w, ErrNotDurable.Error(), http.StatusServiceUnavailable)
		return
	}
	session := opts.session(r)
	if err := events.CheckSessionID(session); err != nil {
		http.Error(w, "bad session id: "+err.Error(), http.StatusBadRequest)
		return
	}
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("lastEventId") // for EventSource polyfills
	}
	var seen uint64 // the client has every event up to this sequence
	if last != "" {
		n, err := parseLastEventID(last)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		seen = n
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported by this server", http.StatusInternalServerError)
		return
	}
	if n := active.Add(1); opts.maxViewers > 0 && n > int64(opts.maxViewers) {
		active.Add(-1)
		w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(opts.retryAfter.Seconds())), 10))
		http.Error(w, fmt.Sprintf("too many viewers: this server streams to at most %d at once; retry later", opts.maxViewers), http.StatusServiceUnavailable)
		return
	}
	defer active.Add(-1)

	ctx := r.Context()
	tok := events.EncodeToken(session)
	subject := b.subjects.Session(session)
	rc := http.NewResponseController(w)
	// Deferred before leave, so it runs after: once the viewer has left,
	// Bus.Close cannot cut the connection any more, and a connection kept
	// for another request has no deadline of ours.
	defer rc.SetWriteDeadline(time.Time{})
	v, err := b.hub.join(ctx, tok, rc)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer b.hub.leave(v)

	sw := newSSEWriter(w, flusher, v, opts.writeTimeout, opts.retry)
	// catchUp writes the stored events after next-1 and returns the next
	// sequence the client needs: everything the viewer is sent from then on
	// comes live, and a live frame below it is one the client has. It holds
	// one direct get's worth of frames at a time (getBytes and a message).
	catchUp := func(next uint64) (uint64, error) {
		defer sw.trim()
		end, err := b.hub.readStored(ctx, v.conn, subject, next, func(seq uint64, subj string, data []byte, h nats.Header) {
			sw.forBatch()
			sw.buf, _ = b.frame(sw.buf, seq, subj, data, h)
		}, func() error {
			err := sw.flush()
			sw.trim()
			return err
		})
		if err != nil {
			return next, err
		}
		if end > 0 {
			return end + 1, nil
		}
		return next, nil
	}
	var next uint64
	if last == "" {
		next, err = catchUp(1)
	} else {
		if seen < math.MaxUint64 {
			next, err = catchUp(seen + 1)
		}
		if err == nil && (seen == math.MaxUint64 || next == seen+1) {
			// Nothing stored after the id: it may be at or past the end
			// (a made-up id, or one from a stream since recreated).
			// Resume at the end, so that new events are not taken for
			// ones the client has. An id the shared consumer has passed
			// is not past the end: no need to ask the server.
			end := b.hub.last.Load()
			if seen > end {
				end, err = b.hub.lastSeq(ctx, v.conn)
			}
			next = min(seen, end) + 1
		}
	}
	if err != nil {
		if !sw.started {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		} else {
			b.log.Warn().Err(err).Str("session", session).Msg("toolstream: SSE stream ended")
		}
		return
	}
	if sw.flush() != nil {
		return
	}

	ping := time.NewTicker(opts.keepAlive)
	defer ping.Stop()
	var spare []sseFrame
	for {
		select {
		case <-ctx.Done():
			return
		case <-ping.C:
			sw.buf = append(sw.buf, ": keep-alive\n\n"...)
		case <-v.wake:
			q, lost, done := v.take(spare)
			if done {
				return
			}
			if lost {
				// This client fell behind the live events: read them
				// back from the stream instead.
				b.hub.catchUps.Add(1)
				if next, err = catchUp(next); err != nil {
					if !errors.Is(err, context.Canceled) && !errors.Is(err, errHubClosed) {
						b.log.Warn().Err(err).Str("session", session).Msg("toolstream: SSE stream ended")
					}
					return
				}
			}
			for _, f := range q {
				if f.seq >= next {
					sw.buf = append(sw.buf, f.b...)
					next = f.seq + 1
				}
			}
			clear(q) // let frames go
			spare = q
		}
		if sw.flush() != nil {
			return
		}
		sw.trim()
	}
}
