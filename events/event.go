// Package events defines the lifecycle events of tool calls: the envelope every
// observer receives in process and, later, what goes over NATS.
//
// A call produces, with a per-call sequence number starting at 1 and no
// gaps:
//
//	start                  the call left the queue and is about to run
//	suspend, approval      only for a call that waits (an external tool, a person)
//	args                   only when interceptors changed the arguments (see [Args])
//	(progress | delta)*    interleaved: progress for people, deltas for the model
//	result                 exactly once, last: the state and the model-visible content
//
// The content of the result is exactly the concatenation of the call's deltas
// (see [AppendPart]); progress is never part of it. A call that was interrupted
// or timed out before it got a slot has no start event. Dropped progress is
// said in the next progress event ([Progress].Dropped), or in the result
// ([Result].Dropped) when no progress event follows, never by a gap.
//
// An event too large for one message goes out in pieces ([Fit]): a long text
// as several deltas, another part as chunks ([Chunk]), a result without its
// content (Result.ContentOmitted); a [Reassembler] rebuilds the content.
//
// Session-level events (Call empty) report what UIs show beside calls, such as
// the tool groups active in a session; their body is in Data and their type
// names it. They are numbered per session.
//
// The package is the protocol only, with no dependency outside the standard
// library: the envelope, the content rule ([AppendPart], [Reassembler]), the
// subject rule ([Subjects], [EncodeToken]) and the wire codec ([AppendJSON],
// [Decode]). Package events/natsbus carries the events over NATS.
// docs/events.md describes the protocol for clients in other languages.
package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"
)

// Version is the version of the event envelope. It changes only when a change
// would break a consumer that ignores unknown fields.
const Version = 1

// Type names the kind of an event.
type Type string

// MaxSessionIDLen is the longest session id, in bytes.
const MaxSessionIDLen = 256

// CheckSessionID reports whether id can be a session id: 1 to
// MaxSessionIDLen bytes of valid UTF-8 without control characters. Any
// other id is carried by the token rule ([EncodeToken]); this rule is the
// one the toolkit applies to its sessions and the SSE bridge to requests.
func CheckSessionID(id string) error {
	switch {
	case id == "":
		return errors.New("empty")
	case len(id) > MaxSessionIDLen:
		return fmt.Errorf("%d bytes long, at most %d allowed", len(id), MaxSessionIDLen)
	case !utf8.ValidString(id):
		return errors.New("not valid UTF-8")
	}
	for i, r := range id {
		if unicode.IsControl(r) {
			return fmt.Errorf("control character %U at byte %d", r, i)
		}
	}
	return nil
}

// maxTypeLen is the longest event type name.
const maxTypeLen = 64

// CheckType reports whether t can name an event type: 1 to 64
// ASCII letters, digits, '_' or '-'. Such a name is one plain subject token
// and one line of a Server-Sent Event, so it needs no escaping anywhere.
func CheckType(t Type) error {
	if t == "" || len(t) > maxTypeLen {
		return fmt.Errorf("events: event type %q: 1 to %d characters", t, maxTypeLen)
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("events: event type %q: only letters, digits, '_' and '-'", t)
		}
	}
	return nil
}

// The call lifecycle event types.
const (
	TypeStart    Type = "start"
	TypeProgress Type = "progress"
	TypeDelta    Type = "delta"
	TypeSuspend  Type = "suspend"
	TypeResult   Type = "result"
	// TypeArgs is the call-level event that records the arguments the tool
	// ran with when an interceptor or a person's approval changed them
	// (body in Event.Data, an [Args]). The engine alone emits it.
	TypeArgs Type = "args"
)

// Args is the body (Event.Data) of an args event: the arguments the tool
// ran with, as its handler received them, when they differ from those the
// interceptors were handed (the start event carries the model's). Without
// it, an auditor or a UI could not tell what a rewritten call ran with.
// Like the start event's, presets are left out, and arguments too large for
// one message are too (ArgsOmitted).
type Args struct {
	Args        json.RawMessage `json:"args,omitempty"`
	ArgsOmitted bool            `json:"args_omitted,omitempty"`
}

// Event is one lifecycle event of one call. Exactly one body field, the one
// named by Type, is set. Events are shared between observers: treat them as
// read-only.
type Event struct {
	Version int    `json:"v"`
	Type    Type   `json:"type"`
	Session string `json:"session"`
	// Agent is the agent of a multi-agent system that made the call, when
	// the caller said (toolkit.WithAgent); "" otherwise.
	Agent string    `json:"agent,omitempty"`
	Call  string    `json:"call,omitempty"`
	Tool  string    `json:"tool,omitempty"`
	Seq   uint64    `json:"seq,omitempty"` // per call, 1, 2, 3, ...
	Time  time.Time `json:"time"`

	Start    *Start    `json:"start,omitempty"`
	Progress *Progress `json:"progress,omitempty"`
	Delta    *Part     `json:"delta,omitempty"`
	// Chunk, on a delta event in place of Delta, is one piece of a part too
	// large for one message (see [Chunk]). Only publishers make chunks; a
	// [Reassembler] puts the part back together.
	Chunk *Chunk `json:"chunk,omitempty"`
	// Reset, on a delta event, voids the content before it: the call's
	// content starts over with this delta (an interceptor retried the tool or
	// replaced its result). On chunks, only the first one carries it.
	Reset   bool     `json:"reset,omitempty"`
	Suspend *Suspend `json:"suspend,omitempty"`
	Result  *Result  `json:"result,omitempty"`

	// Data is the body of session-level events and of event types this
	// version does not define: one JSON value whose shape the type names.
	Data json.RawMessage `json:"data,omitempty"`

	// Stream is the event's JetStream sequence when it was read from the
	// events stream (0 otherwise). It is not part of the JSON.
	Stream uint64 `json:"-"`

	// Trace is the W3C trace context of the span the event belongs to (its
	// call's, or its batch's for session-level events of a batch), when the
	// toolkit is traced (toolkit.WithTracer, package telemetry); nil otherwise.
	// Publishers carry it in message headers (traceparent, tracestate on
	// NATS), and subscribers read it back as a [TraceContext]. Where a
	// transport has no headers (the SSE bridge), the JSON carries it in two
	// fields, "traceparent" and "tracestate", which [Decode] reads;
	// [AppendJSON] does not write them.
	Trace Trace `json:"-"`
}

// WithDropped tells n more dropped progress events with ev, which must not
// change (other observers share it): for a progress or a result event and
// n > 0 it returns a copy whose Dropped counts n more, and true; otherwise
// ev itself and false, when ev cannot tell drops (the caller keeps the
// count for the call's next progress or its result).
func (ev *Event) WithDropped(n uint64) (*Event, bool) {
	if n == 0 {
		return ev, false
	}
	switch {
	case ev.Progress != nil:
		cp, pr := *ev, *ev.Progress
		pr.Dropped += n
		cp.Progress = &pr
		return &cp, true
	case ev.Result != nil:
		cp, r := *ev, *ev.Result
		r.Dropped += n
		cp.Result = &r
		return &cp, true
	}
	return ev, false
}

// The JSON fields that carry an event's trace context where its transport
// has no headers (see Event.Trace).
const (
	fieldTraceParent = "traceparent"
)

// Trace is the W3C Trace Context of a span (https://www.w3.org/TR/trace-context/):
// the values of the traceparent and tracestate headers. A tracer's own
// per-call value implements it, so an event carries it without a copy.
type Trace interface {
	// TraceParent is the traceparent header's value
	// ("00-<trace id>-<span id>-<flags>"), or "" when there is none.
	TraceParent() string
	// TraceState is the tracestate header's value, often "".
	TraceState() string
}

// TraceContext is a [Trace] given by its header values: what a subscriber
// reads from a message's headers.
type TraceContext struct {
	Parent string // traceparent
	State  string // tracestate
}

// TraceParent returns the traceparent value.
func (t TraceContext) TraceParent() string { return t.Parent }

// TraceState returns the tracestate value.
func (t TraceContext) TraceState() string { return t.State }

// Start is the body of a start event.
type Start struct {
	// Args are the arguments as the model sent them (presets set by code are
	// not included: they may hold values the model must not see).
	Args json.RawMessage `json:"args,omitempty"`
	// Index is the call's position in its batch.
	Index int `json:"index"`
	// ArgsOmitted says that the arguments were too large for one message
	// and were left out (Args is empty).
	ArgsOmitted bool `json:"args_omitted,omitempty"`
}

// Progress is the body of a progress event: information for people watching,
// never for the model.
type Progress struct {
	Message string `json:"message,omitempty"`
	// Fraction is the share of the work done, 0..1; nil when unknown.
	Fraction *float64 `json:"fraction,omitempty"`
	// Data is optional structured detail (for example counters).
	Data json.RawMessage `json:"data,omitempty"`
	// Dropped counts this call's progress events that were dropped under
	// pressure since the previous one this observer got: by the toolkit
	// (no observer would take them) and on the way to this observer (its
	// queue was full: the toolkit's mailbox of an asynchronous observer, or
	// the NATS publisher's). It is the only sign of a drop: sequence
	// numbers have no gaps.
	Dropped uint64 `json:"dropped,omitempty"`
}

// Chunk is one piece of a content part too large for one message. A part
// cut into Count chunks goes out as Count delta events in a row (consecutive
// sequence numbers), with Index 0 to Count-1; the Data of all of them,
// concatenated in index order, is the JSON text of the part object (what
// Event.Delta would hold). Text parts are never chunked: a long text goes
// out as several ordinary text deltas, which add up by the usual rule.
type Chunk struct {
	Index int    `json:"index"`
	Count int    `json:"count"`
	Data  string `json:"data"`
}

// Suspend is the body of a suspend event: the call waits for a result from
// outside the process (an external tool, an approval).
type Suspend struct {
	Reason string `json:"reason"`
}

// Result is the body of a result event.
type Result struct {
	State State `json:"state"`
	// Content is the model-visible result: the concatenation of the deltas.
	// It is empty when ContentOmitted is set.
	Content []Part `json:"content"`
	// ContentOmitted says that the content was too large for the message
	// and was left out: it is exactly what the call's deltas add up to.
	// ContentSize and ContentParts describe what was left out.
	ContentOmitted bool `json:"content_omitted,omitempty"`
	// ContentSize is, when the content was omitted, its size in bytes:
	// UTF-8 bytes of text, bytes of the JSON text of JSON parts, decoded
	// bytes of binary parts.
	ContentSize int64 `json:"content_size,omitempty"`
	// ContentParts is, when the content was omitted, its number of parts.
	ContentParts int `json:"content_parts,omitempty"`
	// Error is a short description of the failure for states other than
	// success.
	Error string `json:"error,omitempty"`
	// DurationMS is the time from start to result in milliseconds.
	DurationMS float64 `json:"duration_ms"`
	// Meta is data for code and UIs that the model does not see.
	Meta map[string]any `json:"meta,omitempty"`
	// MetaOmitted says that Meta was too large for the message and was
	// left out (with content omitted already).
	MetaOmitted bool `json:"meta_omitted,omitempty"`
	// Dropped counts this call's progress events dropped under pressure
	// after the last one this observer got, with nothing after them but
	// this result: by the toolkit and on the way to this observer, as
	// Progress.Dropped counts them before a progress event. For people and
	// UIs, like all progress: the model sees only Content.
	Dropped uint64 `json:"dropped,omitempty"`
	// Err is the Go error behind a failure, for errors.Is and errors.As in
	// process. It is not serialized.
	Err error `json:"-"`
}

// State is the final state of a call.
type State string

// Call states.
const (
	StateSuccess     State = "success"
	StateError       State = "error"
	StateDenied      State = "denied"
	StateInterrupted State = "interrupted"
	StateSuspended   State = "suspended"
	StateTimeout     State = "timeout"
)

// IsError reports whether the state is a failure the model should be told
// about (error, denied, interrupted, timeout).
func (s State) IsError() bool {
	switch s {
	case StateError, StateDenied, StateInterrupted, StateTimeout:
		return true
	}
	return false
}
