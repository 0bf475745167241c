// Package frames writes the responses of the UI protocol handlers (ui/agui,
// ui/aisdk): Server-Sent Events `data:` frames with a deadline on each
// write, and the JSON error of a refused request.
package frames

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// DefaultTimeout bounds each frame's write unless the host's
// ui.WithWriteTimeout says otherwise: a client that stops reading, its
// connection open, is dropped once a write has waited this long for it, as
// a client that went away. Tests shorten it.
var DefaultTimeout = 30 * time.Second

// Frames writes a response of Server-Sent Events `data:` frames, the
// framing AG-UI and the AI SDK's stream share. After a failed write it
// writes nothing more; Err says why.
//
// Each write and flush has a deadline (http.ResponseController's
// SetWriteDeadline), the host's ui.WithWriteTimeout (30 s by default)
// from its start, a large frame's every 32 KiB piece its own: a client
// that connects and stops reading fails the write that its full buffers
// block, instead of holding the handler and the response for ever, while
// a slow client that goes on reading is not dropped for a large frame. The deadline replaces the server's
// http.Server.WriteTimeout for the response's writes (the server clears
// it when the response is done). A ResponseWriter that cannot set a
// deadline is written without one.
type Frames struct {
	rc      *http.ResponseController
	w       http.ResponseWriter
	timeout time.Duration // 0: no deadline
	buf     []byte
	err     error
}

// New writes frames to w, flushing it when it can, each write bounded by
// timeout (0 or less: no bound).
func New(w http.ResponseWriter, timeout time.Duration) *Frames {
	return &Frames{rc: http.NewResponseController(w), w: w, timeout: max(timeout, 0)}
}

// deadline sets the next write's deadline.
func (o *Frames) deadline() {
	if o.timeout <= 0 {
		return
	}
	if err := o.rc.SetWriteDeadline(time.Now().Add(o.timeout)); errors.Is(err, http.ErrNotSupported) {
		o.timeout = 0 // a writer without deadlines (a test recorder, a wrapper)
	}
}

// Data writes one frame: "data: " b "\n\n".
func (o *Frames) Data(b []byte) {
	if o.err != nil {
		return
	}
	o.buf = append(o.buf[:0], "data: "...)
	o.buf = append(o.buf, b...)
	o.buf = append(o.buf, "\n\n"...)
	// In pieces, each with its own deadline: the bound is on a client
	// that takes nothing, not on a slow one that takes a large frame.
	for b := o.buf; len(b) > 0 && o.err == nil; {
		n := min(len(b), writePiece)
		o.deadline()
		_, o.err = o.w.Write(b[:n])
		b = b[n:]
	}
}

// writePiece is the most a frame's write sends under one deadline.
const writePiece = 32 << 10

// Flush sends what was written to the client.
func (o *Frames) Flush() {
	if o.err != nil {
		return
	}
	o.deadline()
	if err := o.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		o.err = err
	}
}

// Err is the first write error, or nil: a write that failed, or that
// waited longer than the write timeout for a client that does not read.
func (o *Frames) Err() error { return o.err }

// HTTPError answers a request the handler refuses: status and a JSON body
// {"error": msg}.
func HTTPError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
