package ui

import (
	"encoding/json"
	"io"
	"net/http"
)

// Frames writes a response of Server-Sent Events `data:` frames, the
// framing AG-UI and the AI SDK's stream share. After a failed write it
// writes nothing more; Err says why.
type Frames struct {
	w   io.Writer
	f   http.Flusher
	buf []byte
	err error
}

// NewFrames writes frames to w, flushing it when it can.
func NewFrames(w http.ResponseWriter) *Frames {
	f, _ := w.(http.Flusher)
	return &Frames{w: w, f: f}
}

// Data writes one frame: "data: " b "\n\n".
func (o *Frames) Data(b []byte) {
	if o.err != nil {
		return
	}
	o.buf = append(o.buf[:0], "data: "...)
	o.buf = append(o.buf, b...)
	o.buf = append(o.buf, "\n\n"...)
	_, o.err = o.w.Write(o.buf)
}

// Flush sends what was written to the client.
func (o *Frames) Flush() {
	if o.f != nil && o.err == nil {
		o.f.Flush()
	}
}

// Err is the first write error, or nil.
func (o *Frames) Err() error { return o.err }

// HTTPError answers a request the handler refuses: status and a JSON body
// {"error": msg}.
func HTTPError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
