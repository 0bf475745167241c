package natsbus

import (
	"net/http"
	"time"
)

// An SSEOption configures [Bus.SSEHandler].
type SSEOption func(*sseOptions)

type sseOptions struct {
	session      func(r *http.Request) string
	keepAlive    time.Duration
	retry        time.Duration
	maxViewers   int
	retryAfter   time.Duration
	writeTimeout time.Duration
}

// defaultMaxViewers is how many clients one SSE handler streams to at once
// unless WithMaxViewers says otherwise.
const defaultMaxViewers = 10000

// WithSessionFrom sets how the handler reads the session a request asks
// for (default: the "session" query parameter). The id is untrusted input
// either way: it is checked like a toolkit session id.
func WithSessionFrom(session func(r *http.Request) string) SSEOption {
	return func(o *sseOptions) {
		if session != nil {
			o.session = session
		}
	}
}

// WithKeepAlive sets how often a comment line keeps an idle stream open
// (default 15 s; zero or less keeps it), and the reconnection delay
// suggested to browsers, the stream's "retry:" field (default 1 s; zero or
// less keeps it).
func WithKeepAlive(every, reconnect time.Duration) SSEOption {
	return func(o *sseOptions) {
		if every > 0 {
			o.keepAlive = every
		}
		if reconnect > 0 {
			o.retry = reconnect
		}
	}
}

// WithMaxViewers bounds the clients the handler streams to at once
// (default 10,000; 0 keeps it; negative: no limit). A client above it gets
// 503 Service Unavailable with a Retry-After of retryAfter (default 5 s;
// zero or less keeps it).
func WithMaxViewers(n int, retryAfter time.Duration) SSEOption {
	return func(o *sseOptions) {
		if n != 0 {
			o.maxViewers = n
		}
		if retryAfter > 0 {
			o.retryAfter = retryAfter
		}
	}
}

// WithWriteTimeout bounds each write to a client (default 30 s; 0 keeps
// it; negative: no bound). A client that takes no data for that long (a
// frozen tab, a network path gone without a reset) has its stream ended
// instead of holding a goroutine and its buffers; if it is alive, it
// reconnects and resumes with Last-Event-ID, missing nothing. It needs a
// ResponseWriter that can set write deadlines (net/http's can).
func WithWriteTimeout(d time.Duration) SSEOption {
	return func(o *sseOptions) {
		if d != 0 {
			o.writeTimeout = d
		}
	}
}
