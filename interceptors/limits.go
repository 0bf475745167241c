package interceptors

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// ErrLimit is the cause (for errors.Is) of a call refused by [CallLimits].
var ErrLimit = errors.New("call limit reached")

// limitError is the cause of a call refused by [CallLimits]: it matches
// [ErrLimit], and its message names the limit.
type limitError struct {
	// Tool is the limited tool, or "" for a limit on all tools together.
	Tool string
	// Scope is what the limit counts in: "turn" ([PerTurn]), "run"
	// ([PerRun]) or "session" ([PerSession]).
	Scope string
	// Limit is how many calls the scope allows.
	Limit int
}

// Error tells the model which limit it reached and what it can do: call
// again in a later turn (a limit per turn), or stop calling the tool.
func (e *limitError) Error() string {
	who, it := "tools", "tools"
	has, total := "have", " in total"
	if e.Tool != "" {
		who, it, has, total = fmt.Sprintf("%q", e.Tool), "it", "has", ""
	}
	advice := fmt.Sprintf("stop calling %s and answer with what you have", it)
	if e.Limit <= 0 {
		return fmt.Sprintf("call limit reached: %s may not run in this %s; %s", who, e.Scope, advice)
	}
	if e.Scope == scopeTurn {
		advice = fmt.Sprintf("call %s again in a later turn if you still need to", it)
	}
	times := "times"
	if e.Limit == 1 {
		times = "time"
	}
	return fmt.Sprintf("call limit reached: %s may run %d %s per %s%s and already %s; %s",
		who, e.Limit, times, e.Scope, total, has, advice)
}

// summary says, for the user, which limit ended the run.
func (e *limitError) summary() string {
	who := "tool calls"
	if e.Tool != "" {
		who = fmt.Sprintf("calls of %q", e.Tool)
	}
	return fmt.Sprintf("the run was stopped: %s are limited to %d per %s", who, e.Limit, e.Scope)
}

// Is makes errors.Is(err, ErrLimit) true.
func (e *limitError) Is(target error) bool { return target == ErrLimit }

// LimitOption configures [CallLimits].
type LimitOption func(*limitConfig)

// The scopes a limit counts in, as its error and the model's message name
// them.
const (
	scopeTurn    = "turn"
	scopeRun     = "run"
	scopeSession = "session"
)

// scopeOrder is the order rules are checked in: the narrowest first, its
// message the more precise.
var scopeOrder = map[string]int{scopeTurn: 0, scopeRun: 1, scopeSession: 2}

type limitRuleKey struct {
	scope string
	tool  string
}

// limitRule is one limit.
type limitRule struct {
	limitRuleKey
	n     int64
	count *toolkit.Local[*atomic.Int64] // the calls counted, per turn, run or session
}

type limitConfig struct {
	set    map[limitRuleKey]int
	rules  []*limitRule               // per-tool rules first: their message is the more precise
	endRun bool                       // a call over a limit also ends the agent loop
	held   *toolkit.Local[*limitHold] // per call: a retry passing through again is not a new call
}

// EndRun makes a call over a limit also end the run (Spring AI Alibaba's
// ToolCallLimitHook with END, Spring AI's THROW): the call is refused as
// usual, the batch's other calls run, and [toolkit.Batch.Stop] then reports
// [toolkit.StopCallLimit] with a message for the user, so the agent loop
// stops instead of asking the model again. Without it (the seed's
// CONTINUE) the refused call tells the model what it may do, and the run
// goes on. It applies to every limit of the CallLimits it is given to: to
// end the run on one limit and go on past another, add two CallLimits, one
// renamed (its Name field).
func EndRun() LimitOption { return func(c *limitConfig) { c.endRun = true } }

// PerSession limits the calls in a session, across its runs (Spring AI
// Alibaba's threadLimit): of all tools together, or, given tools, of each
// of them. A negative n removes the limit; 0 allows no call.
func PerSession(n int, tools ...string) LimitOption { return limitSet(scopeSession, n, tools) }

// PerRun limits the calls in one run (runLimit): one agent.Loop.Run, from
// the user's message to the answer, over all its turns; of all tools
// together, or, given tools, of each of them. A batch started outside a run
// (a plain Session.Run, without [toolkit.Session.BeginRun]) is a run of its
// own.
func PerRun(n int, tools ...string) LimitOption { return limitSet(scopeRun, n, tools) }

// PerTurn limits the calls in one batch: the calls of one model reply. The
// model told that a call went over it is invited to make it in a later
// turn.
func PerTurn(n int, tools ...string) LimitOption { return limitSet(scopeTurn, n, tools) }

func limitSet(scope string, n int, tools []string) LimitOption {
	return func(c *limitConfig) {
		if len(tools) == 0 {
			c.set[limitRuleKey{scope, ""}] = n
		}
		for _, tool := range tools {
			c.set[limitRuleKey{scope, tool}] = n
		}
	}
}

// CallLimits returns an interceptor (named "limits") that caps how many
// calls run per turn, per run and per session, over all tools and per tool.
// A call over a limit does not run: it gets state error, a [*limitError]
// cause and a message naming the limit and what the model may do; with
// [EndRun] the run ends too.
//
// Only calls that went through count: a refused call does not, nor one
// that an interceptor added after CallLimits refused before the tool ran
// (a failure with no attempt). Calls of a parallel batch never overshoot,
// and a retried call counts once wherever Retry is (also while an attempt
// a Timeout gave up on is still running).
func CallLimits(opts ...LimitOption) toolkit.Interceptor {
	cfg := &limitConfig{set: map[limitRuleKey]int{}, held: toolkit.NewCallLocal[*limitHold]()}
	for _, o := range opts {
		o(cfg)
	}
	all := false
	var tools []string
	for k, n := range cfg.set {
		if n < 0 {
			continue
		}
		r := &limitRule{limitRuleKey: k, n: int64(n)}
		switch k.scope {
		case scopeTurn:
			r.count = toolkit.NewBatchLocal[*atomic.Int64]()
		case scopeRun:
			r.count = toolkit.NewRunLocal[*atomic.Int64]()
		default:
			r.count = toolkit.NewSessionLocal[*atomic.Int64]()
		}
		cfg.rules = append(cfg.rules, r)
		all = all || k.tool == ""
		tools = append(tools, k.tool)
	}
	slices.SortFunc(cfg.rules, func(a, b *limitRule) int {
		// Per tool before overall, narrow before wide: a stable, precise order.
		switch {
		case (a.tool == "") != (b.tool == ""):
			if a.tool != "" {
				return -1
			}
			return 1
		case a.scope != b.scope:
			return cmp.Compare(scopeOrder[a.scope], scopeOrder[b.scope])
		}
		return cmp.Compare(a.tool, b.tool)
	})
	ic := toolkit.Interceptor{Name: "limits", Intercept: cfg.intercept}
	if !all {
		scopeTo(&ic, tools)
	}
	return ic
}

// limitHold is the place a call holds under each of its limits. It is
// taken when the call first passes and kept by every later pass (a
// retry), even one that comes while an attempt left behind by a timeout
// is still inside: it is given back only when no pass relying on it is
// left and no attempt of the tool started. A pass after that takes a
// place again.
type limitHold struct {
	mu       sync.Mutex
	held     []*atomic.Int64
	users    int  // passes inside next relying on the place
	ran      bool // an attempt of the tool started
	released bool // the place was given back: a later pass takes a new one
}

func (cfg *limitConfig) intercept(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
	h := cfg.held.LoadOrInit(inv, func() *limitHold { return &limitHold{released: true} })
	h.mu.Lock() // a retry passing meanwhile waits for the place to be taken
	if !h.released {
		h.users++
		h.mu.Unlock()
		return cfg.run(ctx, inv, next, h)
	}
	// No place held (the first pass, or one after the place was given
	// back): take one. No pass is inside relying on the old one.
	h.released, h.ran = false, false
	for _, r := range cfg.rules {
		if r.tool != "" && r.tool != toolName(inv) {
			continue
		}
		c := r.count.LoadOrInit(inv, func() *atomic.Int64 { return new(atomic.Int64) })
		if !limitReserve(c, r.n) {
			h.release()
			h.mu.Unlock()
			le := &limitError{Tool: r.tool, Scope: r.scope, Limit: int(r.n)}
			if cfg.endRun {
				inv.StopLoop(toolkit.StopCallLimit, le.summary())
			}
			return toolkit.Failure(events.StateError, le)
		}
		h.held = append(h.held, c)
	}
	h.users = 1
	h.mu.Unlock()
	return cfg.run(ctx, inv, next, h)
}

// run runs the rest of the chain on the place h, and gives the place back
// if this was its last pass and the tool never started (refused further
// in).
func (cfg *limitConfig) run(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler, h *limitHold) toolkit.Outcome {
	before := inv.Attempts()
	out := next(ctx, inv)
	h.mu.Lock()
	h.users--
	h.ran = h.ran || inv.Attempts() != before || !out.State.IsError()
	if h.users == 0 && !h.ran {
		h.release()
	}
	h.mu.Unlock()
	return out
}

// release gives the places back. h.mu must be held.
func (h *limitHold) release() {
	for _, c := range h.held {
		c.Add(-1)
	}
	h.held, h.released = nil, true
}

// limitReserve takes one of n places on c, if one is left.
func limitReserve(c *atomic.Int64, n int64) bool {
	for {
		v := c.Load()
		if v >= n {
			return false
		}
		if c.CompareAndSwap(v, v+1) {
			return true
		}
	}
}
