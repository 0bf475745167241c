package remote

import (
	"encoding/json"
	"fmt"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/wire"
	"github.com/toolstream/toolstream/toolkit"
)

// The defaults of workers and clients (the service, prefix and queue
// group are internal/wire's).
const (
	defaultMaxInFlight      = 64
	defaultMaxQueued        = 8192
	defaultMaxQueuedBytes   = 64 << 20 // NATS's own default bound of a subscription's pending bytes
	defaultKeepResults      = 10 * time.Second
	defaultHeartbeat        = time.Second
	defaultMissedHeartbeats = 3
	defaultCancelWait       = 200 * time.Millisecond // inside the toolkit's default cancel grace of 250 ms
	defaultDiscoverWait     = time.Second
)

// minHeartbeat is the shortest heartbeat interval a worker keeps to.
const minHeartbeat = 10 * time.Millisecond

// A worker's timings that are not options.
const (
	// acceptAfter: a call still held this long after it came gets its
	// accept frame (a call that declares itself not idempotent gets it at
	// once, before it runs). A call that ends sooner costs two messages,
	// the request and its result, as a bare NATS request does.
	acceptAfter = 20 * time.Millisecond
	// flushAfter: a delta waits at most this long on the worker before it
	// goes out, so that a tool's stream reaches people as it is written,
	// while a tool that returns at once sends its content in the result
	// frame only.
	flushAfter = 20 * time.Millisecond
	// flushBytes: deltas held back that add up to this many bytes go out
	// at once.
	flushBytes = 64 << 10
	// pulse is how often a worker looks for frames that are due (accepts,
	// heartbeats, deltas held back), while it holds calls.
	pulse = 10 * time.Millisecond
)

// serverAPI reports whether a reply subject is one of the server's own
// ($JS.API..., $KV..., $SYS..., any subject that starts with "$"), which
// no caller's inbox is. A worker publishes nothing there: its frames and
// refusals have empty bodies, and an empty message to
// $JS.API.STREAM.DELETE.<stream> deletes the stream, so a request naming
// such a reply subject would make the worker act on JetStream with its own
// credentials for whoever sent it.
func serverAPI(reply string) bool { return strings.HasPrefix(reply, "$") }

// Frame types.
const (
	frameAccept   = "accept"
	frameBeat     = "hb"
	frameProgress = "progress"
	frameDelta    = "delta"
	frameResult   = "result"
	frameCancel   = "cancel" // the worker took a cancellation: the result follows
)

// protocol is the wire protocol's version, in the service metadata. Version
// 2 (see docs/scale-out.md) replaced version 1's accept-at-once, per-worker
// cancel subjects and repeated results; a client speaks one version and
// leaves out workers of another.
const protocol = "2"

// Refusal codes a worker answers with (micro's Nats-Service-Error-Code).
const (
	codeBadRequest = "400"
	codeUnknown    = "404"
	codeConflict   = "409"
	codeBusy       = "503"
)

// wireSpec is a tool's spec as it travels in endpoint metadata.
type wireSpec struct {
	Name            string `json:"name"`
	Description     string `json:"description,omitempty"`
	Title           string `json:"title,omitempty"`
	ReadOnly        bool   `json:"read_only,omitempty"`
	ConcurrencySafe bool   `json:"concurrency_safe,omitempty"`
	TimeoutMS       int64  `json:"timeout_ms,omitempty"`
	Destructive     *bool  `json:"destructive,omitempty"`
	Idempotent      *bool  `json:"idempotent,omitempty"`
	OpenWorld       *bool  `json:"open_world,omitempty"`
	ReturnDirect    bool   `json:"return_direct,omitempty"`
}

func toWire(s toolkit.Spec) wireSpec {
	return wireSpec{
		Name: s.Name, Description: s.Description, Title: s.Title, ReadOnly: s.ReadOnly,
		ConcurrencySafe: s.ConcurrencySafe, TimeoutMS: s.Timeout.Milliseconds(),
		Destructive: s.Destructive, Idempotent: s.Idempotent, OpenWorld: s.OpenWorld,
		ReturnDirect: s.ReturnDirect,
	}
}

func (w wireSpec) spec() toolkit.Spec {
	return toolkit.Spec{
		Name: w.Name, Description: w.Description, Title: w.Title, ReadOnly: w.ReadOnly,
		ConcurrencySafe: w.ConcurrencySafe, Timeout: time.Duration(w.TimeoutMS) * time.Millisecond,
		Destructive: w.Destructive, Idempotent: w.Idempotent, OpenWorld: w.OpenWorld,
		ReturnDirect: w.ReturnDirect,
	}
}

// wireProgress is the body of a progress frame.
type wireProgress struct {
	Message  string          `json:"message,omitempty"`
	Fraction *float64        `json:"fraction,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
}

// wireResult is the body of a result frame: the worker's final result.
type wireResult struct {
	State   events.State  `json:"state"`
	Content []events.Part `json:"content"`
	Omitted bool          `json:"content_omitted,omitempty"` // too large for one message: the deltas are the content
	Error   string        `json:"error,omitempty"`
	Timeout bool          `json:"timeout,omitempty"` // the worker's engine said timeout
	// Transient: the error was marked worth retrying on the worker
	// (interceptors.IsTransient); the caller marks it again.
	Transient bool           `json:"transient,omitempty"`
	Meta      map[string]any `json:"meta,omitempty"`
	// MetaOmitted: the meta was too large for the message even without
	// the content, and was left out.
	MetaOmitted bool `json:"meta_omitted,omitempty"`
	// NotRun: the call ended while it waited for a slot on the worker: its
	// tool never ran.
	NotRun bool `json:"not_run,omitempty"`
}

// MarshalJSON writes the result frame's body without reflection but for
// the meta: a worker writes one per call, and encoding/json took a fifth of
// its time. The parts go in the events' encoding (events.Part.MarshalJSON).
func (r wireResult) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 64+contentSize(r.Content))
	b = append(b, `{"state":`...)
	b = appendJSONString(b, string(r.State))
	if r.Omitted {
		b = append(b, `,"content_omitted":true`...)
	} else {
		b = append(b, `,"content":[`...)
		for i, p := range r.Content {
			if i > 0 {
				b = append(b, ',')
			}
			pj, _ := p.MarshalJSON()
			b = append(b, pj...)
		}
		b = append(b, ']')
	}
	if r.Error != "" {
		b = append(b, `,"error":`...)
		b = appendJSONString(b, r.Error)
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{r.Timeout, "timeout"}, {r.Transient, "transient"}, {r.MetaOmitted, "meta_omitted"}, {r.NotRun, "not_run"}} {
		if f.on {
			b = append(b, `,"`...)
			b = append(b, f.name...)
			b = append(b, `":true`...)
		}
	}
	if len(r.Meta) > 0 {
		m, err := json.Marshal(r.Meta)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"meta":`...)
		b = append(b, m...)
	}
	return append(b, '}'), nil
}

func contentSize(content []events.Part) int {
	n := 0
	for _, p := range content {
		n += len(p.Text) + len(p.JSON) + len(p.Data)*4/3 + 32
	}
	return n
}

// appendJSONString writes s as a JSON string, by encoding/json's rules.
func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// frameRoom is what a frame keeps free for its headers (a result frame's
// take about 150 bytes): a frame's body is at most the server's max
// payload less this, or half of it on a server that takes tiny messages.
const frameRoom = 512

// frameLimit is the largest frame body a connection sends.
func frameLimit(nc *nats.Conn) int {
	n := int(nc.MaxPayload())
	if n <= 0 {
		n = 1 << 20 // nats-server's default, while the server's is unknown
	}
	return n - min(frameRoom, n/2)
}

// parseChunk reads a HeaderChunk value: index and count, 0 <= index < count.
func parseChunk(s string) (index, count int, ok bool) {
	i, n, found := strings.Cut(s, "/")
	if !found {
		return 0, 0, false
	}
	index, err1 := strconv.Atoi(i)
	count, err2 := strconv.Atoi(n)
	if err1 != nil || err2 != nil || index < 0 || index >= count {
		return 0, 0, false
	}
	return index, count, true
}

func frameSeq(m *nats.Msg) uint64 {
	n, _ := strconv.ParseUint(m.Header.Get(wire.HeaderSeq), 10, 64)
	return n
}

// msHeader writes a duration for a request: 1 ms to maxMS, what parseMS
// takes (a longer deadline or heartbeat is sent as the longest).
func msHeader(d time.Duration) string {
	return strconv.FormatInt(min(max(d.Milliseconds(), 1), maxMS), 10)
}

// maxMS bounds the durations a request may carry (30 days), far from
// overflowing a time.Duration.
const maxMS int64 = 30 * 24 * 3600 * 1000

func parseMS(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > maxMS {
		return 0, fmt.Errorf("not a number of milliseconds from 1 to %d: %q", maxMS, s)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// setID sets an id's header, and its quoted header too when NATS would not
// carry the id as it is (it trims header values, and turns line breaks into
// spaces).
func setID(h nats.Header, key, quoted, id string) {
	h.Set(key, id)
	if id != textproto.TrimString(id) || strings.ContainsAny(id, "\r\n") {
		h.Set(quoted, strconv.Quote(id))
	}
}

// getID reads an id that setID set.
func getID(h nats.Header, key, quoted string) (string, error) {
	q := h.Get(quoted)
	if q == "" {
		return h.Get(key), nil
	}
	id, err := strconv.Unquote(q)
	if err != nil {
		return "", fmt.Errorf("%s: not a quoted string: %q", quoted, q)
	}
	return id, nil
}
