package ui

import (
	"time"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
	"github.com/toolstream/toolstream/ui/internal/thread"
)

// Host serves threads: each is a toolkit session and an
// agent.Conversation kept between requests, with at most one run of the
// loop going on in the background. A run that waits for people's
// approvals ends the response (the protocol's interrupt or approval
// request) and goes on when a later request answers. Handlers for the UI
// protocols (packages ui/agui, ui/aisdk) sit on a Host.
//
// The host watches the toolkit through an inline observer that only
// appends to per-thread buffers: it never blocks a tool.
//
// Its threads' plumbing (runs cut into responses, replays, answers) is
// internal to the handlers: a Host shows what an application does with it.
type Host thread.Host

// threads is the host's plumbing, which the handlers reach the same way.
func (h *Host) threads() *thread.Host { return (*thread.Host)(h) }

// Option configures a Host.
type Option func(*Host)

// option adapts one of the plumbing's options.
func option(o thread.Option) Option { return func(h *Host) { o(h.threads()) } }

// WithPermissions gives the host the permissions interceptor the
// toolkit uses, so that people's answers to approval requests reach it.
func WithPermissions(p *interceptors.Permissions) Option {
	return option(thread.WithPermissions(p))
}

// WithSystem sets the system prompt of new threads' conversations.
func WithSystem(prompt string) Option { return option(thread.WithSystem(prompt)) }

// WithSessionPrefix names the toolkit sessions of threads prefix+threadID
// (default "ui-"), so that they never meet sessions of other origins.
func WithSessionPrefix(prefix string) Option { return option(thread.WithSessionPrefix(prefix)) }

// WithWriteTimeout bounds each frame's write to a client at d
// (30 s by default; d < 0: no bound): a client
// that keeps its connection open but stops reading is dropped when a
// write has waited d, and the handler treats it as a client that went
// away (AG-UI: its run is cancelled; the AI SDK stream: the run goes on,
// for a resume). The bound is on each write of at most 32 KiB (a large
// frame is written in such pieces), so a slow client that goes on
// reading is not dropped; and a write waits only while the client's
// buffers are full, so d does not bound the time between frames either:
// a run may be silent for longer.
func WithWriteTimeout(d time.Duration) Option { return option(thread.WithWriteTimeout(d)) }

// WithAllowedOrigins lets pages served from these origins
// ("https://app.example.com": scheme, host and port as a browser writes
// them in Origin; a trailing slash and a default port are dropped) call
// the handlers from a browser: their requests are accepted, their CORS
// preflights answered, and their responses carry
// Access-Control-Allow-Origin (with credentials). Without it the handlers
// accept browser requests from their own origin only, and refuse a body
// not declared as JSON. An entry that is not an origin allows nothing,
// and every refusal names it. Options add up.
func WithAllowedOrigins(origins ...string) Option {
	return option(thread.WithAllowedOrigins(origins...))
}

// NewHost returns a host running loop on tk's sessions. Close it to end
// the runs and detach it from the toolkit.
func NewHost(tk *toolkit.Toolkit, loop *agent.Loop, opts ...Option) *Host {
	return (*Host)(thread.NewHost(tk, loop, func(th *thread.Host) {
		for _, o := range opts {
			o((*Host)(th))
		}
	}))
}

// Close cancels every run, waits for them and detaches the host. Threads
// and their sessions are closed.
func (h *Host) Close() { h.threads().Close() }

// Forget ends a thread: its run is cancelled and waited for, its session
// closed and the host lets it go (a request with the same id after
// Forget returns starts a new conversation; one meanwhile is refused with
// 503). Threads are kept until then: an application that serves many
// calls Forget for those it is done with.
func (h *Host) Forget(id string) { h.threads().Forget(id) }

// Cancel ends the run of thread id, if one goes on: its calls are
// interrupted and the run ends with a run_error event; the thread stays,
// and its next request starts a new run. A stop button's route calls it,
// after Authorize.
func (h *Host) Cancel(id string) {
	if t := h.threads().Lookup(id); t != nil {
		t.Cancel()
	}
}
