package thread

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
	"github.com/toolstream/toolstream/ui/internal/hook"
)

// Errors a request can meet; handlers turn them into HTTP statuses.
var (
	// ErrBusy: the thread is streaming a response; wait for its end.
	ErrBusy = errors.New("ui: the thread is running and waits for no answer: wait for the response to end")
	// ErrNothingToRun: the request brings no new user message and answers
	// no approval.
	ErrNothingToRun = errors.New("ui: nothing to run: the request has no new user message and answers no pending approval")
	// ErrNoPermissions: answers came for approvals but the host has no
	// interceptors.Permissions to give them to.
	ErrNoPermissions = errors.New("ui: approvals were answered but the host was given no Permissions (WithPermissions)")
	// ErrClosed: the host is closed.
	ErrClosed = errors.New("ui: the host is closed")
	// ErrForgotten: the thread was forgotten (Host.Forget) since the
	// caller got it; Host.Thread with its id starts a new one.
	ErrForgotten = errors.New("ui: the thread was forgotten (Host.Forget): ask the host for the thread again")
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
type Host struct {
	tk     *toolkit.Toolkit
	loop   *agent.Loop
	perms  *interceptors.Permissions
	system string
	prefix string
	// writeTimeout bounds each frame's write (WriteTimeout); 0: none.
	writeTimeout time.Duration
	// origins are WithAllowedOrigins' entries, cross the policy made of
	// them (Admit), authorize the hook of WithAuthorize or nil.
	origins   []string
	cross     *originPolicy
	authorize authorizeFunc

	ctx    context.Context // ends every run on Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	remove func()

	mu         sync.RWMutex
	threads    map[string]*Thread       // by session id
	forgetting map[string]chan struct{} // session ids Forget is ending, closed when it is done
	closed     bool
}

// Option configures a Host.
type Option func(*Host)

// WithPermissions gives the host the permissions interceptor the
// toolkit uses, so that people's answers to approval requests reach it.
func WithPermissions(p *interceptors.Permissions) Option { return func(h *Host) { h.perms = p } }

// WithSystem sets the system prompt of new threads' conversations.
func WithSystem(prompt string) Option { return func(h *Host) { h.system = prompt } }

// WithSessionPrefix names the toolkit sessions of threads prefix+threadID
// (default "ui-"), so that they never meet sessions of other origins.
func WithSessionPrefix(prefix string) Option { return func(h *Host) { h.prefix = prefix } }

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
func WithWriteTimeout(d time.Duration) Option {
	return func(h *Host) {
		if d == 0 {
			d = defaultWriteTimeout()
		}
		h.writeTimeout = max(d, 0)
	}
}

// NewHost returns a host running loop on tk's sessions. Close it to end
// the runs and detach it from the toolkit.
func NewHost(tk *toolkit.Toolkit, loop *agent.Loop, opts ...Option) *Host {
	h := &Host{tk: tk, loop: loop, prefix: "ui-", writeTimeout: defaultWriteTimeout(), threads: map[string]*Thread{}, forgetting: map[string]chan struct{}{}}
	for _, o := range opts {
		o(h)
	}
	h.cross = newOrigins(h.origins)
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.remove = tk.ObserveInline(toolkit.ObserverFunc(h.observe))
	return h
}

// observe hands an event to its thread. It only appends to a buffer.
func (h *Host) observe(ev *events.Event) {
	h.mu.RLock()
	t := h.threads[ev.Session]
	h.mu.RUnlock()
	if t != nil {
		t.add(ev)
	}
}

// Close cancels every run, waits for them and detaches the host. Threads
// and their sessions are closed.
func (h *Host) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	threads := h.threads
	h.mu.Unlock()
	h.cancel()
	h.remove() // the runs' last events have nobody to go to
	h.wg.Wait()
	for _, t := range threads {
		t.sess.Close()
		t.mu.Lock()
		t.closeLog(&End{Kind: EndError, Error: &agent.RunError{Error: ErrClosed.Error(), Canceled: true}, Closed: true})
		t.mu.Unlock()
	}
}

// enter counts a goroutine Close must wait for, unless the host is
// closed: deciding and counting under h.mu, which Close takes to set
// closed before it waits, no goroutine starts after Close's wait began.
func (h *Host) enter() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return false
	}
	h.wg.Add(1)
	return true
}

// Thread returns the thread with id, creating it (and its session) when
// it is new. Ids follow the session id rule (1 to 256 bytes of UTF-8
// without control characters, with the prefix).
func (h *Host) Thread(id string) (*Thread, error) {
	if id == "" {
		return nil, errors.New("ui: a thread id is required")
	}
	sid := h.prefix + id
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	if t := h.threads[sid]; t != nil {
		h.mu.Unlock()
		return t, nil
	}
	if h.forgetting[sid] != nil {
		// Its session is still open: a new thread would get it, and Forget
		// would close it under the new thread.
		h.mu.Unlock()
		return nil, fmt.Errorf("%w: thread %q is being forgotten now; ask again once Forget returns", ErrForgotten, id)
	}
	sess, err := h.tk.Session(sid)
	if err != nil {
		h.mu.Unlock()
		return nil, fmt.Errorf("ui: thread %q: %w", id, err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	nonce := hex.EncodeToString(b[:])
	t := &Thread{h: h, id: id, nonce: nonce, sess: sess, conv: &agent.Conversation{System: h.system},
		tr: newTracker(nonce), seen: map[string]bool{}, state: map[string]json.RawMessage{}}
	t.cur = newLog(1, 1)
	h.threads[sid] = t
	h.mu.Unlock()
	// The first mark, outside every lock: the observers run inside Emit.
	_ = sess.Emit(context.Background(), MarkEvent, Mark{Thread: nonce, Response: 1})
	return t, nil
}

// Forget ends a thread: its run is cancelled and waited for, its session
// closed and the host lets it go (a request with the same id after
// Forget returns starts a new conversation; one meanwhile is refused with
// ErrForgotten). Threads are kept until then: an application that serves
// many calls Forget for those it is done with.
func (h *Host) Forget(id string) {
	sid := h.prefix + id
	h.mu.Lock()
	t := h.threads[sid]
	if t == nil {
		ch := h.forgetting[sid]
		h.mu.Unlock()
		if ch != nil {
			<-ch // another Forget is ending it
		}
		return
	}
	delete(h.threads, sid)
	ch := make(chan struct{})
	h.forgetting[sid] = ch
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.forgetting, sid)
		h.mu.Unlock()
		close(ch)
	}()
	t.mu.Lock()
	t.forgotten = true // no run starts from here: the one going on is the last
	cancel, done := t.cancel, t.done
	t.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	t.sess.Close()
	t.mu.Lock()
	t.closeLog(&End{Kind: EndError, Error: &agent.RunError{Error: "ui: the thread was forgotten", Canceled: true}, Closed: true})
	t.mu.Unlock()
}

// Lookup returns the thread with id, or nil when the host has none.
func (h *Host) Lookup(id string) *Thread {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.threads[h.prefix+id]
}

// Thread is one conversation served to a UI: a toolkit session, the
// conversation and its responses.
type Thread struct {
	h     *Host
	id    string
	nonce string
	sess  *toolkit.Session
	conv  *agent.Conversation

	answering sync.Mutex // held while a request's answers are checked and given

	mu         sync.Mutex
	tr         *tracker
	cur        *Log                       // the response the events go to now
	last       *Log                       // the response before it
	seen       map[string]bool            // message ids the thread took in
	state      map[string]json.RawMessage // the last groups and skills events' bodies
	answeredIn *Log                       // the response the last ui_answers event went to
	running    bool
	forgotten  bool // Host.Forget let the thread go: Begin refuses
	runNo      int  // the tracker's number of the run going on
	cancel     context.CancelFunc
	done       chan struct{} // closed when the current run returns
}

// ID returns the thread's id (without the session prefix).
func (t *Thread) ID() string { return t.id }

// State returns the thread's shared state for a UI: the body of the last
// groups and skills session events, under "groups" and "skills".
func (t *Thread) State() map[string]json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.state)
}

// Nonce returns the thread's random name in its marks (Mark.Thread).
func (t *Thread) Nonce() string { return t.nonce }

// Session returns the thread's toolkit session.
func (t *Thread) Session() *toolkit.Session { return t.sess }

// add takes one event of the thread's session (from the observer).
func (t *Thread) add(ev *events.Event) {
	t.mu.Lock()
	if (ev.Type == "groups" || ev.Type == "skills") && ev.Call == "" && len(ev.Data) > 0 {
		t.state[string(ev.Type)] = ev.Data
	}
	s := t.tr.add(ev)
	if s.keep {
		t.cur.append(ev)
		if ev.Type == AnswersEvent {
			t.answeredIn = t.cur // the response that shows what the answers do
		}
	}
	if s.end != nil {
		next := newLog(t.tr.resp, t.tr.run)
		if next.Run == t.cur.Run {
			next.prev = t.cur // the run goes on: see Log.Earlier
		}
		t.closeLog(s.end)
		t.last, t.cur = t.cur, next
	}
	t.mu.Unlock()
	if s.want > 0 && t.h.enter() {
		// Not from here: the observer runs inside the toolkit's dispatch.
		go func() {
			defer t.h.wg.Done()
			markHook()
			_ = t.sess.Emit(context.Background(), MarkEvent, Mark{Thread: t.nonce, Response: s.want})
		}()
	}
}

// closeLog ends the current log (t.mu held).
func (t *Thread) closeLog(end *End) {
	l := t.cur
	l.mu.Lock()
	if l.end == nil {
		l.end = end
		close(l.notify)
		close(l.done)
	}
	l.mu.Unlock()
}

// Answer is a person's decision on a call that waits for approval.
type Answer struct {
	Call    string
	Approve bool
	// Reason is what the model reads when the call is rejected.
	Reason string
	// Args, when set, approves the call with these arguments instead.
	Args []byte
}

// Paused returns the approvals the thread waits for when its run is
// paused (the last response ended with EndPaused and the run goes on),
// and nil otherwise.
func (t *Thread) Paused() []interceptors.ApprovalRequest {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pausedLocked()
}

func (t *Thread) pausedLocked() []interceptors.ApprovalRequest {
	if !t.running || len(t.cur.evs) > 0 {
		return nil
	}
	e := t.tr.ending()
	if e == nil || e.Kind != EndPaused {
		return nil
	}
	return e.Approvals
}

// Seen reports whether the thread took in the message with this id.
func (t *Thread) Seen(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.seen[id]
}

// Input is what a request brings to a thread.
type Input struct {
	// Messages are new messages for the conversation (a new run starts
	// with them), by id: ids the thread took in before are skipped, and
	// a request that repeats an id is refused (Begin's error).
	Messages []IDMessage
	// Answers decide calls waiting for approval; the paused run goes on.
	Answers []Answer
}

// IDMessage is a conversation message with the client's id for it.
type IDMessage struct {
	ID string
	agent.Message
}

// Begin starts the thread's next response: it gives answers to the
// paused run, or starts a run with the new messages. A paused run that
// gets new messages is cancelled first, whatever the answers: its
// waiting calls are interrupted, and the new run takes the messages.
// Answers that come with new messages when no run waits (it ended
// meanwhile) are ignored likewise. It returns the response to read; with
// an *AnswersError, some answers were given and some could not be (see
// the package documentation), and the response must be read all the same.
func (t *Thread) Begin(in Input) (*Log, error) {
	if err := distinctIDs(in.Messages); err != nil {
		return nil, err
	}
	t.mu.Lock()
	var fresh []IDMessage
	var paused []interceptors.ApprovalRequest
	for {
		if t.forgotten {
			// The caller got the thread before Host.Forget: a run now would
			// be one Forget does not end, on a closed session.
			t.mu.Unlock()
			return nil, ErrForgotten
		}
		if t.tr.over != nil {
			// The run is over; its response ends at the mark on its way.
			l := t.cur
			t.mu.Unlock()
			<-l.Done()
			t.mu.Lock()
			if t.cur == l && !t.forgotten { // ended without a cut: the host closed
				t.mu.Unlock()
				return nil, ErrClosed
			}
			continue
		}
		if t.running && t.cur.Run != t.runNo {
			// The run is over (its last response ended) and returns now.
			done := t.done
			t.mu.Unlock()
			<-done
			t.mu.Lock()
			continue
		}
		fresh = fresh[:0]
		for _, m := range in.Messages {
			if m.ID == "" || !t.seen[m.ID] {
				fresh = append(fresh, m)
			}
		}
		paused = t.pausedLocked()
		if t.running && paused == nil {
			t.mu.Unlock()
			return nil, ErrBusy
		}
		if t.running && len(fresh) > 0 {
			// Moved on: the paused run ends here (its waiting calls are
			// interrupted, answers or not) and a new one takes the messages.
			cancel, done, l := t.cancel, t.done, t.cur
			t.mu.Unlock()
			movedOnHook()
			cancel()
			<-done
			<-l.Done() // its last response (the run's error) is over
			t.mu.Lock()
			// Everything is read again: while the lock was free, another
			// request may have taken the same messages and started a run
			// (maybe over already), or the host closed.
			continue
		}
		break
	}
	switch {
	case len(in.Answers) > 0 && paused == nil && len(fresh) == 0:
		// With new messages the answers are moot, as when they end a
		// paused run: the run they were for is over.
		t.mu.Unlock()
		return nil, fmt.Errorf("%w: no call waits for approval in thread %q", interceptors.ErrNotPending, t.id)
	case t.running && len(in.Answers) > 0:
		if t.h.perms == nil {
			t.mu.Unlock()
			return nil, ErrNoPermissions
		}
		l := t.cur
		t.mu.Unlock()
		l, err := t.decide(l, paused, in.Answers)
		if err != nil {
			var partly *AnswersError
			if errors.As(err, &partly) {
				return l, err // the run goes on with the answers given
			}
			return nil, err
		}
		return l, nil
	}
	if len(fresh) == 0 {
		t.mu.Unlock()
		return nil, ErrNothingToRun
	}
	startHook()
	if !t.h.enter() {
		t.mu.Unlock()
		return nil, ErrClosed
	}
	for _, m := range fresh {
		if m.ID != "" {
			t.seen[m.ID] = true
		}
		t.conv.Add(m.Message)
	}
	ctx, cancel := context.WithCancel(t.h.ctx)
	t.running, t.cancel, t.done, t.runNo = true, cancel, make(chan struct{}), t.cur.Run
	done, l, runNo := t.done, t.cur, t.runNo
	t.mu.Unlock()
	go func() {
		defer t.h.wg.Done()
		defer cancel()
		_, err := t.h.loop.Run(ctx, t.sess, t.conv) // its end is an answer or run_error event
		t.mu.Lock()
		ended := t.tr.run > runNo || t.tr.over != nil
		t.mu.Unlock()
		if err != nil && !ended {
			// Run refused to start (it sends no event then): the response
			// must end all the same.
			_ = t.sess.Emit(ctx, agent.EventError, agent.RunError{Error: err.Error(), Canceled: ctx.Err() != nil})
		}
		t.mu.Lock()
		t.running = false
		close(done)
		t.mu.Unlock()
	}()
	return l, nil
}

// distinctIDs refuses a request whose messages repeat an id: the thread
// takes in each id once, and which of the two the client meant is not
// the server's guess.
func distinctIDs(msgs []IDMessage) error {
	if len(msgs) < 2 {
		return nil
	}
	seen := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		if m.ID == "" {
			continue
		}
		if seen[m.ID] {
			return fmt.Errorf("ui: message id %q comes twice in the request: give each message an id of its own (a thread takes in each id once)", m.ID)
		}
		seen[m.ID] = true
	}
	return nil
}

// decide gives answers to the permissions interceptor, all or nothing as
// far as the interceptor allows. Every answer is checked first, and
// nothing is given when one fails: two answers for one call, an answer
// for a call the paused run does not wait for, or for a call whose
// approval is no longer pending (it expired, or was decided elsewhere,
// since the run paused). Then each is given. A call can still stop
// waiting between that check and its answer (an approval that expires
// just then): the other answers are given all the same (a person decided
// each call; withholding them would make the run ask again what was
// answered), and an *AnswersError says which took effect and which not.
// Requests that answer the same thread take turns (t.answering), so two
// of them never split one request's answers between them.
//
// It returns the response to read: the one its ui_answers event went to,
// which is l unless l ended meanwhile (a call not answered stopped
// waiting, and the run paused again on the others before the answers).
func (t *Thread) decide(l *Log, waiting []interceptors.ApprovalRequest, answers []Answer) (*Log, error) {
	t.answering.Lock()
	defer t.answering.Unlock()
	for i, a := range answers {
		for _, b := range answers[:i] {
			if b.Call == a.Call {
				// Checked first: the second answer would fail after the first was given.
				return nil, fmt.Errorf("ui: call %q is answered twice in one request: send one answer per call", a.Call)
			}
		}
		found := false
		for _, w := range waiting {
			found = found || w.CallID == a.Call
		}
		if !found {
			return nil, fmt.Errorf("%w: call %q waits for no approval in thread %q", interceptors.ErrNotPending, a.Call, t.id)
		}
	}
	// The thread's view comes from the events; the interceptor's list is
	// the truth now (an expiry's event may be on its way).
	pending := t.h.perms.Pending(t.sess.ID())
	for _, a := range answers {
		if !slices.ContainsFunc(pending, func(r interceptors.ApprovalRequest) bool { return r.CallID == a.Call }) {
			return nil, fmt.Errorf("%w: call %q of thread %q no longer waits for approval (it expired, or was decided elsewhere); no answer of this request was given",
				interceptors.ErrNotPending, a.Call, t.id)
		}
	}
	calls := make([]string, len(answers))
	for i, a := range answers {
		calls[i] = a.Call
	}
	// Before any answer: the response must not end on these calls while
	// their decisions travel (see AnswersEvent).
	answersHook()
	_ = t.sess.Emit(context.Background(), AnswersEvent, AnswerCalls{Thread: t.nonce, Calls: calls})
	t.mu.Lock()
	if t.answeredIn != nil {
		l, t.answeredIn = t.answeredIn, nil
	}
	t.mu.Unlock()
	var given []Answer
	var refused []RefusedAnswer
	for i, a := range answers {
		hook.BeforeAnswer(i)
		var err error
		if a.Approve {
			var opts []interceptors.ApproveOption
			if len(a.Args) > 0 {
				opts = append(opts, interceptors.WithArgs(a.Args))
			}
			err = t.h.perms.Approve(t.sess.ID(), a.Call, opts...)
		} else {
			reason := a.Reason
			if reason == "" {
				reason = "the user rejected it"
			}
			err = t.h.perms.Reject(t.sess.ID(), a.Call, reason)
		}
		if err != nil {
			refused = append(refused, RefusedAnswer{Answer: a, Err: err})
		} else {
			given = append(given, a)
		}
	}
	switch {
	case len(refused) == 0:
		return l, nil
	case len(given) == 0:
		return nil, refused[0].Err // nothing was given: a plain refusal
	}
	return l, &AnswersError{Thread: t.id, Given: given, Refused: refused}
}

// ErrPartlyAnswered is what an *AnswersError is (errors.Is).
var ErrPartlyAnswered = errors.New("ui: some answers were given and some could not be")

// AnswersError is Begin's error when some of a request's answers were
// given and then others could not be: their calls stopped waiting
// between Begin's check and the answer (the approval expired just then,
// or was decided elsewhere). Begin returns it together with the response:
// the run goes on with the answers given, and the response must be read
// (it shows each call's outcome, an expired one's too). Handlers send it
// to the client with the response, so that nothing is lost silently.
type AnswersError struct {
	Thread string
	// Given are the answers that took effect, in the request's order.
	Given []Answer
	// Refused are the answers that did not, with why.
	Refused []RefusedAnswer
}

// RefusedAnswer is an answer that did not take effect, and why.
type RefusedAnswer struct {
	Answer
	Err error
}

func (e *AnswersError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ui: thread %q: %d of %d answers were given (", e.Thread, len(e.Given), len(e.Given)+len(e.Refused))
	for i, a := range e.Given {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(a.Call))
	}
	b.WriteString("); not given:")
	for _, r := range e.Refused {
		fmt.Fprintf(&b, " call %q: %v;", r.Call, r.Err)
	}
	return strings.TrimSuffix(b.String(), ";")
}

// Unwrap makes errors.Is(err, ErrPartlyAnswered) hold.
func (e *AnswersError) Unwrap() error { return ErrPartlyAnswered }

// AnswersReport is an *AnswersError as handlers send it to the client,
// at the start of the response (AG-UI: a CUSTOM event
// "toolstream.answers"; the AI SDK: a data-toolstream-answers part).
type AnswersReport struct {
	Given   []AnswerOutcome `json:"given"`
	Refused []AnswerOutcome `json:"refused"`
}

// AnswerOutcome is one answer of an AnswersReport.
type AnswerOutcome struct {
	Call     string `json:"call"`
	Approved bool   `json:"approved"`
	// Error says why the answer was not given (Refused only).
	Error string `json:"error,omitempty"`
}

// Report returns what the client is told.
func (e *AnswersError) Report() AnswersReport {
	r := AnswersReport{Given: []AnswerOutcome{}, Refused: []AnswerOutcome{}}
	for _, a := range e.Given {
		r.Given = append(r.Given, AnswerOutcome{Call: a.Call, Approved: a.Approve})
	}
	for _, a := range e.Refused {
		r.Refused = append(r.Refused, AnswerOutcome{Call: a.Call, Approved: a.Approve, Error: a.Err.Error()})
	}
	return r
}

// Cancel ends the thread's run, if one goes on: its calls are
// interrupted and the run ends with a run_error event.
func (t *Thread) Cancel() {
	t.mu.Lock()
	cancel := t.cancel
	t.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// CancelResponse ends the run response l belongs to, if l is still the
// response in progress: a cancel meant for a response that is over (its
// run ended, or paused and was resumed by another request) never lands on
// a run or a response that began since. It reports whether it cancelled.
func (t *Thread) CancelResponse(l *Log) bool {
	t.mu.Lock()
	var cancel context.CancelFunc
	if l != nil && t.cur == l && t.running && t.runNo == l.Run && !l.over() {
		cancel = t.cancel // this run's own: calling it later cancels no other
	}
	t.mu.Unlock()
	if cancel == nil {
		return false
	}
	cancel()
	return true
}

// Streaming returns the response in progress: a run goes on and does
// not wait for answers. It returns nil otherwise.
func (t *Thread) Streaming() *Log {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.streamingLocked()
}

func (t *Thread) streamingLocked() *Log {
	if !t.running || t.cur.Run != t.runNo || t.pausedLocked() != nil {
		return nil
	}
	return t.cur
}

// Undelivered returns the response a client should get on reconnecting:
// the one in progress, or else the last one if it ended and no reader
// saw all of it (Log.Delivered); nil when there is none.
func (t *Thread) Undelivered() *Log {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l := t.streamingLocked(); l != nil {
		return l
	}
	for _, l := range []*Log{t.cur, t.last} {
		if l == nil {
			continue
		}
		l.mu.Lock()
		ended, delivered, some := l.end != nil, l.delivered, len(l.evs) > 0
		l.mu.Unlock()
		if ended && some && !delivered {
			return l
		}
		if ended || some {
			return nil // the newest response with anything in it decides
		}
	}
	return nil
}

// Replayer cuts a thread's events read back from the durable stream into
// the same responses as the live thread: feed it the session's events in
// stream order from before the thread's first mark.
type Replayer struct{ tr *tracker }

// NewReplayer returns a replayer for the thread.
func (t *Thread) NewReplayer() *Replayer { return &Replayer{tr: newTracker(t.nonce)} }

// Add takes the next event and says whether it belongs to response n,
// and whether response n is over (it is, once Add returns done).
func (r *Replayer) Add(ev *events.Event, n int) (keep bool, end *End) {
	resp := r.tr.resp
	s := r.tr.add(ev)
	if s.end != nil && resp == n {
		return false, s.end
	}
	return s.keep && resp == n, nil
}

// Log is one response: the events of the thread between two marks, kept
// whole so that several readers (a reload's resume) read it all.
type Log struct {
	// N is the response's number in the thread, from 1, and Run the number
	// of the loop run it belongs to (several responses when a run pauses).
	N, Run int

	prev *Log // the response before it in the same run, or nil

	mu        sync.Mutex
	evs       []*events.Event
	end       *End
	notify    chan struct{} // closed and replaced on each change; closed for good at the end
	done      chan struct{} // closed at the end
	delivered bool
}

// Delivered records that a reader wrote the whole response to its client.
func (l *Log) Delivered() {
	l.mu.Lock()
	l.delivered = true
	l.mu.Unlock()
}

func newLog(n, run int) *Log {
	return &Log{N: n, Run: run, notify: make(chan struct{}), done: make(chan struct{})}
}

// Done is closed when the response is over.
func (l *Log) Done() <-chan struct{} { return l.done }

// Earlier returns the responses of the same run before l, oldest first
// (none for a run's first response): a run that paused for approvals
// and went on is several responses, and a client that rebuilds the run's
// message from its start (a resume) needs all of them. The thread keeps
// them while it keeps l.
func (l *Log) Earlier() []*Log {
	var out []*Log
	for p := l.prev; p != nil; p = p.prev {
		out = append(out, p)
	}
	slices.Reverse(out)
	return out
}

// End returns how the response ended, or nil while it goes on.
func (l *Log) End() *End {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.end
}

func (l *Log) over() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.end != nil
}

func (l *Log) append(ev *events.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.end != nil {
		return
	}
	l.evs = append(l.evs, ev)
	close(l.notify)
	l.notify = make(chan struct{})
}

// Read returns the events from index i on (maybe none yet), the end once
// the response is over and every event was returned, and a channel closed
// when there is more to read.
func (l *Log) Read(i int) (evs []*events.Event, end *End, more <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i < len(l.evs) {
		return l.evs[i:len(l.evs):len(l.evs)], nil, nil
	}
	return nil, l.end, l.notify
}

// Next waits for the events after index i, or the end.
func (l *Log) Next(ctx context.Context, i int) ([]*events.Event, *End, error) {
	for {
		evs, end, more := l.Read(i)
		if len(evs) > 0 || end != nil {
			return evs, end, nil
		}
		select {
		case <-more:
		case <-ctx.Done():
			return nil, nil, context.Cause(ctx)
		}
	}
}
