package ui

import (
	"net/http"

	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/ui/internal/thread"
)

// Action is what a request asks to do with a thread (Access.Action).
type Action string

const (
	// ActionRun starts a run of the thread with new user messages, or
	// starts the thread itself (the host has none with the id yet). A
	// request that runs also reads the response it starts.
	ActionRun Action = "run"
	// ActionRead reads the thread's stream without running or answering
	// anything: the AI SDK's resume route, an AG-UI request that brings
	// nothing new (it hears the pending interrupts again).
	ActionRead Action = "read"
	// ActionAnswer answers the approval of one call (Access.Call). A
	// request that answers also reads the response that goes on.
	ActionAnswer Action = "answer"
)

// Access is one thing a request asks of a thread, as the host's
// authorization hook (WithAuthorize) sees it.
type Access struct {
	// Thread is the thread's id as the client names it (without the
	// session prefix).
	Thread string
	Action Action
	// Call is the call whose approval an ActionAnswer answers, and
	// Approve whether the answer approves it (false: rejects or cancels).
	Call    string
	Approve bool
	// Approval is the request the call waits on (its tool, arguments and
	// reason), when the thread waits on it; nil otherwise (the answer will
	// be refused as not pending).
	Approval *interceptors.ApprovalRequest
}

// ErrUnauthenticated is what a WithAuthorize hook wraps to refuse a request
// that says nothing about who sends it (no session, no token): 401
// instead of 403.
var ErrUnauthenticated = thread.ErrUnauthenticated

// WithAuthorize makes the handlers ask fn about everything a request asks
// of a thread (see Action), all before any of it is done, so that the
// application decides who may run a thread and who may answer its
// approvals. fn returns nil to allow; any error refuses the whole request,
// nothing done: 401 when it wraps ErrUnauthenticated, else 403; its text
// goes to the client. Without it every request that passes the origin
// checks (WithAllowedOrigins) may do anything to any thread whose id it
// names.
func WithAuthorize(fn func(r *http.Request, a Access) error) Option {
	return option(thread.WithAuthorize(func(r *http.Request, a thread.Access) error {
		return fn(r, fromThread(a))
	}))
}

// Authorize asks the host's hook (WithAuthorize) about each of asks, in
// order, and returns the first refusal: an error that names what was
// refused and wraps the hook's error (answer 401 when it wraps
// ErrUnauthenticated, else 403); nil when all are allowed or the host has
// no hook. Routes of your own that act on a thread (a stop button: Cancel)
// ask it too.
func (h *Host) Authorize(r *http.Request, asks ...Access) error {
	in := make([]thread.Access, len(asks))
	for i, a := range asks {
		in[i] = toThread(a)
	}
	return h.threads().Authorize(r, in...)
}

func fromThread(a thread.Access) Access {
	return Access{Thread: a.Thread, Action: Action(a.Action), Call: a.Call, Approve: a.Approve, Approval: a.Approval}
}

func toThread(a Access) thread.Access {
	return thread.Access{Thread: a.Thread, Action: thread.Action(a.Action), Call: a.Call, Approve: a.Approve, Approval: a.Approval}
}
