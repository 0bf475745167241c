package interceptors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// Decision is what a permission rule says about a call. It is the type a
// tool's own check (toolkit.Spec.CheckPermission) returns too.
type Decision = toolkit.PermissionDecision

// Decisions.
const (
	Allow Decision = toolkit.PermissionAllow
	Ask   Decision = toolkit.PermissionAsk
	Deny  Decision = toolkit.PermissionDeny
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
	// Tool is the tool's name; "" or "*" matches every tool. It is the name
	// of the tool that runs, whatever name the call used for it (a
	// ToolResolver's or an alias's).
	Tool string
	// When, if set, must also accept the call's arguments (decoded JSON).
	When func(args map[string]any) bool
	// Decision is what the rule says.
	Decision Decision
	// Reason is told to the model on deny and shown to the person on ask.
	Reason string
	// Firm rules are consulted before the others, wherever they are in the
	// list, and nothing overrides them: not a grant a person added to the
	// session (AlwaysAllow, an accepted suggestion), not the tool's own
	// Allow. A firm Ask asks every time, and its requests offer no
	// suggestions. The dangerous-file presets are firm.
	Firm bool

	// explain, if set, words the reason for the arguments it matched.
	explain func(args map[string]any) string
	// cannot, if set, is true for raw arguments When cannot match: they
	// need not be decoded for it.
	cannot func(raw json.RawMessage) bool
}

// ArgMatches returns a When function that is true when the string argument
// field matches re (for example a path outside a workspace).
func ArgMatches(field string, re *regexp.Regexp) func(map[string]any) bool {
	return func(args map[string]any) bool {
		s, ok := args[field].(string)
		return ok && re.MatchString(s)
	}
}

// reason is what the rule says about a call it matched.
func (r *Rule) reason(args func() map[string]any) string {
	if r.explain != nil {
		if s := r.explain(args()); s != "" {
			return s
		}
	}
	return r.Reason
}

// matches reports whether the rule covers a call of tool with the raw
// arguments; args decodes them, only for rules with a When that raw does
// not rule out.
func (r *Rule) matches(tool string, raw json.RawMessage, args func() map[string]any) bool {
	if r.Tool != "" && r.Tool != "*" && r.Tool != tool {
		return false
	}
	if r.When == nil {
		return true
	}
	if r.cannot != nil && r.cannot(raw) {
		return false
	}
	return r.When(args())
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
	// Suggestions are rules the person can accept with the approval, for
	// the rest of the session (Approve with WithSuggestion).
	Suggestions []Suggestion `json:"suggestions,omitempty"`
	// Tool, Reason, Note and the suggestions' labels show the characters
	// that change how text reads without showing themselves (bidirectional
	// controls such as U+202E, zero-width and other invisible characters,
	// control characters, line breaks, spaces other than U+0020) escaped,
	// as \u202e: they are partly the model's text, and a label must read
	// as what it grants. Args are the call's arguments with such
	// characters in their strings written as JSON escapes: the same value,
	// which a UI that decodes them must show escaped too.
	//
	// Status is "pending", "approved", "rejected" or "expired"; "denied"
	// when a person approved the call with edited arguments that a rule
	// denies (it does not run).
	Status string `json:"status"`
	// Note is the rejection reason, or says the arguments were edited or a
	// rule was added.
	Note string `json:"note,omitempty"`
	// Expires is when a pending request stops waiting.
	Expires time.Time `json:"expires,omitzero"`
	// Calls, on a batch's request (CallID the batch id), are the calls asked about (batchapproval.go).
	Calls []ApprovalRequest `json:"calls,omitempty"`
}

// Permissions decides, per call, whether a tool may run. In order:
//
//  1. the tool's own check (toolkit.Spec.CheckPermission): its Deny is final;
//  2. firm rules, first match decides (the dangerous-file presets);
//  3. the other rules' first match, if it is a Deny;
//  4. the other rules' first match, if it is an Ask, unless a grant a
//     person added to the session covers the call;
//  5. the tool's own Allow;
//  6. grants a person added to the session (AlwaysAllow, an accepted
//     suggestion): allow;
//  7. the tool's own Ask;
//  8. the other rules' first match, an Allow;
//  9. the mode, for calls nothing above decided.
//
// Deny gives the model a "denied" result it can act on; ask suspends the
// call and sends an approval event, with suggested rules, until code calls
// Approve or Reject (or the wait times out).
type Permissions struct {
	rules   []Rule
	mode    Mode
	wait    time.Duration
	suggest Suggester
	// grantStore keeps grants beyond the process (WithGrantStore); nil: none.
	grantStore GrantStore

	mu      sync.Mutex
	pending map[permKey]*permPending
}

type permKey struct{ session, call string }

type permPending struct {
	req ApprovalRequest
	ch  chan permVerdict // buffered 1
}

type permVerdict struct {
	approve     bool
	args        json.RawMessage // edited arguments, or nil
	always      bool
	suggestions []string // ids of accepted suggestions
	grants      []Grant  // what they add, filled in by settle
	reason      string
	except      map[string]string // batch approvals: calls rejected, by id, with the reason
}

// PermissionOption configures NewPermissions.
type PermissionOption func(*Permissions)

// WithRules adds rules; the first that matches a call decides.
func WithRules(rules ...Rule) PermissionOption {
	return func(p *Permissions) { p.rules = append(p.rules, rules...) }
}

// WithMode sets the decision for calls no rule matches (default ReadOnly;
// see also StrictReadOnly and AskDestructive).
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
	p := &Permissions{mode: ReadOnly, wait: 5 * time.Minute, suggest: DefaultSuggestions, pending: map[permKey]*permPending{}}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Interceptor returns the interceptor (name "permissions"). Set its
// Unknown to have it judge calls of tools nobody registered too; a call
// that certainly cannot run ([toolkit.Invocation.CannotRun]: nothing inside
// it may answer or alias the call) is then not put to a person, and the
// model gets the unknown-tool answer (deny rules still deny it).
func (p *Permissions) Interceptor() toolkit.Interceptor {
	return toolkit.Interceptor{Name: "permissions", Intercept: p.intercept}
}

// permDecision is what decide says about a call.
type permDecision struct {
	decision Decision
	reason   string
	firm     bool // a firm rule asks: no suggestions
}

func (p *Permissions) decide(ctx context.Context, inv *toolkit.Invocation) permDecision {
	p.restoreGrants(ctx, inv.Session, inv)
	return p.decideFor(ctx, inv, toolName(inv), inv.Call.Args, inv.Tool.Spec())
}

// decideFor is decide from the parts of a call, for the interceptor and for
// the batch hook (batchapproval.go) alike: one order of checks for both.
func (p *Permissions) decideFor(ctx context.Context, session toolkit.LocalScope, tool string, rawArgs json.RawMessage, spec toolkit.Spec) permDecision {
	var own toolkit.Permission
	if spec.CheckPermission != nil {
		own = spec.CheckPermission(ctx, rawArgs)
		if own.Decision == Deny {
			return permDecision{decision: Deny, reason: own.Reason}
		}
	}
	// The arguments are decoded once, and only if a rule for the tool
	// looks at them: this runs on every call.
	var args map[string]any
	decoded := false
	argsOf := func() map[string]any {
		if !decoded {
			_ = json.Unmarshal(rawArgs, &args) // unparsable arguments match no When
			decoded = true
		}
		return args
	}
	var first *Rule
	for i := range p.rules {
		r := &p.rules[i]
		if r.Firm && r.matches(tool, rawArgs, argsOf) {
			return permDecision{decision: r.Decision, reason: r.reason(argsOf), firm: true}
		}
		if first == nil && !r.Firm && r.matches(tool, rawArgs, argsOf) {
			first = r
		}
	}
	if first != nil && first.Decision == Deny {
		return permDecision{decision: Deny, reason: first.reason(argsOf)}
	}
	if first != nil && first.Decision == Ask {
		// The application's ask comes before the tool's own allow, as
		// AgentScope orders them: the code that installs a tool decides
		// where a person must look, not the tool. A grant settles it.
		if g, ok := granted(session, tool, rawArgs); ok {
			return permDecision{decision: Allow, reason: "allowed for this session: " + grantLabel(g)}
		}
		return permDecision{decision: Ask, reason: first.reason(argsOf)}
	}
	switch own.Decision {
	case Allow:
		return permDecision{decision: Allow}
	case Ask:
		if g, ok := granted(session, tool, rawArgs); ok {
			return permDecision{decision: Allow, reason: "allowed for this session: " + grantLabel(g)}
		}
		reason := own.Reason
		if reason == "" {
			reason = fmt.Sprintf("tool %q asks for approval of this call", tool)
		}
		return permDecision{decision: Ask, reason: reason}
	}
	if g, ok := granted(session, tool, rawArgs); ok {
		return permDecision{decision: Allow, reason: "allowed for this session: " + grantLabel(g)}
	}
	if first != nil {
		return permDecision{decision: first.Decision, reason: first.reason(argsOf)}
	}
	d := p.mode(spec)
	if d == Allow {
		return permDecision{decision: d} // no one reads the reason of an allowed call
	}
	return permDecision{decision: d, reason: modeReason(tool, spec)}
}

// granted returns the session's grant that covers the call, if any.
func granted(session toolkit.LocalScope, tool string, rawArgs json.RawMessage) (Grant, bool) {
	g, ok := sessionGrantsOf.Get(session)
	if !ok {
		return Grant{}, false
	}
	return g.covering(tool, rawArgs)
}

func (p *Permissions) intercept(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
	d := p.decide(ctx, inv)
	switch d.decision {
	case Allow:
		return next(ctx, inv)
	case Deny:
		msg := fmt.Sprintf("permission denied: tool %q may not run here", inv.Call.Name)
		if d.reason != "" {
			msg += ": " + d.reason
		}
		return toolkit.Failure(events.StateDenied, permWrap(ErrDenied, msg+". Do not call it again with these arguments; tell the user or find another way"))
	}
	if inv.Approved() {
		// A person approved it with its whole batch (batchapproval.go), which
		// asked with these same rules: what they deny stays denied above.
		inv.Meta("approved", true)
		return next(ctx, inv)
	}
	if pd, ok := ctx.Value(priorKey{}).(*priorDecision); ok && pd.session == inv.Session && pd.call == inv.Call.ID {
		// Decided before this process ran the call (package durable): the
		// person is not asked again, and the decision ends as theirs would.
		req := ApprovalRequest{Session: inv.Session, CallID: inv.Call.ID, Tool: toolName(inv), Args: inv.Call.Args, Reason: d.reason}.shown()
		return p.conclude(ctx, inv, next, req, permVerdict{approve: pd.d.Approve, args: pd.d.Args, reason: pd.d.Reason}, "decided before a restart")
	}
	if inv.CannotRun(ctx) {
		// A tool nobody registered, that nothing inside this interceptor
		// may answer or alias (installed with Unknown set): the call fails
		// whatever a person decides, so nobody is asked; the model gets the
		// unknown-tool answer, with the names it may have meant.
		return next(ctx, inv)
	}
	var suggestions []Suggestion
	if !d.firm && p.suggest != nil {
		suggestions = p.suggest(inv.Tool.Spec(), inv.Call.Args)
	}
	return p.ask(ctx, inv, next, d.reason, suggestions)
}

// ask suspends the call until a decision, the wait timeout or the run's end.
func (p *Permissions) ask(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler, reason string, suggestions []Suggestion) toolkit.Outcome {
	if args := inv.Call.Args; len(args) > 0 && !json.Valid(args) {
		// Arguments an interceptor outside this one rewrote (the engine
		// checks them only when the tool is about to run): no request
		// can carry them, so nobody could be asked, and they would fail
		// anyway.
		var syntax json.RawMessage
		err := json.Unmarshal(args, &syntax)
		return toolkit.Failure(events.StateError, &toolkit.ArgumentError{Tool: toolName(inv),
			Err: fmt.Errorf("arguments are not valid JSON (%w), so nobody was asked to approve this call and it did not run", err)})
	}
	key := permKey{inv.Session, inv.Call.ID}
	pd := &permPending{ch: make(chan permVerdict, 1), req: ApprovalRequest{
		Session: inv.Session, CallID: inv.Call.ID, Tool: toolName(inv), Args: inv.Call.Args,
		Reason: reason, Suggestions: suggestions, Status: "pending", Expires: time.Now().Add(p.wait),
	}.shown()}
	release, ok := p.hold(key, pd)
	if !ok {
		// Approve and Reject name a call by session and id: a second
		// request under the same key would take the first one's place.
		return toolkit.Failure(events.StateError, fmt.Errorf("%w: call id %q is in use by another call of this session that waits for approval; "+
			"every call needs its own id. This call did not run: make it again with a new id", toolkit.ErrInvalidCall, inv.Call.ID))
	}
	defer release()

	wait, resume := inv.Suspend("approval")
	if err := inv.Emit(ApprovalEvent, pd.req); err != nil && p.withdraw(key, pd) {
		// Nobody received the question: do not wait for an answer. (If a
		// decision took the request first, from Pending, it stands.)
		return toolkit.Failure(events.StateError, fmt.Errorf("the request to approve this call of %q could not be sent (%v), so nobody was asked and it did not run",
			inv.Call.Name, err))
	}
	timer := time.NewTimer(p.wait)
	defer timer.Stop()
	var v permVerdict
	select {
	case v = <-pd.ch:
	case <-timer.C:
		expiryHook()
		if !p.withdraw(key, pd) {
			// A decision took the request first (its Approve or Reject
			// returned nil): it stands, on its way in pd.ch.
			v = <-pd.ch
			break
		}
		p.announce(inv, pd.req, "expired", fmt.Sprintf("no decision within %v", p.wait))
		return toolkit.Failure(events.StateDenied, fmt.Errorf("%w: nobody approved this call of %q within %v, so it did not run. Ask the user before trying again",
			ErrNoDecision, inv.Call.Name, p.wait))
	case <-wait.Done():
		interruptHook()
		// An interrupted call does not run, even if a decision came at the
		// same moment: its deadline or its batch's cancellation won. But a
		// decision that took the request first (its Approve or Reject
		// returned nil) was given: what it adds to the session (AlwaysAllow,
		// an accepted suggestion) stands, and its event says the call did
		// not run.
		if !p.withdraw(key, pd) {
			v := <-pd.ch
			note := "the call was interrupted before it could run"
			if !v.approve {
				p.announce(inv, pd.req, "rejected", permJoin(note, v.reason))
			} else {
				p.announce(inv, pd.req, "approved", p.grant(ctx, inv, v, note))
			}
		}
		return inv.ContextFailure(wait)
	}
	return p.conclude(resume(), inv, next, pd.req, v, "")
}

// conclude ends an asked call as the person decided: note, if set, is
// added to the decision event's note.
func (p *Permissions) conclude(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler, req ApprovalRequest, v permVerdict, note string) toolkit.Outcome {
	if !v.approve {
		p.announce(inv, req, "rejected", permJoin(note, v.reason))
		msg := fmt.Sprintf("the user rejected this call of %q", inv.Call.Name)
		if v.reason != "" {
			msg += ": " + v.reason
		}
		return toolkit.Failure(events.StateDenied, permWrap(ErrRejected, msg+". Do not retry it as it was; follow the user's reason"))
	}
	if v.args != nil {
		if reason, denied := p.edit(ctx, inv, v.args); denied {
			p.announce(inv, req, "denied", permJoin(note, reason))
			return toolkit.Failure(events.StateDenied, permWrap(ErrDenied, fmt.Sprintf(
				"permission denied: the user approved this call of %q with edited arguments, but %s. It did not run; tell the user", inv.Call.Name, reason)))
		}
		note = permJoin(note, "arguments edited")
	}
	note = p.grant(ctx, inv, v, note)
	p.announce(inv, req, "approved", note)
	inv.Meta("approved", true)
	return next(ctx, inv)
}

// grant adds to the session the rules an approval accepted (AlwaysAllow,
// suggestions) and returns note with what it added.
func (p *Permissions) grant(ctx context.Context, inv *toolkit.Invocation, v permVerdict, note string) string {
	if v.always {
		v.grants = append(v.grants, Grant{Tool: toolName(inv)})
	}
	if len(v.grants) > 0 {
		grants := sessionGrantsOf.LoadOrInit(inv, newSessionGrants)
		for _, g := range v.grants {
			grants.add(g)
			note = permJoin(note, fmt.Sprintf("allowed for the rest of the session: %s", grantLabel(g)))
		}
		note = p.keepGrants(ctx, inv.Session, v.grants, note)
	}
	return note
}

// edit puts a person's edited arguments in the call and reports whether a
// rule denies them, and why. The rules see them as they will run (prepared,
// as the model's are): an approval cannot lift what a rule denies by
// editing the call there. Arguments that do not prepare go in as given and
// fail with the tool's argument error when the call runs.
func (p *Permissions) edit(ctx context.Context, inv *toolkit.Invocation, args json.RawMessage) (reason string, denied bool) {
	inv.Call.Args = args
	if inv.Tool == nil {
		return "", false
	}
	prepared, err := inv.Tool.PrepareArgs(args)
	if err != nil {
		return "", false
	}
	inv.Call.Args = prepared
	d := p.decide(ctx, inv)
	if d.decision != Deny {
		return "", false
	}
	reason = "a rule denies the edited arguments"
	if d.reason != "" {
		reason += ": " + d.reason
	}
	return reason, true
}

// PriorDecision is a person's decision about a call given before the call
// reached Permissions: while no process ran it (package durable keeps such
// decisions across a restart of the agent's process).
type PriorDecision struct {
	// Approve lets the call run; false rejects it.
	Approve bool
	// Args are edited arguments to run it with (nil: as called).
	Args json.RawMessage
	// Reason is a rejection's reason: what the model reads.
	Reason string
}

type priorKey struct{}

type priorDecision struct {
	session, call string
	d             PriorDecision
}

// WithPriorDecision returns ctx carrying d for the call callID of session.
// When that call reaches Permissions with ctx (an outer interceptor passes
// it on) and Permissions would ask about it, d is the answer: nobody is
// asked, no pending request goes out, and the call ends as if the person
// had decided then (Approve with WithArgs, or Reject), with an "approval"
// event saying so. It answers only a question Permissions asks: a call
// that a rule, a firm rule or the tool's own check denies stays denied,
// and one they allow runs. Other calls that see ctx ignore it.
func WithPriorDecision(ctx context.Context, session, callID string, d PriorDecision) context.Context {
	return context.WithValue(ctx, priorKey{}, &priorDecision{session: session, call: callID, d: d})
}

// hold lists a request as pending until the returned function is called,
// unless another request waits under the same key (ok false): a call of
// the same id in a batch running beside this one (the model chose the
// ids), which Approve could not tell from this one.
func (p *Permissions) hold(key permKey, pd *permPending) (release func(), ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, taken := p.pending[key]; taken {
		return nil, false
	}
	p.pending[key] = pd
	return func() { p.withdraw(key, pd) }, true
}

// withdraw takes pd off the pending list and reports whether it did. It
// did not when a decision took it first (settle, under the same lock): the
// decision is then on pd.ch, and Approve or Reject has told its caller it
// was given, so the waiting side must follow it rather than expire.
func (p *Permissions) withdraw(key permKey, pd *permPending) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending[key] != pd {
		return false
	}
	delete(p.pending, key)
	return true
}

func permJoin(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

func (p *Permissions) announce(inv *toolkit.Invocation, req ApprovalRequest, status, note string) {
	req.Status, req.Note, req.Expires = status, visibleText(note), time.Time{}
	_ = inv.Emit(ApprovalEvent, req)
}

// ApproveOption refines an approval.
type ApproveOption func(*permVerdict)

// WithArgs approves the call with edited arguments (checked against the
// tool's schema before it runs).
func WithArgs(args json.RawMessage) ApproveOption { return func(v *permVerdict) { v.args = args } }

// AlwaysAllow also allows the tool for the rest of the session.
func AlwaysAllow() ApproveOption { return func(v *permVerdict) { v.always = true } }

// WithSuggestion also accepts one of the request's suggestions (by its
// id): its rule holds for the rest of the session. Repeat it to accept
// several.
func WithSuggestion(id string) ApproveOption {
	return func(v *permVerdict) { v.suggestions = append(v.suggestions, id) }
}

// Approve lets a waiting call run. It returns ErrNotPending when no call with
// that id waits in that session, and ErrUnknownSuggestion (the call still
// waits) for a suggestion id the request did not offer. Once it returned
// nil the decision is taken: if the call is interrupted at that moment
// (its batch cancelled) it does not run, but the rules the approval adds
// for the session (AlwaysAllow, WithSuggestion) stand, and the "approved"
// event's note says the call was interrupted.
func (p *Permissions) Approve(session, callID string, opts ...ApproveOption) error {
	v := permVerdict{approve: true}
	for _, o := range opts {
		o(&v)
	}
	return p.settle(session, callID, v)
}

// ExceptCall, approving a batch's request (see [Permissions.BatchApproval]),
// rejects one of its calls with reason (what the model reads) and approves
// the others: Solon AI's decision per call id. Approve fails with
// ErrNotPending, deciding nothing, when callID is not a call the request
// asks about (a call's own request asks about no other call).
func ExceptCall(callID, reason string) ApproveOption {
	return func(v *permVerdict) {
		if v.except == nil {
			v.except = map[string]string{}
		}
		v.except[callID] = reason
	}
}

// Reject refuses a waiting call; reason is what the model reads.
func (p *Permissions) Reject(session, callID, reason string) error {
	return p.settle(session, callID, permVerdict{reason: reason})
}

func (p *Permissions) settle(session, callID string, v permVerdict) error {
	p.mu.Lock()
	pd, ok := p.pending[permKey{session, callID}]
	if !ok {
		p.mu.Unlock()
		return fmt.Errorf("%w: %q in session %q", ErrNotPending, callID, session)
	}
	for id := range v.except {
		if !slices.ContainsFunc(pd.req.Calls, func(r ApprovalRequest) bool { return r.CallID == id }) {
			p.mu.Unlock()
			return fmt.Errorf("%w: %q is not a call this request asks about (%q in session %q); ExceptCall names a call of a batch's request",
				ErrNotPending, id, callID, session)
		}
	}
	for _, id := range v.suggestions {
		i := slices.IndexFunc(pd.req.Suggestions, func(s Suggestion) bool { return s.ID == id })
		if i < 0 {
			p.mu.Unlock()
			return unknownSuggestion(id, callID, session, pd.req.Suggestions)
		}
		v.grants = append(v.grants, pd.req.Suggestions[i].Grant)
	}
	delete(p.pending, permKey{session, callID})
	p.mu.Unlock()
	pd.ch <- v
	return nil
}

func unknownSuggestion(id, callID, session string, offered []Suggestion) error {
	if len(offered) == 0 {
		return fmt.Errorf("%w %q: the request for %q in session %q offers no suggestions; the call still waits", ErrUnknownSuggestion, id, callID, session)
	}
	ids := make([]string, len(offered))
	for i, s := range offered {
		ids[i] = fmt.Sprintf("%s (%s)", s.ID, s.Label)
	}
	return fmt.Errorf("%w %q: the request for %q in session %q offers %s; the call still waits", ErrUnknownSuggestion, id, callID, session, strings.Join(ids, ", "))
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
