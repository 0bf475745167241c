package natsbus

import (
	"net/http"
	"sync/atomic"
)

// flushCounter counts an SSE handler's flushes to its clients (a write and
// the Flush after it, or a Flush alone) as they start and as they end, from
// the http.ResponseWriter the handler is given: a handler blocked on a
// client that does not read has a flush started and not finished.
type flushCounter struct{ started, finished atomic.Int64 }

// wrap returns h writing through the counter.
func (fc *flushCounter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&countingWriter{ResponseWriter: w, fc: fc}, r)
	})
}

// countingWriter is one response's writer; a handler writes a response on
// one goroutine, so open needs no lock.
type countingWriter struct {
	http.ResponseWriter
	fc   *flushCounter
	open bool // a flush started: written, not flushed yet
}

func (c *countingWriter) begin() {
	if !c.open {
		c.open = true
		c.fc.started.Add(1)
	}
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.begin()
	return c.ResponseWriter.Write(p)
}

func (c *countingWriter) Flush() {
	c.begin()
	defer func() {
		c.open = false
		c.fc.finished.Add(1)
	}()
	c.ResponseWriter.(http.Flusher).Flush()
}

// Unwrap lets http.ResponseController reach the connection (the handler's
// write deadlines).
func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// CountBlockedWrites wraps an SSE handler and returns the number of its
// writes to clients that have begun and not ended: a handler blocked on a
// client that does not read is one.
func CountBlockedWrites(h http.Handler) (http.Handler, func() int64) {
	fc := &flushCounter{}
	return fc.wrap(h), func() int64 { return fc.started.Load() - fc.finished.Load() }
}
