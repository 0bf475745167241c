package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// defaultMaxTurns bounds a run when WithMaxTurns is not given.
const defaultMaxTurns = 25

// ErrMaxTurns is returned (wrapped) by Run when the model has not
// answered within the loop's turn bound.
var ErrMaxTurns = errors.New("agent: the model did not answer within the turn limit")

// Loop runs conversations: it asks the model for a turn, runs the turn's
// calls with a toolkit session, gives the model the results and repeats
// until the model answers. A Loop holds no per-run state: one Loop serves
// any number of runs at once, on different conversations.
type Loop struct {
	model    Model
	name     string
	maxTurns int
	retry    RetryPolicy
	onSusp   func(ctx context.Context, s *toolkit.Session, r toolkit.Result) error

	hooks        []Hooks            // hooks.go
	interceptors []ModelInterceptor // modelchain.go
	chained      Model              // model inside interceptors
	policy       *ContextPolicy     // context.go; nil: the model is sent the whole conversation
}

// Option configures a Loop.
type Option func(*Loop)

// WithMaxTurns bounds the model turns of one run (25 when
// not given); n < 1 means 1.
func WithMaxTurns(n int) Option {
	return func(l *Loop) { l.maxTurns = max(n, 1) }
}

// WithRetry sets how failed model requests are retried (when
// not given: 4 requests at most, waiting 1 s, 2 s, 4 s or what the
// server asks, up to a minute).
func WithRetry(p RetryPolicy) Option {
	return func(l *Loop) { l.retry = p.withDefaults() }
}

// WithName names the model in events (turn_start, turn_end). Without it
// the name is the model's own (Namer), if it has one.
func WithName(name string) Option {
	return func(l *Loop) { l.name = name }
}

// WithSuspended is called for each call that suspends (an approval, an
// external tool), as it suspends, on the goroutine that runs the batch:
// the place to ask a person or hand the call to another system. It
// must not block for long: the calls of the batch that have not finished
// wait. The call resumes when someone answers it
// (interceptors.Permissions.Approve or Reject, Session.Submit), here or
// elsewhere (a web page). An error cancels the batch and ends the run with it.
//
// Without it, suspended calls wait for an answer from elsewhere until the
// run's context ends. Given twice, the last one given answers.
func WithSuspended(f func(ctx context.Context, s *toolkit.Session, r toolkit.Result) error) Option {
	return func(l *Loop) { l.onSusp = f }
}

// New returns a loop that asks m.
func New(m Model, opts ...Option) *Loop {
	l := &Loop{model: m, maxTurns: defaultMaxTurns, retry: defaultRetry}
	if n, ok := m.(Namer); ok {
		l.name = n.Name()
	}
	for _, o := range opts {
		o(l)
	}
	l.chained = chain(m, l.interceptors)
	return l
}

// End says how a run ended.
type End string

// The ways a run ends.
const (
	// EndAnswer: the model answered without calls. Outcome.Truncated
	// says when the answer was cut at the output token limit.
	EndAnswer End = "answer"
	// EndStopped: the toolkit said to stop after a batch (Outcome.Stop): a
	// return-direct batch (its results are the answer), a call limit, an
	// interceptor or batch hook that ended the run.
	EndStopped End = "stopped"
	// EndMaxTurns: the turn bound was reached (Run returns ErrMaxTurns).
	EndMaxTurns End = "max_turns"
	// EndError: the model failed, a suspension handler or a hook failed,
	// or the run's context ended (Run returns the error).
	EndError End = "error"
	// EndNotEligible: a Hooks.Eligible said the reply's calls must not
	// run. The reply is not recorded: Outcome.Pending holds it.
	EndNotEligible End = "not_eligible"
)

// Outcome is what a run did.
type Outcome struct {
	// Answer is the final answer: the model's words, or for a stopped run
	// the return-direct results (or what stopped it).
	Answer string
	End    End
	// Truncated: the answer is cut short (End == EndAnswer): the model's
	// last reply reached the output token limit (FinishLength) without a
	// call, so Answer is what it wrote until then, not a whole answer. Show
	// it as such, or ask for the rest (the conversation holds it as the
	// model's reply: a user message such as "go on" continues it), or give
	// the model room (the adapters' max tokens option).
	Truncated bool
	// Stop is why the toolkit stopped the run (End == EndStopped).
	Stop *toolkit.Stop
	// Turns counts the model's replies.
	Turns int
	// Results are every call's final result, in the order they ran.
	Results []toolkit.Result
	// Usage adds up the turns' token counts.
	Usage Usage
	// Pending is the reply whose calls did not run (End ==
	// EndNotEligible), as the assistant message the loop would have
	// recorded: to go on with it, add it to the conversation followed by
	// one ToolMessage per call (toolkit.Session.Run runs them).
	Pending *Message
}

// Run continues conv in the session until the model answers: each turn
// reads the session's tool definitions afresh (groups and skills change
// them), asks the model, records its reply in conv, runs its calls and
// records their results in conv. A call the model was still writing when
// its reply reached the output token limit does not run: its result is an
// error (ErrTruncatedCall) that tells the model so; an answer cut there
// ends the run as an answer with Outcome.Truncated set. It stops on an answer,
// a stop from the toolkit (see End), the turn bound, a model failure that
// retries did not cure, or the end of ctx. Hooks (WithHooks) steer it at
// its timing points and model interceptors (WithModelInterceptor) wrap
// each model call.
//
// Run returns the outcome so far with every error. Whatever happens, conv
// is left valid (Conversation.Check): a reply's calls always get results,
// interrupted ones included. conv must not be used by anything else while
// Run runs. The run's events go to the session's observers (see the
// Event constants); a run_error event comes with every error once the run
// has begun. A run refused at once (no session, a conversation that is
// empty or breaks Check, a ContextPolicy with a negative number) sends no
// event, calls no hook and never asks the model.
func (l *Loop) Run(ctx context.Context, sess *toolkit.Session, conv *Conversation) (*Outcome, error) {
	out := &Outcome{}
	if sess == nil || conv == nil {
		return out, errors.New("agent: Run needs a session and a conversation")
	}
	if err := conv.Check(); err != nil {
		return out, err
	}
	if len(conv.Messages) == 0 {
		return out, errors.New("agent: the conversation has no message to answer")
	}
	if err := l.policy.check(); err != nil {
		return out, err
	}
	ctx, scope := beginRun(ctx, sess, conv)
	defer scope.close()
	r := &run{sess: sess}
	r.send = r.st.send
	r.info = RunInfo{sess: sess, conv: conv}
	if len(l.hooks) == 0 {
		return out, l.turns(ctx, r, conv, out)
	}
	ctx, err := l.start(ctx, &r.info)
	if err != nil {
		out.End = EndError
		err = l.fail(ctx, sess, 0, err, ctx.Err() != nil)
	} else {
		err = l.turns(ctx, r, conv, out)
	}
	l.end(ctx, &r.info, out, err)
	return out, err
}

// turns runs the run's turns until one ends it.
func (l *Loop) turns(ctx context.Context, r *run, conv *Conversation, out *Outcome) error {
	sess := r.sess
	for turn := 1; ; turn++ {
		if turn > l.maxTurns {
			out.End = EndMaxTurns
			return l.fail(ctx, sess, turn-1, fmt.Errorf("%w (%d turns)", ErrMaxTurns, l.maxTurns), false)
		}
		r.info.turn = turn
		defs, err := sess.Definitions(ctx)
		if err != nil {
			out.End = EndError
			return l.fail(ctx, sess, turn, fmt.Errorf("agent: turn %d: the session's tools: %w", turn, err), ctx.Err() != nil)
		}
		if sess.Observed() {
			emit(ctx, sess, EventTurnStart, TurnStart{Turn: turn, Model: l.name})
		}
		began := time.Now()
		reply, err := l.generate(ctx, r, turn, conv, defs)
		if err == nil && len(l.hooks) > 0 {
			err = l.afterReply(ctx, &r.info, reply, &r.cut)
		}
		if err != nil {
			out.End = EndError
			return l.fail(ctx, sess, turn, fmt.Errorf("agent: turn %d: %w", turn, err), ctx.Err() != nil)
		}
		out.Turns = turn
		out.Usage = out.Usage.Add(reply.Usage)
		msg := Message{Role: RoleAssistant, Calls: reply.Calls, Extra: reply.Extra}
		if reply.Text != "" {
			msg.Content = []events.Part{events.Text(reply.Text)}
		}
		if sess.Observed() {
			emit(ctx, sess, EventTurnEnd, TurnEnd{Turn: turn, Model: l.modelName(reply), Text: reply.Text, Calls: reply.Calls,
				Finish: reply.Finish, Usage: reply.Usage, DurationMS: ms(time.Since(began))})
		}
		if len(reply.Calls) > 0 && len(l.hooks) > 0 && !l.eligible(ctx, &r.info, reply) {
			pending := msg // msg itself stays on the stack
			out.End, out.Answer, out.Pending = EndNotEligible, reply.Text, &pending
			emit(ctx, sess, EventAnswer, Answer{Text: out.Answer, End: out.End, Turns: out.Turns, Calls: len(out.Results), Usage: out.Usage})
			return nil
		}
		conv.Messages = slices.Grow(conv.Messages, 1+len(reply.Calls))
		conv.Add(msg)
		if len(reply.Calls) == 0 {
			out.End, out.Answer, out.Truncated = EndAnswer, reply.Text, reply.Finish == FinishLength
			emit(ctx, sess, EventAnswer, Answer{Text: out.Answer, End: out.End, Truncated: out.Truncated,
				Turns: out.Turns, Calls: len(out.Results), Usage: out.Usage})
			return nil
		}
		r.info.open = true
		results, stop, err := l.runCalls(ctx, r, turn, reply.Calls, r.cut)
		out.Results = append(out.Results, results...)
		for _, res := range results {
			conv.Add(ToolMessage(res))
		}
		r.info.open = false
		if len(l.hooks) > 0 {
			stop = l.batchEnd(ctx, &r.info, results, stop)
		}
		saveState(ctx, conv)
		if err != nil {
			out.End = EndError
			return l.fail(ctx, sess, turn, err, ctx.Err() != nil)
		}
		if stop.Reason != "" {
			stopped := stop // stop itself stays on the stack
			out.End, out.Stop, out.Answer = EndStopped, &stopped, stopAnswer(stop, results)
			emit(ctx, sess, EventAnswer, Answer{Text: out.Answer, End: out.End, Stop: out.Stop, Turns: out.Turns, Calls: len(out.Results), Usage: out.Usage})
			return nil
		}
	}
}

// ToolMessage returns the tool message that records a call's result: its
// model-visible content, flagged IsError when the call failed.
func ToolMessage(r toolkit.Result) Message {
	return Message{Role: RoleTool, CallID: r.Call.ID, Tool: r.Call.Name, Content: r.Content, IsError: r.IsError()}
}

// run is what one Run reuses from turn to turn (a model must not keep the
// request after Generate returns).
type run struct {
	sess *toolkit.Session
	req  Request
	st   streamer
	send func(Chunk) // st.send, bound once
	cut  *truncation // the call the turn's reply was cut in, if any
	info RunInfo     // what hooks see
	base Request     // the turn's request as assembled, before interceptors
	win  window      // the context policy's state
}

func (l *Loop) modelName(r *Reply) string {
	if r.Model != "" {
		return r.Model
	}
	return l.name
}

// fail reports err as the run's end.
func (l *Loop) fail(ctx context.Context, sess *toolkit.Session, turn int, err error, canceled bool) error {
	emit(ctx, sess, EventError, RunError{Turn: turn, Error: err.Error(), Canceled: canceled})
	return err
}

// runCalls runs a reply's calls as one batch and waits for all of them.
// The results come back in call order even with an error. A call the
// reply was cut in (cut) gets its failure without running.
func (l *Loop) runCalls(ctx context.Context, r *run, turn int, calls []toolkit.Call, cut *truncation) ([]toolkit.Result, toolkit.Stop, error) {
	sess := r.sess
	var b *toolkit.Batch
	if cut != nil {
		b = sess.Start(ctx, calls, cut.outcome())
	} else {
		b = sess.Start(ctx, calls)
	}
	hooked := len(l.hooks) > 0
	if hooked {
		l.batchStart(ctx, &r.info, b)
	}
	var suspErr error
	for res := range b.Results() {
		if res.Final() {
			if hooked {
				l.callEnd(ctx, &r.info, res)
			}
			continue
		}
		if l.onSusp == nil || suspErr != nil {
			continue
		}
		if err := l.onSusp(ctx, sess, res); err != nil {
			suspErr = fmt.Errorf("agent: turn %d: call %s (%s) suspended: %w", turn, res.Call.ID, res.Call.Name, err)
			b.Cancel()
		}
	}
	results := b.Wait()
	switch {
	case suspErr != nil:
		return results, toolkit.Stop{}, suspErr
	case ctx.Err() != nil:
		return results, toolkit.Stop{}, fmt.Errorf("agent: turn %d: %d calls ended early: %w", turn, interrupted(results), context.Cause(ctx))
	}
	stop, _ := b.Stop()
	return results, stop, nil
}

func interrupted(results []toolkit.Result) int {
	n := 0
	for _, r := range results {
		if r.State == events.StateInterrupted {
			n++
		}
	}
	return n
}

// fixCalls gives every call an id of its own and arguments: the tool
// message must name the same id as the assistant message, the toolkit
// would make up a different one for an empty id, and it refuses to run a
// call whose id it cannot carry (too long, not UTF-8, control
// characters), a failure the model could never fix. An id an earlier
// message of the conversation used is replaced too: some servers number
// calls per reply (call_0 every turn), and whatever keys by call id would
// take two calls for one (a durable store would answer the second with the
// first's stored result; a UI would merge their parts; Anthropic refuses a
// history with a tool_use id twice). A replaced id that the stream's
// events already announced under a new id (renamed, from the streamer)
// takes that id, so that the events name one call from first to last.
// The arguments of the call a cut reply was writing (cut) stay blank when
// they are: it does not run, and the conversation says that the model was
// cut before it wrote them (a durable.Resume must not run it with {}).
func fixCalls(calls []toolkit.Call, earlier []Message, renamed func(wire string) string, cut *truncation) {
	var seen map[string]bool // only for many calls: a few compare in place
	if len(calls) > 8 {
		seen = make(map[string]bool, len(calls))
	}
	used := usedBefore(calls, earlier)
	for i := range calls {
		c := &calls[i]
		if !usableID(c.ID) || taken(calls[:i], seen, c.ID) || used[c.ID] {
			id := renamed(c.ID)
			if id == "" || taken(calls[:i], seen, id) {
				id = newCallID()
			}
			c.ID = id
		}
		if seen != nil {
			seen[c.ID] = true
		}
		if len(bytes.TrimSpace(c.Args)) == 0 && (cut == nil || cut.index != i) {
			c.Args = json.RawMessage("{}")
		}
	}
}

// usedBefore returns the ids of calls that a call of an earlier message
// already has, or nil when none does (the usual case: no allocation).
func usedBefore(calls []toolkit.Call, earlier []Message) map[string]bool {
	var used map[string]bool
	for _, m := range earlier {
		for _, old := range m.Calls {
			for _, c := range calls {
				if c.ID == old.ID && c.ID != "" {
					if used == nil {
						used = map[string]bool{}
					}
					used[c.ID] = true
				}
			}
		}
	}
	return used
}

// usableID reports whether the toolkit runs a call with id as it is
// (toolkit.MaxCallIDLen, UTF-8, no control characters).
func usableID(id string) bool {
	if id == "" || len(id) > toolkit.MaxCallIDLen || !utf8.ValidString(id) {
		return false
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

func taken(before []toolkit.Call, seen map[string]bool, id string) bool {
	if seen != nil {
		return seen[id]
	}
	for _, c := range before {
		if c.ID == id {
			return true
		}
	}
	return false
}

// newCallID returns a fresh call id ("call_" and 24 hex digits), for
// adapters whose provider sent none.
func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// stopAnswer is the answer of a run the toolkit stopped: for a
// return-direct batch the results themselves, in call order; otherwise
// what stopped it.
func stopAnswer(s toolkit.Stop, results []toolkit.Result) string {
	if s.Reason == toolkit.StopReturnDirect {
		texts := make([]string, 0, len(results))
		for _, r := range results {
			if t := strings.TrimSpace(r.Text()); t != "" {
				texts = append(texts, t)
			}
		}
		return strings.Join(texts, "\n\n")
	}
	if s.Detail != "" {
		return s.Detail
	}
	return fmt.Sprintf("(the run was stopped: %s)", s.Reason)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
