package thread

import (
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/toolstream/toolstream/interceptors"
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
var ErrUnauthenticated = errors.New("ui: who sends the request is not known: authenticate")

// WithAuthorize makes the handlers ask fn about everything a request asks
// of a thread (see Action), all before any of it is done, so that the
// application decides who may run a thread and who may answer its
// approvals. fn returns nil to allow; any error refuses the whole request,
// nothing done: 401 when it wraps ErrUnauthenticated, else 403; its text
// goes to the client. Without it every request that passes Admit may do
// anything to any thread whose id it names.
func WithAuthorize(fn func(r *http.Request, a Access) error) Option {
	return func(h *Host) { h.authorize = fn }
}

// authorizeFunc is a WithAuthorize hook.
type authorizeFunc = func(r *http.Request, a Access) error

// AccessError is a request the authorization hook refused.
type AccessError struct {
	Access Access
	// Status is the HTTP status to answer with: 401 or 403.
	Status int
	Err    error
}

func (e *AccessError) Error() string {
	what := "running"
	switch e.Access.Action {
	case ActionRead:
		what = "reading"
	case ActionAnswer:
		what = fmt.Sprintf("answering the approval of call %q in", e.Access.Call)
	}
	return fmt.Sprintf("ui: %s thread %q is not allowed: %v", what, e.Access.Thread, e.Err)
}

func (e *AccessError) Unwrap() error { return e.Err }

// Authorize asks the host's hook (WithAuthorize) about each of asks, in
// order, and returns the first refusal as an *AccessError; nil when all
// are allowed or the host has no hook. Routes of your own that act on a
// thread (a stop button) ask it too.
func (h *Host) Authorize(r *http.Request, asks ...Access) error {
	if h.authorize == nil {
		return nil
	}
	for _, a := range asks {
		if err := h.authorize(r, a); err != nil {
			status := http.StatusForbidden
			if errors.Is(err, ErrUnauthenticated) {
				status = http.StatusUnauthorized
			}
			return &AccessError{Access: a, Status: status, Err: err}
		}
	}
	return nil
}

// Open returns the thread a request r that brings in is for, once the
// host's hook allowed everything the request asks of it: ActionRun when it
// brings a user message the thread has not taken in, or the host has no
// thread with the id (Open starts it then); ActionAnswer for each answer;
// ActionRead when it asks neither. A refusal is an *AccessError, and
// nothing was done. Begin on the thread returned does no more than was
// allowed: what the thread took in is never taken back, and a thread
// forgotten since refuses (ErrForgotten).
func (h *Host) Open(r *http.Request, id string, in Input) (*Thread, error) {
	t := h.Lookup(id)
	if err := h.Authorize(r, t.asks(id, in)...); err != nil {
		return nil, err
	}
	if t != nil {
		return t, nil
	}
	return h.Thread(id)
}

// asks is what a request that brings in asks of thread id; t is the
// thread or nil.
func (t *Thread) asks(id string, in Input) []Access {
	run := t == nil
	var waiting []interceptors.ApprovalRequest
	if t != nil {
		for _, m := range in.Messages {
			run = run || m.ID == "" || !t.Seen(m.ID)
		}
		waiting = t.Paused()
	}
	var out []Access
	if run {
		out = append(out, Access{Thread: id, Action: ActionRun})
	}
	for _, a := range in.Answers {
		acc := Access{Thread: id, Action: ActionAnswer, Call: a.Call, Approve: a.Approve}
		if i := slices.IndexFunc(waiting, func(r interceptors.ApprovalRequest) bool { return r.CallID == a.Call }); i >= 0 {
			r := waiting[i] // the hook's own copy
			acc.Approval = &r
		}
		out = append(out, acc)
	}
	if len(out) == 0 {
		out = append(out, Access{Thread: id, Action: ActionRead})
	}
	return out
}
