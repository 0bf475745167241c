package agui

import (
	"net/http"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/ui/internal/frames"
	"github.com/toolstream/toolstream/ui/internal/thread"
)

// ClientGoneForTest runs what the handler does once it found its client
// gone, with the response it was reading.
func ClientGoneForTest(t *thread.Thread, log *thread.Log) { clientGone(t, log) }

// Translate writes the AG-UI run that a response of these events, ending
// with end, makes (tests only): RUN_STARTED, the events' translation, the
// finish.
func Translate(w http.ResponseWriter, thread, runID string, evs []*events.Event, end *thread.End) {
	out := newWriter(w)
	tr := newTranslator(out, thread, runID)
	out.event(map[string]any{"type": "RUN_STARTED", "threadId": thread, "runId": runID})
	for _, ev := range evs {
		tr.event(ev)
	}
	tr.finish(end)
}

// SetMaxWire bounds request bodies at n bytes instead of wireLimit (tests
// only; 0 resets it).
func SetMaxWire(n int64) {
	if n == 0 {
		n = wireLimit
	}
	maxWire = n
}

// newWriter writes frames to w with the default write timeout (tests
// only: the handlers write with their host's, Host.WriteTimeout).
func newWriter(w http.ResponseWriter) *writer { return &writer{frames.New(w, frames.DefaultTimeout)} }

// MaxBody bounds what the handler keeps of a request (tests only).
const MaxBody = maxBody
