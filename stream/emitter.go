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
	return e.sink.Delta(events.Text(s))
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
	return e.sink.Delta(p)
}

// Part appends any content part to the model-visible result.
func (e *Emitter) Part(p events.Part) error {
	if e == nil {
		return nil
	}
	return e.sink.Delta(p)
}

// Write appends p as text to the model-visible result, so that a tool can
// stream a command's output with io.Copy. It implements io.Writer.
func (e *Emitter) Write(p []byte) (int, error) {
	if e == nil {
		return len(p), nil
	}
	if err := e.sink.Delta(events.Text(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
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
