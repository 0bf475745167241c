package natsbus

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/events"
	wirenames "github.com/toolstream/toolstream/internal/wire"
)

// How the SSE bridge holds thousands of viewers: a viewer costs the server
// no JetStream consumer. It reads what is stored with batched direct gets
// (no state on the server, nothing left behind when it goes), and follows
// live events through one ordered consumer per bus, shared by all viewers
// and fanned out here by session. A consumer per viewer costs the server a
// consumer with its goroutines, lingers after the client is gone, and runs
// into JetStream's limit of consumers per stream (1,000 by default).
//
// The hub talks to NATS on connections of its own, opened with the shared
// consumer and closed with it: the server answers a connection's direct
// gets in that connection's read loop, one after another, so on the
// publisher's connection a publish would wait behind every viewer's
// catch-up (200 viewers catching up at once made a call's p99 ten to a
// hundred times longer), and nats.go parses all of a connection's messages
// in one loop, the publisher's acknowledgements among them. For the same
// reason the live events and the stored ones come on two connections.

var (
	// hubLinger is how long the shared consumer and the hub's connections
	// outlive the last viewer, so that reloads and reconnect storms (a
	// browser reconnects after 1s) do not create and delete them each time;
	// then the bus is back to what it was before the first viewer.
	hubLinger = 5 * time.Second
	// viewerQueue is how many live frames may wait for one viewer. A viewer
	// further behind (a slow client) drops them and catches up from the
	// stream instead: the hub never waits for a viewer.
	viewerQueue = 512
	// viewerQueueBytes bounds the same in bytes: a session's events can be
	// as large as the max payload (a tool's large output goes out as deltas
	// of up to 1 MiB), and 512 of them held for one stuck client would be
	// half a gigabyte. An empty queue takes one frame whatever its size.
	viewerQueueBytes = 4 << 20
)

const (
	// getBatch and getBytes bound one direct get: what a catching-up viewer
	// holds in memory at a time (the server stops after the message that
	// reaches getBytes).
	getBatch = 256
	getBytes = 64 << 10
	// getConcurrency bounds the direct gets in flight for the whole bus:
	// thousands of viewers connecting at once queue here rather than on the
	// server, which answers a connection's direct gets one after another
	// anyway. Four keep it busy while viewers frame their batches; more
	// only hold answers in memory and stretch the bursts of work that
	// other goroutines (the calls, the live viewers) wait behind.
	getConcurrency = 4
	// getTimeout bounds the wait for the server's answers to one direct get.
	getTimeout = 10 * time.Second
	// numPendingHeader is in every message of a batched direct get: how many
	// more match after it.
	numPendingHeader = "Nats-Num-Pending"
)

// sseFrame is one event ready for the wire, shared by every viewer of its
// session.
type sseFrame struct {
	seq uint64
	b   []byte
}

// hubConn is the hub's way to NATS while the shared consumer runs: two
// connections of its own, one for the live events and one for the stored
// ones, so that a live event never waits behind catch-ups' answers.
type hubConn struct {
	nc   *nats.Conn          // the shared consumer's
	js   jetstream.JetStream // on nc
	gets *nats.Conn          // direct gets
	gone chan struct{}       // closed when the hub closed the connections

	// Every direct get's answers come to one wildcard subscription, each
	// catch-up's to a token of its own under inbox, routed here: a
	// subscription per catch-up would make the server add and remove one
	// for each viewer that connects, and each change takes the lock every
	// publish's routing reads and empties its cache.
	inbox   string // "<inbox>."
	mu      sync.Mutex
	next    uint64
	waiting map[string]chan *nats.Msg
}

func (c *hubConn) close() {
	c.nc.Close()
	c.gets.Close()
	close(c.gone)
}

// expect returns a reply subject of its own and the channel its messages
// come to, with room for a whole batch and its end marker: one batch is
// asked for at a time and read to its end, so the channel never overflows.
func (c *hubConn) expect() (reply string, replies chan *nats.Msg) {
	replies = make(chan *nats.Msg, getBatch+2)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	token := strconv.FormatUint(c.next, 36)
	c.waiting[token] = replies
	return c.inbox + token, replies
}

// forget stops routing a reply subject's messages.
func (c *hubConn) forget(reply string) {
	c.mu.Lock()
	delete(c.waiting, reply[len(c.inbox):])
	c.mu.Unlock()
}

// route hands a direct get's answer to the catch-up that asked for it. One
// nobody waits for any more (a get that timed out) is dropped.
func (c *hubConn) route(m *nats.Msg) {
	c.mu.Lock()
	replies := c.waiting[strings.TrimPrefix(m.Subject, c.inbox)]
	c.mu.Unlock()
	select {
	case replies <- m: // a nil channel never takes one
	default:
	}
}

// viewer is one SSE client of the hub.
type viewer struct {
	tok  string
	wake chan struct{} // capacity 1: something changed
	conn *hubConn      // the hub's connection while the viewer is joined

	mu     sync.Mutex
	q      []sseFrame
	qBytes int  // the bytes of the frames in q
	lost   bool // frames were dropped: catch up from the stream
	done   bool // the bus is closing

	// The client's connection: its write deadline, which Bus.Close sets in
	// the past so that a write blocked on a client that stopped reading
	// returns. Under cutMu, apart from mu: setting a deadline may wait
	// (HTTP/2), and dispatch must not.
	cutMu sync.Mutex
	rc    *http.ResponseController
	cut   bool
}

// deadline sets the write deadline of the viewer's connection, unless the
// bus cut it.
func (v *viewer) deadline(t time.Time) {
	v.cutMu.Lock()
	defer v.cutMu.Unlock()
	if !v.cut && v.rc != nil {
		v.rc.SetWriteDeadline(t)
	}
}

// cutOff makes the viewer's writes fail from now on.
func (v *viewer) cutOff() {
	v.cutMu.Lock()
	defer v.cutMu.Unlock()
	v.cut = true
	if v.rc != nil {
		v.rc.SetWriteDeadline(time.Now())
	}
}

func (v *viewer) push(f sseFrame) {
	v.mu.Lock()
	switch {
	case v.lost:
	case len(v.q) >= viewerQueue || len(v.q) > 0 && v.qBytes+len(f.b) > viewerQueueBytes:
		v.lost, v.q, v.qBytes = true, nil, 0
	default:
		v.q = append(v.q, f)
		v.qBytes += len(f.b)
	}
	v.mu.Unlock()
	v.signal()
}

func (v *viewer) signal() {
	select {
	case v.wake <- struct{}{}:
	default:
	}
}

// take hands over the queued frames, swapping in spare (emptied) so that the
// two slices are reused.
func (v *viewer) take(spare []sseFrame) (q []sseFrame, lost, done bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	q, v.q, v.qBytes = v.q, spare[:0], 0
	lost, v.lost = v.lost, false
	return q, lost, v.done
}

// sseHub fans the bus's live events out to SSE viewers by session.
type sseHub struct {
	b      *Bus
	prefix string        // "<prefix>."
	gets   chan struct{} // direct gets in flight
	last   atomic.Uint64 // highest stream sequence the consumer delivered
	// catchUps counts viewers that fell behind and read back from the
	// stream.
	catchUps atomic.Int64

	run    sync.Mutex // serializes starting and stopping; guards conn, cons, cc, closed
	conn   *hubConn
	cons   jetstream.Consumer
	cc     jetstream.ConsumeContext
	closed bool

	mu      sync.Mutex // guards viewers, n, idle, ended; never held across a NATS call
	viewers map[string]map[*viewer]struct{}
	n       int
	idle    *time.Timer
	ended   bool // closed: no idle timer any more
}

func newHub(b *Bus) *sseHub {
	return &sseHub{
		b:       b,
		prefix:  strings.TrimSuffix(b.subjects.All(), ">"),
		gets:    make(chan struct{}, getConcurrency),
		viewers: map[string]map[*viewer]struct{}{},
	}
}

// join adds a viewer of the session whose subject token is tok, starting the
// shared consumer first if it is not running: from then on every event of
// the session stored later reaches the viewer.
func (h *sseHub) join(ctx context.Context, tok string, rc *http.ResponseController) (*viewer, error) {
	h.run.Lock()
	defer h.run.Unlock()
	if h.closed {
		return nil, errors.New("events: the bus is closed")
	}
	if h.cc == nil {
		if err := h.start(ctx); err != nil {
			return nil, err
		}
	}
	v := &viewer{tok: tok, wake: make(chan struct{}, 1), conn: h.conn, rc: rc}
	h.mu.Lock()
	set := h.viewers[tok]
	if set == nil {
		set = map[*viewer]struct{}{}
		h.viewers[tok] = set
	}
	set[v] = struct{}{}
	h.n++
	if h.idle != nil {
		h.idle.Stop()
	}
	h.mu.Unlock()
	return v, nil
}

func (h *sseHub) leave(v *viewer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	set := h.viewers[v.tok]
	if _, ok := set[v]; !ok {
		return
	}
	delete(set, v)
	if len(set) == 0 {
		delete(h.viewers, v.tok)
	}
	h.n--
	if h.n == 0 && !h.ended {
		if h.idle == nil {
			h.idle = time.AfterFunc(hubLinger, h.stopIfIdle)
		} else {
			h.idle.Reset(hubLinger)
		}
	}
}

// start connects and creates the shared consumer: the events under the
// prefix stored after the stream's current end. Called holding run.
// Connecting costs the first viewer after an idle spell a round trip or two.
func (h *sseHub) start(ctx context.Context) error {
	b := h.b
	timeout := connectTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	if err := ctx.Err(); err != nil || timeout <= 0 {
		return fmt.Errorf("events: following %s: %w", b.subjects.All(), cmp.Or(err, context.DeadlineExceeded))
	}
	nc, err := b.dial("toolstream-sse", timeout, true)
	if err != nil {
		return fmt.Errorf("events: following %s: connecting to NATS at %s: %w", b.subjects.All(), redact(b.url), err)
	}
	gets, err := b.dial("toolstream-sse-gets", timeout, true)
	if err != nil {
		nc.Close()
		return fmt.Errorf("events: following %s: connecting to NATS at %s: %w", b.subjects.All(), redact(b.url), err)
	}
	c := &hubConn{nc: nc, gets: gets, gone: make(chan struct{}), inbox: gets.NewInbox() + ".", waiting: map[string]chan *nats.Msg{}}
	if c.js, err = jetstream.New(nc); err == nil {
		_, err = gets.Subscribe(c.inbox+"*", c.route)
	}
	if err == nil {
		err = gets.Flush() // the subscription is in place before the first get
	}
	if err != nil {
		c.close()
		return fmt.Errorf("events: following %s: %w", b.subjects.All(), err)
	}
	if err := h.follow(ctx, c); err != nil {
		c.close()
		return err
	}
	h.conn = c
	return nil
}

// follow creates the shared consumer on c and starts it.
func (h *sseHub) follow(ctx context.Context, c *hubConn) error {
	b := h.b
	stream, err := c.js.Stream(ctx, b.durable.Stream)
	if err != nil {
		return fmt.Errorf("events: following %s: %w", b.subjects.All(), err)
	}
	end := stream.CachedInfo().State.LastSeq
	// A start sequence rather than "new events only": should the consumer
	// be recreated before it delivered anything (a reconnect), it starts at
	// the same place instead of at the end of then, which would skip what
	// came between.
	cons, err := c.js.OrderedConsumer(ctx, b.durable.Stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{b.subjects.Events()},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    end + 1,
	})
	if err != nil {
		return fmt.Errorf("events: following %s: %w", b.subjects.All(), err)
	}
	h.noteSeq(end)
	cc, err := cons.Consume(h.dispatch)
	if err != nil {
		deleteConsumer(b, c.nc, c.js, cons)
		return fmt.Errorf("events: following %s: %w", b.subjects.All(), err)
	}
	h.cons, h.cc = cons, cc
	return nil
}

// stop ends the shared consumer, deletes it on the server and closes the
// hub's connection. Called holding run.
func (h *sseHub) stop() {
	if h.cc == nil {
		return
	}
	h.cc.Stop()
	<-h.cc.Closed()
	deleteConsumer(h.b, h.conn.nc, h.conn.js, h.cons)
	h.conn.close()
	h.conn, h.cons, h.cc = nil, nil, nil
}

func (h *sseHub) stopIfIdle() {
	h.run.Lock()
	defer h.run.Unlock()
	h.mu.Lock()
	idle := h.n == 0
	h.mu.Unlock()
	if idle {
		h.stop()
	}
}

// close ends every viewer's stream and the shared consumer.
func (h *sseHub) close() {
	h.run.Lock()
	defer h.run.Unlock()
	h.closed = true
	h.mu.Lock()
	h.ended = true
	if h.idle != nil {
		h.idle.Stop()
	}
	for _, set := range h.viewers {
		for v := range set {
			v.mu.Lock()
			v.done = true
			v.mu.Unlock()
			v.signal()
			v.cutOff() // a handler blocked writing to a client that stopped reading
		}
	}
	h.mu.Unlock()
	h.stop()
}

func (h *sseHub) noteSeq(seq uint64) {
	for {
		cur := h.last.Load()
		if seq <= cur || h.last.CompareAndSwap(cur, seq) {
			return
		}
	}
}

// dispatch hands one live event to the viewers of its session. It runs on
// the consumer's goroutine, one event at a time in stream order, and never
// waits for a viewer.
func (h *sseHub) dispatch(m jetstream.Msg) {
	md, err := m.Metadata()
	if err != nil {
		return
	}
	seq := md.Sequence.Stream
	h.noteSeq(seq)
	subject := m.Subject()
	tok, _, _ := strings.Cut(strings.TrimPrefix(subject, h.prefix), ".")
	h.mu.Lock()
	watched := len(h.viewers[tok]) > 0
	h.mu.Unlock()
	if !watched {
		return
	}
	b, ok := h.b.frame(nil, seq, subject, m.Data(), m.Headers())
	if !ok {
		return
	}
	f := sseFrame{seq: seq, b: b}
	h.mu.Lock()
	for v := range h.viewers[tok] {
		v.push(f)
	}
	h.mu.Unlock()
}

// frame appends one SSE event to dst, or reports false for a message that
// must not be streamed: another publisher may use any token, and a type that
// is not a valid name (a newline in it) would break the stream's framing.
//
// SSE has no headers: the trace context in the message's headers h goes
// into the event's JSON as its first fields, "traceparent" and
// "tracestate" (events.Decode reads them back into Event.Trace).
func (b *Bus) frame(dst []byte, seq uint64, subject string, data []byte, h nats.Header) ([]byte, bool) {
	_, _, typ, err := b.subjects.Parse(subject)
	if err == nil {
		err = events.CheckType(typ)
	}
	if err == nil && (bytes.IndexByte(data, '\n') >= 0 || bytes.IndexByte(data, '\r') >= 0) {
		// An event's JSON has none (they are escaped in strings): another
		// publisher's could make up frames, ids and types of its own.
		err = errors.New("a line break in the data")
	}
	if err != nil {
		b.log.Warn().Err(err).Str("subject", subject).Msg("toolstream: not streaming a message that is not an event")
		return dst, false
	}
	// The JSON has no raw line breaks, so one data line carries it.
	dst = append(dst, "id: "...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, "\nevent: "...)
	dst = append(dst, typ...)
	dst = append(dst, "\ndata: "...)
	// The trace fields go in front of the first field: only into an object
	// that starts with one, as the publisher writes them.
	if parent := h.Get(wirenames.HeaderTraceParent); parent != "" && len(data) > 2 && data[0] == '{' && data[1] == '"' {
		dst = appendTraceFields(dst, parent, h.Get(wirenames.HeaderTraceState))
		data = data[1:]
	}
	dst = append(dst, data...)
	return append(dst, "\n\n"...), true
}

// appendTraceFields opens a JSON object with the trace context's fields,
// each only if its value is one a W3C header may hold (printable ASCII, no
// quote or backslash, so that it needs no escaping); another publisher's
// headers may hold anything.
func appendTraceFields(dst []byte, parent, state string) []byte {
	dst = append(dst, '{')
	for _, f := range [...]struct{ name, value string }{
		{wirenames.HeaderTraceParent, parent},
		{wirenames.HeaderTraceState, state},
	} {
		if f.value == "" || len(f.value) > 512 || !plainHeaderValue(f.value) {
			continue
		}
		dst = append(dst, '"')
		dst = append(dst, f.name...)
		dst = append(dst, `":"`...)
		dst = append(dst, f.value...)
		dst = append(dst, `",`...)
	}
	return dst
}

func plainHeaderValue(v string) bool {
	for i := range len(v) {
		if c := v[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// errNoDirectGet reports a stream that does not answer direct gets.
var errNoDirectGet = errors.New("the stream does not answer direct gets (allow_direct is off, or the stream is gone)")

// readStored passes the events stored on subject from stream sequence from
// on to each, in stream order, one batched direct get at a time on c, and
// after each batch calls flush; it returns the sequence of the last event
// (0 if there was none). each runs as the answers come and must keep
// nothing of a message but what it copies: a batch is never held as
// messages (their parsed headers are ten times their data). flush may
// write to a client and block: it runs once the batch has left the
// bus-wide bound on direct gets, so a client that does not read holds up
// no other viewer.
func (h *sseHub) readStored(ctx context.Context, c *hubConn, subject string, from uint64,
	each func(seq uint64, subject string, data []byte, h nats.Header), flush func() error) (last uint64, err error) {
	b := h.b
	inbox, replies := c.expect()
	defer c.forget(inbox)
	api := jetstream.DefaultAPIPrefix + "DIRECT.GET." + b.durable.Stream
	type request struct {
		Seq      uint64 `json:"seq"`
		Next     string `json:"next_by_subj"`
		Batch    int    `json:"batch"`
		MaxBytes int    `json:"max_bytes"`
	}
	from = max(from, 1)
	for {
		req, _ := json.Marshal(request{Seq: from, Next: subject, Batch: getBatch, MaxBytes: getBytes})
		got := 0
		more, err := h.getBatch(ctx, c, replies, &nats.Msg{Subject: api, Reply: inbox, Data: req}, func(m *nats.Msg) {
			seq, _ := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
			each(seq, m.Header.Get(jetstream.SubjectHeader), m.Data, m.Header)
			last = seq
			got++
		})
		if err != nil {
			return last, fmt.Errorf("events: reading %s from %d: %w", subject, from, err)
		}
		if got > 0 {
			if err := flush(); err != nil {
				return last, err
			}
		}
		if !more || got == 0 {
			break
		}
		from = last + 1
	}
	return last, nil
}

// getBatch sends one direct get on c and passes its answers to fn. more
// reports that the server stopped at the batch's limits with more to come.
func (h *sseHub) getBatch(ctx context.Context, c *hubConn, replies <-chan *nats.Msg, req *nats.Msg, fn func(*nats.Msg)) (more bool, err error) {
	select {
	case h.gets <- struct{}{}:
	case <-ctx.Done():
		return false, ctx.Err()
	case <-c.gone:
		return false, errHubClosed
	}
	defer func() { <-h.gets }()
	ctx, cancel := context.WithTimeout(ctx, getTimeout)
	defer cancel()
	if err := c.gets.PublishMsg(req); err != nil {
		return false, err
	}
	for {
		var m *nats.Msg
		select {
		case m = <-replies:
		case <-ctx.Done():
			return false, context.Cause(ctx)
		case <-c.gone:
			return false, errHubClosed
		}
		switch status := m.Header.Get("Status"); status {
		case "":
		case "404": // nothing (more) matches
			return false, nil
		case "204": // end of batch
			return m.Header.Get(numPendingHeader) != "0", nil
		case "503":
			return false, errNoDirectGet
		default:
			return false, fmt.Errorf("direct get: %s %s", status, m.Header.Get("Description"))
		}
		if m.Header.Get(numPendingHeader) == "" {
			return false, errors.New("the NATS server does not support batched direct gets (it needs NATS 2.11 or newer)")
		}
		fn(m)
	}
}

// errHubClosed ends what a viewer asked NATS for when the bus closes.
var errHubClosed = errors.New("events: the bus is closed")

// lastSeq returns a lower bound of the stream's last sequence that is at
// least its value when the caller's viewer joined: the last stored message,
// or what the shared consumer has seen.
func (h *sseHub) lastSeq(ctx context.Context, c *hubConn) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, getTimeout)
	defer cancel()
	m, err := c.gets.RequestWithContext(ctx, jetstream.DefaultAPIPrefix+"DIRECT.GET."+h.b.durable.Stream, []byte(`{"last_by_subj":">"}`))
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			err = errNoDirectGet
		}
		return 0, fmt.Errorf("events: the end of stream %s: %w", h.b.durable.Stream, err)
	}
	seq := h.last.Load()
	if m.Header.Get("Status") == "" {
		if s, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64); err == nil {
			seq = max(seq, s)
		}
	}
	return seq, nil
}

// deleteConsumer deletes a stopped ordered consumer on the server, instead of
// leaving it there until its inactivity threshold (5 minutes) counting
// against the stream's consumer limit. Best effort: when the connection is
// down, the threshold does it.
func deleteConsumer(b *Bus, nc *nats.Conn, js jetstream.JetStream, cons jetstream.Consumer) {
	info := cons.CachedInfo()
	if info == nil || !nc.IsConnected() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := js.DeleteConsumer(ctx, b.durable.Stream, info.Name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		b.log.Warn().Err(err).Str("consumer", info.Name).Msg("toolstream: could not delete a consumer; the server drops it after 5 minutes idle")
	}
}
