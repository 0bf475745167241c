package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/toolstream/toolstream/toolkit"
)

// Hooks steer a run at its timing points (Solon AI's ReActInterceptor,
// Spring AI Alibaba's hooks): each field is optional, and a Loop given no
// Hooks pays nothing for them. Hooks run on the goroutine that called
// Run, one at a time; with several Hooks (WithHooks given more than once)
// each point calls them in the order given, except End, which calls them
// in reverse, like deferred calls. The model call itself is wrapped by
// ModelInterceptors, and each tool call by the toolkit's interceptors.
type Hooks struct {
	// Start is called once the run has begun (its session and
	// conversation passed the checks), before the first model call: the
	// place to load data, put values in ctx or start a span. The context
	// it returns (nil: ctx unchanged) is the run's from then on: model
	// calls, batches, the loop's events and the other hooks get it. An
	// error ends the run before any model call.
	Start func(ctx context.Context, run *RunInfo) (context.Context, error)

	// End is called exactly once per run that has begun, whatever ended
	// it (an answer, a stop, the turn limit, an error, a failed Start, the
	// end of ctx), with the outcome and the error Run returns. Its ctx
	// carries the run's values but not its cancellation, so that it can
	// save what it needs after a cancelled run.
	End func(ctx context.Context, run *RunInfo, out *Outcome, err error)

	// BeforeModel is called before each model call with the request
	// assembled from the stored conversation (what the loop's
	// ContextPolicy sends of it, with one) and the session's tools: it
	// may rewrite req.System, req.Messages and req.Tools for this call
	// only (compression, dynamic instructions, a narrower tool list). The
	// slices share their elements with the conversation: assign new ones
	// rather than changing elements in place. The stored conversation
	// changes only through RunInfo.Replace. An error ends the run.
	BeforeModel func(ctx context.Context, run *RunInfo, req *Request) error

	// ModelFailed is called when a model call fails and the retry policy
	// has attempts left, whether or not the policy would retry err (a
	// context-length error is not retryable, but a tighter request may
	// pass). req is the request as assembled (after BeforeModel): the hook
	// may tighten it for the next attempt. What it returns decides
	// (RetryDecision); with several hooks the strongest decision wins
	// (RetryGiveUp stops asking the others). Not called once ctx has ended.
	ModelFailed func(ctx context.Context, run *RunInfo, req *Request, err error) RetryDecision

	// AfterReply sees each reply whole, before it is recorded and before
	// its calls run (Solon AI's onReasonEnd): it may change reply.Text and
	// edit, add or drop calls. Dropped calls never reach the conversation,
	// so none is left without a result. A call left without a tool name
	// ends the run with an error; a missing, repeated or earlier-used id
	// is replaced, as for the model's own calls. An error ends the run
	// without recording the reply.
	AfterReply func(ctx context.Context, run *RunInfo, reply *Reply) error

	// Eligible decides whether a reply's calls run (Spring AI's
	// ToolExecutionEligibilityPredicate); it is asked for replies with
	// calls, after AfterReply. When one says no, the run ends with
	// EndNotEligible: the reply is not recorded (the conversation stays as
	// it was, valid), Outcome.Answer is its text and Outcome.Pending the
	// assistant message the loop would have added, for a caller that runs
	// the calls itself.
	Eligible func(ctx context.Context, run *RunInfo, reply *Reply) bool

	// BatchStart is called with each turn's batch once its calls are
	// started (Solon AI's onActionStart): a UI's stop button keeps it to
	// call Batch.Cancel, a store saves the conversation
	// (durable.Store.SaveEachTurn). To approve, deny or rewrite the calls before any runs,
	// use AfterReply, or a toolkit.Interceptor's BeforeBatch. The batch
	// hooks are the loop's own rather than the toolkit's: those see every
	// batch of every session, these only this run's, with its RunInfo.
	BatchStart func(ctx context.Context, run *RunInfo, b *toolkit.Batch)

	// CallEnd is called once for every call of a batch with its final
	// result, as each ends (Solon AI's onToolCallEnd): failed, denied,
	// timed-out and interrupted calls included, suspended ones only when
	// they end.
	CallEnd func(ctx context.Context, run *RunInfo, r toolkit.Result)

	// BatchEnd is called once per batch after every call of it is final
	// and recorded (Solon AI's onActionEnd), never while a call still
	// waits for a person or an external answer. stop is the toolkit's
	// decision (toolkit.Batch.Stop; zero Reason: go on): a hook may set it
	// to end the run after this batch. A batch that ended the run with an
	// error still gets its BatchEnd; stop is then ignored.
	BatchEnd func(ctx context.Context, run *RunInfo, results []toolkit.Result, stop *toolkit.Stop)
}

// WithHooks adds timing-point hooks to every run of the loop. Given
// several times, all are called (see Hooks for the order).
func WithHooks(h Hooks) Option {
	return func(l *Loop) { l.hooks = append(l.hooks, h) }
}

// RetryDecision is what a ModelFailed hook decides about a failed model
// call. Larger values are stronger: with several hooks the largest wins.
type RetryDecision uint8

// The decisions of a ModelFailed hook. Every retry counts against the
// RetryPolicy's Attempts; a retry of an error the policy would retry waits
// as the policy says, one it would not retry (the request changed) asks
// again at once.
const (
	// RetryAsPolicy leaves it to the RetryPolicy: retryable errors are
	// asked again (with the request as the hook left it), others end the
	// run.
	RetryAsPolicy RetryDecision = iota
	// RetryRequest asks again with the request as the hook left it, even
	// for an error the policy would not retry.
	RetryRequest
	// RetryReassemble assembles the request again from the stored
	// conversation (which RunInfo.Replace may have changed) and runs the
	// BeforeModel hooks again before asking: the hooks tighten it, for
	// example compressing harder after a context-length error.
	RetryReassemble
	// RetryGiveUp ends the run with the error at once.
	RetryGiveUp
)

// RunInfo is one run as its hooks see it. It is valid during the run's
// hooks only and is not safe for use by other goroutines.
type RunInfo struct {
	sess *toolkit.Session
	conv *Conversation
	turn int
	// open: the last message has calls whose results are not recorded
	// yet (a batch runs), so the conversation cannot be replaced.
	open bool
}

// Session returns the run's session.
func (r *RunInfo) Session() *toolkit.Session { return r.sess }

// Turn returns the turn under way, from 1; 0 before the first (Start).
func (r *RunInfo) Turn() int { return r.turn }

// Conversation returns the stored conversation, which the loop appends to
// as the run goes on. Read it; change it only with Replace.
func (r *RunInfo) Conversation() *Conversation { return r.conv }

// ErrReplace is the cause of Replace's refusals.
var ErrReplace = errors.New("agent: the stored conversation cannot be replaced")

// Replace replaces the stored conversation's system prompt and messages
// (a compression that is to last, a history loaded at Start), keeping a
// copy of msgs. It refuses a conversation that is empty or breaks
// Conversation.Check, and any replacement while a batch runs (BatchStart,
// CallEnd): the conversation then waits for the batch's results. It does
// not change a request already assembled: a BeforeModel hook also sets
// req.Messages to send what it stored.
func (r *RunInfo) Replace(system string, msgs []Message) error {
	if r.open {
		return fmt.Errorf("%w while a batch runs: its calls are waiting for their results", ErrReplace)
	}
	if len(msgs) == 0 {
		return fmt.Errorf("%w with an empty one", ErrReplace)
	}
	c := Conversation{System: system, Messages: msgs}
	if err := c.Check(); err != nil {
		return fmt.Errorf("%w with one that is not valid: %w", ErrReplace, err)
	}
	r.conv.System, r.conv.Messages = system, slices.Clone(msgs)
	return nil
}

// start calls the Start hooks; the first error ends the run.
func (l *Loop) start(ctx context.Context, r *RunInfo) (context.Context, error) {
	for _, h := range l.hooks {
		if h.Start == nil {
			continue
		}
		next, err := h.Start(ctx, r)
		if err != nil {
			return ctx, fmt.Errorf("agent: Start hook: %w", err)
		}
		if next != nil {
			ctx = next
		}
	}
	return ctx, nil
}

// end calls the End hooks, last given first.
func (l *Loop) end(ctx context.Context, r *RunInfo, out *Outcome, err error) {
	ctx = context.WithoutCancel(ctx)
	for i := len(l.hooks) - 1; i >= 0; i-- {
		if f := l.hooks[i].End; f != nil {
			f(ctx, r, out, err)
		}
	}
}

// beforeModel calls the BeforeModel hooks on req.
func (l *Loop) beforeModel(ctx context.Context, r *RunInfo, req *Request) error {
	for _, h := range l.hooks {
		if h.BeforeModel == nil {
			continue
		}
		if err := h.BeforeModel(ctx, r, req); err != nil {
			return fmt.Errorf("BeforeModel hook: %w", err)
		}
	}
	return nil
}

// modelFailed asks the ModelFailed hooks what to do about err.
func (l *Loop) modelFailed(ctx context.Context, r *RunInfo, req *Request, err error) RetryDecision {
	d := RetryAsPolicy
	for _, h := range l.hooks {
		if h.ModelFailed == nil {
			continue
		}
		d = max(d, h.ModelFailed(ctx, r, req, err))
		if d >= RetryGiveUp {
			return RetryGiveUp
		}
	}
	return d
}

// afterReply calls the AfterReply hooks on reply and checks what they
// left: every call named, ids the toolkit and the conversation can carry.
// The call the reply was cut in (cut) is followed by its id.
func (l *Loop) afterReply(ctx context.Context, r *RunInfo, reply *Reply, cut **truncation) error {
	cutID := ""
	if *cut != nil {
		cutID = reply.Calls[(*cut).index].ID
	}
	called := false
	for _, h := range l.hooks {
		if h.AfterReply == nil {
			continue
		}
		called = true
		if err := h.AfterReply(ctx, r, reply); err != nil {
			return fmt.Errorf("AfterReply hook: %w", err)
		}
	}
	if !called {
		return nil
	}
	for i, c := range reply.Calls {
		if c.Name == "" {
			return fmt.Errorf("AfterReply hooks left call %d (id %q) without a tool name", i, c.ID)
		}
	}
	if *cut != nil {
		i := slices.IndexFunc(reply.Calls, func(c toolkit.Call) bool { return c.ID == cutID })
		if i < 0 {
			*cut = nil // dropped
		} else {
			(*cut).index = i
		}
	}
	fixCalls(reply.Calls, r.conv.Messages, func(string) string { return "" }, *cut)
	return nil
}

// eligible reports whether every Eligible hook lets reply's calls run.
func (l *Loop) eligible(ctx context.Context, r *RunInfo, reply *Reply) bool {
	for _, h := range l.hooks {
		if h.Eligible != nil && !h.Eligible(ctx, r, reply) {
			return false
		}
	}
	return true
}

// batchStart, callEnd and batchEnd call the batch hooks.
func (l *Loop) batchStart(ctx context.Context, r *RunInfo, b *toolkit.Batch) {
	for _, h := range l.hooks {
		if h.BatchStart != nil {
			h.BatchStart(ctx, r, b)
		}
	}
}

func (l *Loop) callEnd(ctx context.Context, r *RunInfo, res toolkit.Result) {
	for _, h := range l.hooks {
		if h.CallEnd != nil {
			h.CallEnd(ctx, r, res)
		}
	}
}

// batchEnd returns the stop as the hooks left it.
func (l *Loop) batchEnd(ctx context.Context, r *RunInfo, results []toolkit.Result, stop toolkit.Stop) toolkit.Stop {
	for _, h := range l.hooks {
		if h.BatchEnd != nil {
			h.BatchEnd(ctx, r, results, &stop)
		}
	}
	return stop
}
