package interceptors

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// RateLimitAll is the key of RateLimit's map that sets the rate of every
// tool without an entry of its own (each such tool gets its own limiter).
const RateLimitAll = "*"

// ErrRateLimited is the cause (for errors.Is) of a call refused by
// [RateLimit].
var ErrRateLimited = errors.New("rate limit exceeded")

// RateLimitOption configures [RateLimit].
type RateLimitOption func(*rateConfig)

// RateLimitNoWait makes a call that finds no token fail at once, telling
// the model when to try again, instead of waiting for one.
func RateLimitNoWait() RateLimitOption { return func(c *rateConfig) { c.noWait = true } }

type rateConfig struct {
	burst   int
	noWait  bool
	fixed   map[string]*rateLimiter
	all     rate.Limit
	hasAll  bool
	dynamic sync.Map // tool name -> *rateLimiter, for RateLimitAll
}

// rateLimiter is one tool's token bucket and the queue of calls waiting
// for its tokens. Calls wait their turn in a queue of their own, not with
// reservations of the bucket's: x/time/rate cannot give back a
// reservation that others were made after, so every waiting call that
// gave up (its batch cancelled) would cost the tool a turn for good.
type rateLimiter struct {
	lim    *rate.Limiter
	turn   chan struct{} // holding it: the head of the queue, the only one taking tokens while waiting
	queued atomic.Int64  // calls waiting, the head included
}

func newRateLimiter(l rate.Limit, burst int) *rateLimiter {
	return &rateLimiter{lim: rate.NewLimiter(l, burst), turn: make(chan struct{}, 1)}
}

// until returns how long from now until n tokens are there, at most
// about 292 years.
func (rl *rateLimiter) until(now time.Time, n int64) time.Duration {
	missing := float64(n) - rl.lim.TokensAt(now)
	if missing <= 0 || math.IsNaN(missing) {
		return 0
	}
	if l := float64(rl.lim.Limit()); l > 0 {
		if d := missing / l * float64(time.Second); d < float64(math.MaxInt64) {
			return time.Duration(d)
		}
	}
	return math.MaxInt64
}

// wait waits for a token within ctx, after the calls queued before this
// one. late reports a turn that would come after ctx's deadline: then it
// returns at once.
func (rl *rateLimiter) wait(ctx context.Context) (late bool, err error) {
	ahead := rl.queued.Add(1) - 1
	defer rl.queued.Add(-1)
	dl, hasDL := ctx.Deadline()
	if hasDL && rl.until(time.Now(), 1+ahead) > time.Until(dl) {
		return true, nil
	}
	select {
	case rl.turn <- struct{}{}:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	defer func() { <-rl.turn }()
	for {
		if rl.lim.Allow() {
			return false, nil
		}
		d := max(rl.until(time.Now(), 1), 100*time.Microsecond)
		if hasDL && d > time.Until(dl) {
			return true, nil
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		}
	}
}

// RateLimit returns an interceptor (named "ratelimit") that limits how
// often each tool runs, across all sessions: perTool maps a tool name (or
// [RateLimitAll]) to calls per second (rate.Every(d) for one call every
// d; rate.Inf for no limit; 0 for the first burst and no call after it),
// with bursts of up to burst calls (at least 1). Tools without an entry
// are not limited.
//
// By default a call waits for its turn within its own deadline (the wait
// counts against it), in order of arrival; one that stops waiting (its
// batch cancelled) gives its turn to the next. A call whose turn would
// come after the deadline fails at once with state timeout. With
// [RateLimitNoWait] a call fails at once with state error instead, as does
// a call past the burst of a rate of 0, which has no turn to wait for.
// Both causes match [ErrRateLimited].
func RateLimit(perTool map[string]rate.Limit, burst int, opts ...RateLimitOption) toolkit.Interceptor {
	cfg := &rateConfig{burst: max(burst, 1), fixed: map[string]*rateLimiter{}}
	for _, o := range opts {
		o(cfg)
	}
	for name, l := range perTool {
		if name == RateLimitAll {
			cfg.all, cfg.hasAll = l, true
			continue
		}
		cfg.fixed[name] = newRateLimiter(l, cfg.burst)
	}
	ic := toolkit.Interceptor{Name: "ratelimit", Intercept: cfg.intercept}
	if !cfg.hasAll {
		scopeTo(&ic, slices.Collect(maps.Keys(cfg.fixed)))
	}
	return ic
}

func (cfg *rateConfig) limiter(tool string) *rateLimiter {
	if l, ok := cfg.fixed[tool]; ok {
		return l
	}
	if !cfg.hasAll {
		return nil
	}
	return loadOrNew(&cfg.dynamic, tool, func() *rateLimiter { return newRateLimiter(cfg.all, cfg.burst) })
}

func (cfg *rateConfig) intercept(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
	name := toolName(inv)
	rl := cfg.limiter(name)
	if rl == nil {
		return next(ctx, inv)
	}
	lim := rl.lim
	if lim.Limit() == rate.Inf {
		return next(ctx, inv)
	}
	// A rate of 0 (or less) allows the first burst and no call after it:
	// there is no turn to wait for.
	never := lim.Limit() <= 0
	if cfg.noWait || never {
		if lim.Allow() {
			return next(ctx, inv)
		}
		e := &rateError{tool: name, limit: lim.Limit(), burst: lim.Burst()}
		if !never {
			e.retryIn = max(rl.until(time.Now(), 1), time.Millisecond)
		}
		return toolkit.Failure(events.StateError, e)
	}
	late, err := rl.wait(ctx)
	switch {
	case err != nil:
		return inv.ContextFailure(ctx)
	case late:
		return toolkit.Failure(events.StateTimeout, &rateError{tool: name, limit: lim.Limit(), burst: lim.Burst(), deadline: true})
	}
	return next(ctx, inv)
}

// rateError is the cause of a call refused by RateLimit.
type rateError struct {
	tool     string
	limit    rate.Limit
	burst    int
	retryIn  time.Duration
	deadline bool // the turn would have come after the call's deadline
}

func (e *rateError) Error() string {
	what := fmt.Sprintf("rate limit: %q may run %s (bursts of %d)", e.tool, rateDescribe(e.limit), e.burst)
	switch {
	case e.deadline:
		return what + "; its next turn comes after this call's deadline"
	case e.retryIn > 0:
		return fmt.Sprintf("%s; try again in %v at the earliest, or go on without it", what, e.retryIn.Round(time.Millisecond))
	}
	return what + "; it cannot run now"
}

func (e *rateError) Unwrap() []error {
	if e.deadline {
		return []error{ErrRateLimited, toolkit.ErrTimeout}
	}
	return []error{ErrRateLimited}
}

func rateDescribe(l rate.Limit) string {
	switch {
	case l == rate.Inf:
		return "without limit"
	case l <= 0:
		return "only within its first burst"
	case l >= 1:
		return fmt.Sprintf("%g times per second", float64(l))
	}
	return fmt.Sprintf("once every %v", time.Duration(float64(time.Second)/float64(l)).Round(time.Millisecond))
}
