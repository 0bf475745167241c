// Package stream is how a running tool talks to the outside while it works:
// progress for the people watching, result deltas for the model.
//
// A tool gets its [Emitter] from its context:
//
//	em := stream.From(ctx)
//	em.Progress("scanning", 0.25)   // for people; never reaches the model
//	em.Text("first lines\n")       // for the model; part of the result
//
// The model-visible result of a call is exactly the concatenation of its
// deltas; whatever the handler returns is appended as the last delta. Progress
// is never part of it. Outside a tool call, From returns nil and every method
// is a no-op, so tools can be called directly in tests.
package stream

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"unicode/utf8"

	"github.com/toolstream/toolstream/events"
)

// ErrCallFinished is returned when writing a delta after the call has finished
// (for example from a goroutine the handler left running after a timeout).
var ErrCallFinished = errors.New("stream: call already finished")

// Sink receives what a tool emits. The toolkit implements it for each call;
// tools never see it.
type Sink interface {
	// Progress delivers one progress update: a message, the fraction done
	// (negative when unknown) and optional JSON data. It must not block.
	Progress(message string, fraction float64, data json.RawMessage)
	// Delta appends one piece of the model-visible result.
	Delta(p events.Part) error
	// SetMeta records metadata for code and UIs (not for the model).
	SetMeta(key string, value any)
}

// Resetter is implemented by sinks that let a tool take back what it
// streamed: the toolkit's. It is separate from Sink so that Sink stays as
// small as it was.
type Resetter interface {
	// Reset voids the model-visible content so far; observers see a delta
	// with reset set.
	Reset() error
}

// Emitter is a tool call's channel to the outside. Its methods are safe for
// concurrent use and do nothing on a nil Emitter.
type Emitter struct {
	sink      Sink
	listening bool

	// held is the first bytes of a character that a Write cut (io.Copy
	// writes what each read returned), kept until the next write completes
	// it, or until Flush: a delta holds text, which goes on the wire as
	// UTF-8, so the halves of a character sent apart would each become
	// U+FFFD there while the result, their concatenation, has the
	// character. Up to 3 bytes (the low 24 bits) and their number (the
	// high 8 bits); 0 when none. Swapped, so that each byte goes out once.
	held atomic.Uint32
}

// NewEmitter returns an emitter that writes to sink. listening says whether
// anyone observes progress; when false, progress costs almost nothing.
func NewEmitter(sink Sink, listening bool) *Emitter {
	return &Emitter{sink: sink, listening: listening}
}

// Init sets up an emitter in place, for sinks that embed their emitter to
// save an allocation per call.
func (e *Emitter) Init(sink Sink, listening bool) {
	e.sink, e.listening = sink, listening
	e.held.Store(0)
}

// ContextKey is the key under which a context carries a call's emitter.
// NewContext and From use it; an engine whose call contexts are types of
// its own answers it from their Value method and saves a context per call.
type ContextKey struct{}

// NewContext returns a context that carries the emitter.
func NewContext(ctx context.Context, e *Emitter) context.Context {
	return context.WithValue(ctx, ContextKey{}, e)
}

// From returns the emitter of the tool call running with ctx, or nil.
func From(ctx context.Context) *Emitter {
	e, _ := ctx.Value(ContextKey{}).(*Emitter)
	return e
}

// Listening reports whether anyone observes progress. Tools can use it to
// skip work that only feeds progress messages.
func (e *Emitter) Listening() bool { return e != nil && e.listening }

// Progress reports progress with a message and the fraction of work done
// (0..1). A fraction outside 0..1 (use -1) means unknown.
func (e *Emitter) Progress(message string, fraction float64) {
	// Small enough to inline: with nobody listening, a report is this check.
	if e != nil && e.listening {
		e.progress(message, fraction)
	}
}

// progress is kept out of line so that Progress inlines.
//
//go:noinline
func (e *Emitter) progress(message string, fraction float64) {
	if !(fraction >= 0 && fraction <= 1) {
		fraction = -1
	}
	e.sink.Progress(message, fraction, nil)
}

// Step reports progress as done out of total (for example files scanned).
func (e *Emitter) Step(message string, done, total int) {
	if e == nil || !e.listening {
		return
	}
	f := -1.0
	if total > 0 {
		f = min(max(float64(done)/float64(total), 0), 1)
	}
	e.progress(message, f)
}

// Report reports progress with structured data, marshalled with
// encoding/json. A value that cannot be marshalled is dropped from the event;
// the message still goes out.
func (e *Emitter) Report(message string, fraction float64, data any) {
	if e == nil || !e.listening {
		return
	}
	if !(fraction >= 0 && fraction <= 1) {
		fraction = -1
	}
	var raw json.RawMessage
	if data != nil {
		if b, err := json.Marshal(data); err == nil {
			raw = b
		}
	}
	e.sink.Progress(message, fraction, raw)
}

// Text appends text to the model-visible result.
func (e *Emitter) Text(s string) error {
	if e == nil {
		return nil
	}
	if e.held.Load() != 0 {
		s = e.take() + s
	}
	return e.sink.Delta(events.Text(s))
}

// take returns the held bytes and forgets them.
func (e *Emitter) take() string {
	h := e.held.Swap(0)
	n := int(h >> 24)
	var b [utf8.UTFMax - 1]byte
	for i := range n {
		b[i] = byte(h >> (8 * i))
	}
	return string(b[:n])
}

// hold keeps tail (at most 3 bytes) until the next write, and reports
// false when another write holds bytes already (then tail goes out now).
func (e *Emitter) hold(tail string) bool {
	h := uint32(len(tail)) << 24
	for i := range len(tail) {
		h |= uint32(tail[i]) << (8 * i)
	}
	return e.held.CompareAndSwap(0, h)
}

// Flush sends what Write holds back: the first bytes of a character that
// the last write cut, kept to go out with the bytes that complete it. The
// toolkit flushes each call's emitter when its handler returns; code that
// gives an emitter a sink of its own and writes to it with Write calls
// Flush after the last write.
func (e *Emitter) Flush() error {
	if e == nil || e.held.Load() == 0 {
		return nil
	}
	if h := e.take(); h != "" {
		return e.sink.Delta(events.Text(h))
	}
	return nil
}

// Data appends a JSON value to the model-visible result.
func (e *Emitter) Data(v any) error {
	if e == nil {
		return nil
	}
	p, err := events.JSON(v)
	if err != nil {
		return err
	}
	return e.Part(p)
}

// Part appends any content part to the model-visible result.
func (e *Emitter) Part(p events.Part) error {
	if e == nil {
		return nil
	}
	if e.held.Load() != 0 {
		if p.Type == events.PartText {
			return e.Text(p.Text)
		}
		if err := e.Flush(); err != nil {
			return err
		}
	}
	return e.sink.Delta(p)
}

// Write appends p as text to the model-visible result, so that a tool can
// stream a command's output with io.Copy. It implements io.Writer. A
// character of several bytes that p cuts at its end is held back until the
// next write (or text) completes it, so that each delta carries whole
// characters: bytes that never make a character go out with the next
// write, or when the handler returns ([Emitter.Flush]).
func (e *Emitter) Write(p []byte) (int, error) {
	if e == nil {
		return len(p), nil
	}
	text := string(p)
	if e.held.Load() != 0 {
		text = e.take() + text
	}
	if cut := completeLen(text); cut < len(text) && e.hold(text[cut:]) {
		text = text[:cut]
	}
	if text == "" {
		return len(p), nil
	}
	if err := e.sink.Delta(events.Text(text)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// completeLen is the length of s without the first bytes of a character
// cut at its end: bytes that the bytes after them could make a valid
// character of.
func completeLen(s string) int {
	for i := len(s) - 1; i >= 0 && i >= len(s)-(utf8.UTFMax-1); i-- {
		if c := s[i]; c&0xc0 != 0x80 { // the last character's first byte
			if c >= utf8.RuneSelf && !utf8.FullRuneInString(s[i:]) {
				return i
			}
			return len(s)
		}
	}
	return len(s)
}

// Reset takes back everything the call streamed for the model so far: the
// content starts over, and observers get a reset delta (see docs/events.md).
// It is for tools that relay another engine's stream (a remote worker that
// retried, a relay that lost pieces and sends the whole again). It returns
// ErrCallFinished after the call ended, and an error when the sink cannot
// reset.
func (e *Emitter) Reset() error {
	if e == nil {
		return nil
	}
	r, ok := e.sink.(Resetter)
	if !ok {
		return errors.New("stream: this emitter cannot reset")
	}
	if e.held.Load() != 0 {
		e.take() // void, with the rest
	}
	return r.Reset()
}

// SetMeta attaches metadata to the call's result: visible to code and UIs,
// never to the model.
func (e *Emitter) SetMeta(key string, value any) {
	if e == nil {
		return
	}
	e.sink.SetMeta(key, value)
}
