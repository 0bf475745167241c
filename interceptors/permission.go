package interceptors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// Decision is what a permission rule says about a call.
type Decision string

// Decisions.
const (
	Allow Decision = "allow"
	Ask   Decision = "ask"
	Deny  Decision = "deny"
)

// Errors of refused calls, for errors.Is.
var (
	// ErrDenied: a rule denies the call.
	ErrDenied = errors.New("permission denied")
	// ErrRejected: the person asked rejected the call.
	ErrRejected = errors.New("call rejected")
	// ErrNoDecision: nobody decided within the wait timeout.
	ErrNoDecision = errors.New("no decision in time")
	// ErrNotPending: no call with that id waits for a decision.
	ErrNotPending = errors.New("no call waits for a decision with that id")
)

// Rule says allow, ask or deny for the calls it matches.
type Rule struct {
	// Tool is the tool's name; "" or "*" matches every tool.
	Tool string
	// When, if set, must also accept the call's arguments (decoded JSON).
	When func(args map[string]any) bool
	// Decision is what the rule says.
	Decision Decision
	// Reason is told to the model on deny and shown to the person on ask.
	Reason string
}

// ArgMatches returns a When function that is true when the string argument
// field matches re (for example a path outside a workspace).
func ArgMatches(field string, re *regexp.Regexp) func(map[string]any) bool {
	return func(args map[string]any) bool {
		s, ok := args[field].(string)
		return ok && re.MatchString(s)
	}
}

// matches reports whether the rule covers a call of tool; args decodes the
// call's arguments, only for rules with a When.
func (r Rule) matches(tool string, args func() map[string]any) bool {
	if r.Tool != "" && r.Tool != "*" && r.Tool != tool {
		return false
	}
	return r.When == nil || r.When(args())
}

// Mode is the decision for calls no rule matches.
type Mode func(spec toolkit.Spec) Decision

// Ready-made modes.
var (
	// AllowAll lets every call without a rule run.
	AllowAll Mode = func(toolkit.Spec) Decision { return Allow }
	// AskAll asks about every call without a rule.
	AskAll Mode = func(toolkit.Spec) Decision { return Ask }
	// DenyAll refuses every call without a rule (an allow-list).
	DenyAll Mode = func(toolkit.Spec) Decision { return Deny }
	// ReadOnly lets read-only tools run and asks about the others.
	ReadOnly Mode = func(s toolkit.Spec) Decision {
		if s.ReadOnly {
			return Allow
		}
		return Ask
	}
)

// PermissionsName is the name of the interceptor Permissions.Interceptor
// returns.
const PermissionsName = "permissions"

// ApprovalEvent is the call-level event type of approval requests and their
// outcome. Its Data is an ApprovalRequest.
const ApprovalEvent events.Type = "approval"

// ApprovalRequest describes a call that waits for a person's decision: the
// Data of "approval" events (Status "pending", then the decision).
type ApprovalRequest struct {
	Session string          `json:"session"`
	CallID  string          `json:"call"`
	Tool    string          `json:"tool"`
	Args    json.RawMessage `json:"args,omitempty"`
	Reason  string          `json:"reason,omitempty"`
	// Status is "pending", "approved", "rejected" or "expired".
	Status string `json:"status"`
	// Note is the rejection reason, or says the arguments were edited or a
	// rule was added.
	Note string `json:"note,omitempty"`
	// Expires is when a pending request stops waiting.
	Expires time.Time `json:"expires,omitzero"`
	// Calls, on a batch's request (CallID the batch id), are the calls asked about (batchapproval.go).
	Calls []ApprovalRequest `json:"calls,omitempty"`
}

// Permissions decides, per call, whether a tool may run: by rules, then by a
// mode for calls no rule matches. Deny gives the model a "denied" result it
// can act on; ask suspends the call and sends an approval event until code
// calls Approve or Reject (or the wait times out). Approvals can add a rule
// for the rest of the session ("always allow this tool").
type Permissions struct {
	rules []Rule
	mode  Mode
	wait  time.Duration

	mu      sync.Mutex
	pending map[permKey]*permPending
}

type permKey struct{ session, call string }

type permPending struct {
	req ApprovalRequest
	ch  chan permVerdict // buffered 1
}

type permVerdict struct {
	approve bool
	args    json.RawMessage // edited arguments, or nil
	always  bool
	reason  string
}

// PermissionOption configures NewPermissions.
type PermissionOption func(*Permissions)

// WithRules adds rules; the first that matches a call decides.
func WithRules(rules ...Rule) PermissionOption {
	return func(p *Permissions) { p.rules = append(p.rules, rules...) }
}

// WithMode sets the decision for calls no rule matches (default ReadOnly).
func WithMode(m Mode) PermissionOption { return func(p *Permissions) { p.mode = m } }

// WithApprovalTimeout bounds how long an asked call waits for a decision
// (default 5 minutes). The wait does not count against the call's own
// timeout, which starts over once it is approved.
func WithApprovalTimeout(d time.Duration) PermissionOption {
	return func(p *Permissions) { p.wait = d }
}

// NewPermissions returns a permission checker; add it to a toolkit with
// tk.Use(p.Interceptor()), usually outermost.
func NewPermissions(opts ...PermissionOption) *Permissions {
	p := &Permissions{mode: ReadOnly, wait: 5 * time.Minute, pending: map[permKey]*permPending{}}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Interceptor returns the interceptor (name "permissions").
func (p *Permissions) Interceptor() toolkit.Interceptor {
	return toolkit.Interceptor{Name: PermissionsName, Intercept: p.intercept}
}

// permRules are rules approvals added, kept with the session.
type permRulesKey struct{}

type permRules struct {
	mu    sync.Mutex
	tools []string // always allowed
}

func (p *Permissions) decide(inv *toolkit.Invocation) (Decision, string) {
	if v, ok := inv.SessionValues().Load(permRulesKey{}); ok {
		sr := v.(*permRules)
		sr.mu.Lock()
		allowed := slices.Contains(sr.tools, inv.Call.Name)
		sr.mu.Unlock()
		if allowed {
			return Allow, "allowed for this session"
		}
	}
	// The arguments are decoded once, and only if a rule for the tool
	// looks at them: this runs on every call.
	var args map[string]any
	decoded := false
	argsOf := func() map[string]any {
		if !decoded {
			_ = json.Unmarshal(inv.Call.Args, &args) // unparsable arguments match no When
			decoded = true
		}
		return args
	}
	for _, r := range p.rules {
		if r.matches(inv.Call.Name, argsOf) {
			return r.Decision, r.Reason
		}
	}
	spec := inv.Spec()
	d := p.mode(spec)
	if d == Allow {
		return d, "" // no one reads the reason of an allowed call
	}
	if !spec.ReadOnly {
		return d, fmt.Sprintf("tool %q may change things (it is not read-only) and no rule covers it", inv.Call.Name)
	}
	return d, fmt.Sprintf("no rule covers tool %q", inv.Call.Name)
}

func (p *Permissions) intercept(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
	decision, reason := p.decide(inv)
	switch decision {
	case Allow:
		return next(ctx, inv)
	case Deny:
		msg := fmt.Sprintf("permission denied: tool %q may not run here", inv.Call.Name)
		if reason != "" {
			msg += ": " + reason
		}
		return toolkit.Failure(toolkit.StateDenied, permWrap(ErrDenied, msg+". Do not call it again with these arguments; tell the user or find another way"))
	}
	if inv.Approved() { // a person approved it with its whole batch (batchapproval.go)
		inv.Meta("approved", true)
		return next(ctx, inv)
	}
	return p.ask(ctx, inv, next, reason)
}

// ask suspends the call until a decision, the wait timeout or the run's end.
func (p *Permissions) ask(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler, reason string) toolkit.Outcome {
	key := permKey{inv.Session, inv.Call.ID}
	pd := &permPending{ch: make(chan permVerdict, 1), req: ApprovalRequest{
		Session: inv.Session, CallID: inv.Call.ID, Tool: inv.Call.Name, Args: inv.Call.Args,
		Reason: reason, Status: "pending", Expires: time.Now().Add(p.wait),
	}}
	p.mu.Lock()
	p.pending[key] = pd
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.pending, key)
		p.mu.Unlock()
	}()

	wait, resume := inv.Suspend("approval")
	_ = inv.Emit(ApprovalEvent, pd.req)
	timer := time.NewTimer(p.wait)
	defer timer.Stop()
	var v permVerdict
	select {
	case v = <-pd.ch:
	case <-timer.C:
		p.announce(inv, pd.req, "expired", fmt.Sprintf("no decision within %v", p.wait))
		return toolkit.Failure(toolkit.StateDenied, fmt.Errorf("%w: nobody approved this call of %q within %v, so it did not run. Ask the user before trying again",
			ErrNoDecision, inv.Call.Name, p.wait))
	case <-wait.Done():
		return inv.ContextFailure(wait)
	}
	if !v.approve {
		p.announce(inv, pd.req, "rejected", v.reason)
		msg := fmt.Sprintf("the user rejected this call of %q", inv.Call.Name)
		if v.reason != "" {
			msg += ": " + v.reason
		}
		return toolkit.Failure(toolkit.StateDenied, permWrap(ErrRejected, msg+". Do not retry it as it was; follow the user's reason"))
	}
	note := ""
	if v.args != nil {
		inv.Call.Args = v.args
		note = "arguments edited"
	}
	if v.always {
		rules := loadOrNew(inv.SessionValues(), permRulesKey{}, func() *permRules { return &permRules{} })
		rules.mu.Lock()
		if !slices.Contains(rules.tools, inv.Call.Name) {
			rules.tools = append(rules.tools, inv.Call.Name)
		}
		rules.mu.Unlock()
		note = permJoin(note, fmt.Sprintf("%q allowed for the rest of the session", inv.Call.Name))
	}
	p.announce(inv, pd.req, "approved", note)
	inv.Meta("approved", true)
	return next(resume(), inv)
}

func permJoin(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func (p *Permissions) announce(inv *toolkit.Invocation, req ApprovalRequest, status, note string) {
	req.Status, req.Note, req.Expires = status, note, time.Time{}
	_ = inv.Emit(ApprovalEvent, req)
}

// ApproveOption refines an approval.
type ApproveOption func(*permVerdict)

// WithArgs approves the call with edited arguments (checked against the
// tool's schema before it runs).
func WithArgs(args json.RawMessage) ApproveOption { return func(v *permVerdict) { v.args = args } }

// AlwaysAllow also allows the tool for the rest of the session.
func AlwaysAllow() ApproveOption { return func(v *permVerdict) { v.always = true } }

// Approve lets a waiting call run. It returns ErrNotPending when no call with
// that id waits in that session.
func (p *Permissions) Approve(session, callID string, opts ...ApproveOption) error {
	v := permVerdict{approve: true}
	for _, o := range opts {
		o(&v)
	}
	return p.settle(session, callID, v)
}

// Reject refuses a waiting call; reason is what the model reads.
func (p *Permissions) Reject(session, callID, reason string) error {
	return p.settle(session, callID, permVerdict{reason: reason})
}

func (p *Permissions) settle(session, callID string, v permVerdict) error {
	p.mu.Lock()
	pd, ok := p.pending[permKey{session, callID}]
	if ok {
		delete(p.pending, permKey{session, callID})
	}
	p.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %q in session %q", ErrNotPending, callID, session)
	}
	pd.ch <- v
	return nil
}

// Pending returns the approval requests waiting in a session ("" for all
// sessions), oldest first.
func (p *Permissions) Pending(session string) []ApprovalRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []ApprovalRequest
	for k, pd := range p.pending {
		if session == "" || k.session == session {
			out = append(out, pd.req)
		}
	}
	slices.SortFunc(out, func(a, b ApprovalRequest) int { return a.Expires.Compare(b.Expires) })
	return out
}

// permMsgError is an error with a message of its own that still matches a
// sentinel.
type permMsgError struct {
	kind error
	msg  string
}

func (e *permMsgError) Error() string { return e.msg }
func (e *permMsgError) Unwrap() error { return e.kind }

func permWrap(kind error, msg string) error { return &permMsgError{kind: kind, msg: msg} }
