// Package agui serves a toolstream agent to AG-UI clients (CopilotKit,
// @ag-ui/client's HttpAgent): an http.Handler that takes a RunAgentInput,
// runs the agent loop for the thread and streams AG-UI events as
// Server-Sent Events (data: <json> frames).
//
// Each AG-UI run is one response of a thread.Thread: the model's turns are
// steps, its words text messages, its calls tool calls whose arguments
// stream as the model writes them; a call's progress and streamed result
// are an activity message; tool groups and skills are the shared state; a
// call that waits for approval ends the run with an interrupt, and the
// next run's resume entries answer it. docs/ui-protocols.md has the
// mapping and what AG-UI cannot express.
package agui

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/ui"
	"github.com/toolstream/toolstream/ui/internal/body"
	"github.com/toolstream/toolstream/ui/internal/frames"
	"github.com/toolstream/toolstream/ui/internal/thread"
)

// CustomAnswers is the name of the CUSTOM event (value thread.AnswersReport)
// that opens a run when some of its resume entries were given and others
// could not be: their calls stopped waiting between the check and the
// answer (an approval that expired just then). The run goes on with the
// answers given; the interrupts not answered show their own outcome.
const CustomAnswers = "toolstream.answers"

// Handler serves AG-UI runs on a ui.Host.
type Handler struct {
	host *thread.Host
}

// NewHandler returns a handler running the host's agent. Mount it where
// the front end posts its runs (HttpAgent's url), with no method in the
// pattern if another origin is allowed (its CORS preflights come as
// OPTIONS). Who may call is the host's: its origin checks (ui.WithAllowedOrigins, JSON)
// and its ui.WithAuthorize hook.
func NewHandler(h *ui.Host) *Handler { return &Handler{host: (*thread.Host)(h)} }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.host.Admit(w, r) { // another origin, not JSON, a preflight
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		frames.HTTPError(w, http.StatusMethodNotAllowed, "POST a RunAgentInput (JSON) with Accept: text/event-stream")
		return
	}
	in, err := readRunAgentInput(http.MaxBytesReader(w, r.Body, maxWire))
	if err != nil {
		status := http.StatusBadRequest
		if body.TooLarge(err) {
			status = http.StatusRequestEntityTooLarge
		}
		frames.HTTPError(w, status, err.Error())
		return
	}
	input := in.input()
	t, err := h.host.Open(r, in.ThreadID, input) // the host's WithAuthorize decides
	if err != nil {
		frames.HTTPError(w, status(err), err.Error())
		return
	}
	log, err := t.Begin(input)
	var partly *thread.AnswersError
	switch {
	case errors.As(err, &partly):
		// Some answers were given, one could not be (its approval expired
		// just then): the run goes on, and the response says which.
	case errors.Is(err, thread.ErrNothingToRun):
		log = nil // an empty run: started and finished
	case errors.Is(err, thread.ErrClosed), errors.Is(err, thread.ErrForgotten):
		frames.HTTPError(w, http.StatusServiceUnavailable, err.Error())
		return
	case errors.Is(err, thread.ErrBusy):
		frames.HTTPError(w, http.StatusConflict, err.Error())
		return
	case errors.Is(err, interceptors.ErrNotPending):
		frames.HTTPError(w, http.StatusConflict, err.Error())
		return
	case err != nil:
		frames.HTTPError(w, http.StatusBadRequest, err.Error())
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	out := &writer{frames.New(w, h.host.WriteTimeout())} // each write bounded (ui.WithWriteTimeout)
	tr := newTranslator(out, in.ThreadID, in.RunID)
	if log != nil {
		tr.ids = t.Nonce() + "-" + strconv.Itoa(log.Run)
	}
	started := map[string]any{"type": "RUN_STARTED", "threadId": in.ThreadID, "runId": in.RunID}
	if in.ParentRunID != "" {
		started["parentRunId"] = in.ParentRunID
	}
	out.event(started)
	out.event(map[string]any{"type": "STATE_SNAPSHOT", "snapshot": t.State()})
	if partly != nil {
		out.event(map[string]any{"type": "CUSTOM", "name": CustomAnswers, "value": partly.Report()})
	}
	if log == nil {
		// Nothing to run: the thread's pending interrupts again, if it
		// waits for answers (a client that lost them), else a success.
		if waiting := t.Paused(); len(waiting) > 0 {
			tr.finish(&thread.End{Kind: thread.EndPaused, Approvals: waiting})
		} else {
			out.event(map[string]any{"type": "RUN_FINISHED", "threadId": in.ThreadID, "runId": in.RunID, "outcome": map[string]any{"type": "success"}})
		}
		out.Flush()
		return
	}
	for i := 0; ; {
		evs, end, err := log.Next(r.Context(), i)
		if err != nil {
			clientGone(t, log)
			return
		}
		for _, ev := range evs {
			tr.event(ev)
		}
		i += len(evs)
		if end != nil {
			// Over: nothing to cancel, even if the client is gone (a paused
			// run's interrupts come again with the next run).
			tr.finish(end)
			out.Flush()
			return
		}
		if out.Err() != nil || r.Context().Err() != nil {
			clientGone(t, log)
			return
		}
		out.Flush()
	}
}

// clientGone stops the run of the response the client was reading, and
// only while that response goes on: AG-UI has no resume of a stream.
// Between the handler finding its client gone and this, the response may
// end and another request start a run; TestClientGoneCancelsOnlyItsRun
// calls it in that window.
func clientGone(t *thread.Thread, log *thread.Log) {
	t.CancelResponse(log)
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

// writer writes the protocol's chunks as JSON data: frames. A write that
// fails, or waits longer than the host's write timeout for a client that
// does not read, makes the handler treat the client as gone.
type writer struct{ *frames.Frames }

func (o *writer) event(v any) {
	if o.Err() != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		// Every value here is built from decoded JSON: say so rather than drop it.
		b, _ = json.Marshal(map[string]any{"type": "RAW", "event": map[string]string{"error": err.Error()}})
	}
	o.Data(b)
}

// expiresAt formats an approval's deadline for an interrupt.
func expiresAt(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
