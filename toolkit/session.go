package toolkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolstream/toolstream/events"
)

// Session is one conversation: it scopes the calls of its batches and holds
// per-session state (suspended calls today; active groups and loaded skills
// with the packages that add them). Its methods are safe for concurrent use,
// and batches of one session may overlap.
type Session struct {
	tk  *Toolkit
	id  string
	seq atomic.Uint64 // session-level events

	mu        sync.Mutex
	suspended map[string]*call
	waits     map[*scope]struct{} // the waits of calls an interceptor suspended (Invocation.Suspend)
	hookWaits map[*guard]struct{} // Before hooks that suspended their batch (BatchPlan.Suspend)
	closed    bool
	emitMu    sync.Mutex
	locals    *localStore // session locals (local.go), made on first use, dropped by Close
}

// Session returns the session with the given id, creating it on first use.
// Ids come from outside and are checked: they must be 1 to 256 bytes of
// UTF-8 without control characters (ErrInvalidSession otherwise).
func (tk *Toolkit) Session(id string) (*Session, error) {
	if err := events.CheckSessionID(id); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSession, err)
	}
	if tk.closed.Load() {
		return nil, ErrClosed
	}
	tk.sessMu.Lock()
	defer tk.sessMu.Unlock()
	s, ok := tk.sessions[id]
	if !ok {
		s = &Session{tk: tk, id: id, suspended: map[string]*call{}}
		tk.sessions[id] = s
	}
	return s, nil
}

// Sessions returns the ids of the open sessions, sorted.
func (tk *Toolkit) Sessions() []string {
	tk.sessMu.Lock()
	defer tk.sessMu.Unlock()
	ids := make([]string, 0, len(tk.sessions))
	for id := range tk.sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// Toolkit returns the toolkit the session belongs to.
func (s *Session) Toolkit() *Toolkit { return s.tk }

// Submit completes a suspended call of this session (an external tool's)
// with content the tool produced outside, or with an error. Observers see the
// content as the call's deltas and then its result, and the batch the call
// belongs to goes on. It returns ErrUnknownCall when no call with that id is
// suspended in the session, and ErrClosed once the session is closed.
//
// A successful result (err nil) of a tool that declares an output schema
// ([Spec.OutputSchema]) must hold a structured result that conforms, as a
// handler's must ([Tool.CheckOutput]). One that does not is refused: Submit
// returns an *[OutputError] that lists the
// problems, nothing of it reaches the model or the observers, and the call
// keeps waiting for a valid result (or an error). A failure is not checked.
func (s *Session) Submit(callID string, content []events.Part, err error) error {
	c, ok, cerr := s.submitLook(callID, content, err)
	if cerr != nil {
		return cerr
	}
	return s.submitTake(callID, c, ok, content, err)
}

// submitLook is Submit's first look: the call that waits under callID, if
// any, and the check of a successful result, made outside the session's
// lock (an output schema may take a while).
func (s *Session) submitLook(callID string, content []events.Part, err error) (c *call, ok bool, cerr error) {
	s.mu.Lock()
	c, ok = s.suspended[callID]
	s.mu.Unlock()
	if ok && err == nil {
		c.mu.Lock()
		exe := c.exe
		c.mu.Unlock()
		if cerr := exe.CheckOutput(content); cerr != nil {
			return nil, false, fmt.Errorf("toolkit: result refused; call %q of session %q still waits for a valid one: %w", callID, s.id, cerr)
		}
	}
	return c, ok, nil
}

// submitTake is Submit's second look: it takes c only if it is still the
// call that waits under callID (the wait may have ended, and another call
// may wait under the same id, since submitLook), and hands it the result.
func (s *Session) submitTake(callID string, c *call, ok bool, content []events.Part, err error) error {
	s.mu.Lock()
	if ok {
		// Checked outside the lock: taken only if still the same wait.
		c2, still := s.suspended[callID]
		if ok = still && c2 == c; ok {
			delete(s.suspended, callID)
		}
	}
	closed := s.closed
	s.mu.Unlock()
	if !ok && closed {
		// Closing ended every waiting call: say so rather than "unknown".
		return fmt.Errorf("%w: session %q, so call %q waits no more", ErrClosed, s.id, callID)
	}
	if !ok {
		return fmt.Errorf("%w: %q in session %q", ErrUnknownCall, callID, s.id)
	}
	hookSubmitTaken()
	state := events.StateSuccess
	if err != nil {
		state = events.StateError
	}
	c.side.ext <- extResult{state: state, parts: content, err: err}
	return nil
}

// Suspended returns the calls of this session that wait for [Session.Submit].
func (s *Session) Suspended() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	calls := make([]Call, 0, len(s.suspended))
	for _, c := range s.suspended {
		calls = append(calls, c.call)
	}
	slices.SortFunc(calls, func(a, b Call) int {
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
	return calls
}

// Close removes the session from the toolkit. Its suspended calls are
// reported as interrupted (an interceptor's wait, Invocation.Suspend, ends
// with ErrClosed as its cause, as Invocation.ContextFailure reports it;
// context.Cause of the wait says only context.Canceled), and so are the
// batches whose Before hook suspended them (BatchPlan.Suspend); a wait that
// begins after Close (a batch still running reaches an external call, an
// interceptor suspends) ends at once the same way, and later batches in it
// fail with ErrClosed as the cause. It never waits for any of them.
func (s *Session) Close() {
	s.tk.sessMu.Lock()
	if s.tk.sessions[s.id] == s {
		delete(s.tk.sessions, s.id)
	}
	s.tk.sessMu.Unlock()
	s.mu.Lock()
	s.closed = true
	locals := s.locals
	s.locals = nil
	pending := s.suspended
	s.suspended = map[string]*call{}
	waits := s.waits
	s.waits = nil
	hooks := s.hookWaits
	s.hookWaits = nil
	s.mu.Unlock()
	if locals != nil {
		locals.clear()
	}
	for w := range waits {
		w.endWait(s.closedErr())
	}
	for g := range hooks {
		if g.running() {
			g.b.interrupt(s.closedErr())
		}
	}
	for _, c := range pending {
		c.side.ext <- extResult{state: events.StateInterrupted, err: closedWaitErr(c.call.Name)}
	}
	if sc, ok := s.tk.visibility().(sessionCloser); ok {
		sc.SessionClosed(s.id)
	}
}

// Observed reports whether a session-level event sent now would reach any
// observer: a caller that builds event bodies on a hot path (the agent
// loop's text deltas) skips them when none would.
func (s *Session) Observed() bool { return !s.tk.observerSet().empty() }

// Emit sends a session-level event (what UIs show beside calls, such as the
// tool groups now active) to every observer: type typ, body data marshalled
// to JSON into Event.Data. Session-level events are numbered per session.
// Types must be valid names ([events.CheckType]) other than those of the
// call lifecycle. The event goes with the trace context of the work ctx
// carries (events.Event.Trace, the traceparent header on NATS), so that a
// subscriber links it to its span: inside a traced call that is the call's
// span; elsewhere, the span in ctx when the toolkit has a tracer
// ([WithTracer]).
func (s *Session) Emit(ctx context.Context, typ events.Type, data any) error {
	return s.emit(typ, data, nil, s.traceOf(ctx))
}

// traceOf is the trace context of the work ctx carries, or nil.
func (s *Session) traceOf(ctx context.Context) events.Trace {
	tracer := s.tk.opts.tracer
	if tracer == nil || ctx == nil {
		return nil
	}
	if c, ok := ctx.Value(callKey{}).(*call); ok {
		if t := c.trace(); t != nil {
			return t
		}
	}
	return tracer.TraceContext(ctx)
}

// emit sends a session-level event; bt is the trace of the batch that
// sends it, if any (it sees the event too), else tr the trace of the work
// that sends it, if any.
func (s *Session) emit(typ events.Type, data any, bt batchTrace, tr events.Trace) error {
	if err := checkFreeType(typ); err != nil {
		return err
	}
	obs := s.tk.observerSet()
	if obs.empty() && bt == nil {
		return nil
	}
	body, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("toolkit: session event %q: %w", typ, err)
	}
	ev := &events.Event{Version: events.Version, Type: typ, Session: s.id, Time: time.Now(), Data: body, Trace: tr}
	s.dispatch(obs, ev, nil, bt)
	return nil
}

// dispatch numbers a session-level event and hands it to the observers
// (and to bt, the trace of the batch that sends it, if any); f, if set,
// counts it until each asynchronous observer has it.
func (s *Session) dispatch(obs *observerSet, ev *events.Event, f *flush, bt batchTrace) {
	s.emitMu.Lock()
	defer s.emitMu.Unlock() // numbering and delivery in the same order
	ev.Seq = s.seq.Add(1)
	if bt != nil {
		ev.Trace = bt
		s.tk.deliverInline(bt, ev)
	}
	obs.dispatch(s.tk, ev, f)
}

// suspend parks a call until Submit. It fails when the id is taken.
func (s *Session) suspend(c *call) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if _, dup := s.suspended[c.call.ID]; dup {
		return errors.New("another call with the same id is already suspended in this session")
	}
	s.suspended[c.call.ID] = c
	return nil
}

// closedWaitErr is the error of an external call that cannot wait, or
// waits no more, because its session was closed.
func closedWaitErr(name string) error {
	return &callError{kind: ErrInterrupted, cause: ErrClosed,
		msg: fmt.Sprintf("tool %q was interrupted: the session was closed", shownName(name))}
}

// closedErr is why the waits of a closed session ended.
func (s *Session) closedErr() error {
	return fmt.Errorf("%w: session %q was closed", ErrClosed, s.id)
}

// holdWait keeps the wait of a call an interceptor suspended, so that Close
// ends it: the wait has no deadline, nothing else would. The wait leaves the
// session when it ends, whatever ends it, or when the call resumes.
func (s *Session) holdWait(w *scope) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		w.endWait(s.closedErr())
		return
	}
	if s.waits == nil {
		s.waits = make(map[*scope]struct{})
	}
	s.waits[w] = struct{}{}
	s.mu.Unlock()
	w.AfterFunc(func() { s.dropWait(w) })
}

// holdHooks keeps the Before hooks of a batch they suspended, so that
// Close ends their wait; they leave the session when their time is over.
func (s *Session) holdHooks(g *guard) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		g.b.interrupt(s.closedErr())
		return
	}
	if s.hookWaits == nil {
		s.hookWaits = make(map[*guard]struct{})
	}
	s.hookWaits[g] = struct{}{}
	s.mu.Unlock()
}

// dropHooks forgets Before hooks whose time is over.
func (s *Session) dropHooks(g *guard) {
	s.mu.Lock()
	delete(s.hookWaits, g)
	s.mu.Unlock()
}

// dropWait forgets a wait that ended or whose call resumed.
func (s *Session) dropWait(w *scope) {
	s.mu.Lock()
	delete(s.waits, w)
	s.mu.Unlock()
}

// unsuspend takes a call whose wait ended off the session. It reports false
// when Submit or Close took it first: their result is on its way.
func (s *Session) unsuspend(c *call) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.suspended[c.call.ID] == c {
		delete(s.suspended, c.call.ID)
		return true
	}
	return false
}
