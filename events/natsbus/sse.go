package natsbus

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/events"
)

// SSEOptions configures the Server-Sent Events bridge.
type SSEOptions struct {
	// Session returns the session a request asks for. By default it is the
	// "session" query parameter.
	Session func(r *http.Request) string
	// KeepAlive is how often a comment line keeps idle connections open;
	// default 15s.
	KeepAlive time.Duration
	// Retry is the reconnection delay suggested to browsers; default 1s.
	Retry time.Duration
}

// SSEHandler returns an http.Handler that streams one session's events as
// Server-Sent Events: "id" is the event's JetStream sequence, "event" its
// type and "data" its JSON. A browser EventSource that reconnects sends the
// last id it saw (Last-Event-ID) and the stream resumes right after it, so
// nothing is lost or repeated. The bus must be durable.
//
// The session id is untrusted input: it is checked like a toolkit session id
// and encoded into the subject, so one session's stream can never carry
// another's events.
func (b *Bus) SSEHandler(opts SSEOptions) http.Handler {
	if opts.Session == nil {
		opts.Session = func(r *http.Request) string { return r.URL.Query().Get("session") }
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = 15 * time.Second
	}
	if opts.Retry <= 0 {
		opts.Retry = time.Second
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.serveSSE(w, r, &opts)
	})
}

type sseFrame struct {
	seq  uint64
	typ  string
	data []byte
}

func (b *Bus) serveSSE(w http.ResponseWriter, r *http.Request, opts *SSEOptions) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "use GET", http.StatusMethodNotAllowed)
		return
	}
	if b.js == nil {
		http.Error(w, ErrNotDurable.Error(), http.StatusServiceUnavailable)
		return
	}
	session := opts.Session(r)
	if err := events.CheckSessionID(session); err != nil {
		http.Error(w, "bad session id: "+err.Error(), http.StatusBadRequest)
		return
	}
	from := uint64(0)
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("lastEventId") // for EventSource polyfills
	}
	if last != "" {
		n, err := strconv.ParseUint(strings.TrimSpace(last), 10, 64)
		if err != nil {
			http.Error(w, fmt.Sprintf("bad Last-Event-ID %q: want a stream sequence number", last), http.StatusBadRequest)
			return
		}
		from = n + 1
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported by this server", http.StatusInternalServerError)
		return
	}

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	frames := make(chan sseFrame, 256)
	stop, err := b.replayRaw(ctx, b.subjects.Session(session), from, func(seq uint64, subject string, data []byte) {
		// Another publisher may use any token; a type that is not a valid
		// name (a newline in it) would break the stream's framing.
		_, _, typ, err := b.subjects.Parse(subject)
		if err == nil {
			err = events.CheckType(typ)
		}
		if err != nil {
			b.log.Warn().Err(err).Str("subject", subject).Msg("toolstream: not streaming a message that is not an event")
			return
		}
		select {
		case frames <- sseFrame{seq: seq, typ: string(typ), data: data}:
		case <-ctx.Done():
		}
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	// Cancel first: a callback waiting to hand over a frame gives up, and
	// stop can wait for it.
	defer func() { cancel(); stop() }()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "retry: %d\n\n", opts.Retry.Milliseconds())
	flusher.Flush()

	ping := time.NewTicker(opts.KeepAlive)
	defer ping.Stop()
	var buf []byte
	for {
		select {
		case <-ctx.Done():
			return
		case <-ping.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			flusher.Flush()
		case f := <-frames:
			buf = appendFrame(buf[:0], f)
			// Send what else is ready in the same write.
			for more := true; more; {
				select {
				case f = <-frames:
					buf = appendFrame(buf, f)
				default:
					more = false
				}
			}
			if _, err := w.Write(buf); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}

// appendFrame writes one SSE event. The JSON has no raw newlines (they are
// escaped in strings), so one data line carries it.
func appendFrame(dst []byte, f sseFrame) []byte {
	dst = append(dst, "id: "...)
	dst = strconv.AppendUint(dst, f.seq, 10)
	dst = append(dst, "\nevent: "...)
	dst = append(dst, f.typ...)
	dst = append(dst, "\ndata: "...)
	dst = append(dst, f.data...)
	return append(dst, "\n\n"...)
}

// replayRaw is Replay without decoding: the SSE bridge forwards the JSON as
// it was published.
func (b *Bus) replayRaw(ctx context.Context, subject string, from uint64, fn func(seq uint64, subject string, data []byte)) (stop func(), err error) {
	if b.js == nil {
		return nil, ErrNotDurable
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if from > 1 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	}
	cons, err := b.js.OrderedConsumer(ctx, b.durable.Stream, cfg)
	if err != nil {
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
		fn(md.Sequence.Stream, m.Subject(), m.Data())
	})
	if err != nil {
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
		})
	}, nil
}
