package interceptors

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/toolstream/toolstream/toolkit"
)

// TimeoutOption configures [Timeout].
type TimeoutOption func(*timeoutConfig)

type timeoutConfig struct {
	def     time.Duration
	perTool map[string]time.Duration
	grace   time.Duration // < 0: the toolkit's cancel grace period
}

// TimeoutFor sets the deadline of one tool's calls, overriding Timeout's
// d. Zero or a negative value means no deadline of the interceptor's own
// for that tool.
func TimeoutFor(tool string, d time.Duration) TimeoutOption {
	return func(c *timeoutConfig) { c.perTool[tool] = d }
}

// TimeoutGrace sets how long a handler that ignores its context's
// cancellation may run past the deadline before the call is reported as
// timed out without it. By default it is the toolkit's cancel grace period
// (toolkit.WithCancelGrace, 250 ms by default), the one the
// engine gives its own deadline.
func TimeoutGrace(d time.Duration) TimeoutOption {
	return func(c *timeoutConfig) { c.grace = max(d, 0) }
}

// Timeout returns an interceptor (named "timeout") that gives each pass
// through it a deadline of d, or the one set with [TimeoutFor]: per call,
// or per attempt when added after [Retry]. d <= 0 limits only the tools
// named with TimeoutFor. The engine keeps the deadline
// (toolkit.Invocation.Within), within its own for the call
// (toolkit.Spec.Timeout or the toolkit default), which still bounds the
// whole call.
//
// A call that runs out of time gets the engine's timeout: state timeout and
// a cause matching both toolkit.ErrTimeout and context.DeadlineExceeded. A
// handler (or an interceptor after Timeout) that ignores the cancellation
// is given the grace period, then left to finish on its own goroutine
// (what it writes afterwards is refused); under Retry, the next attempt
// does not wait for it.
//
// Add Timeout after interceptors that wait for people (those that call
// Invocation.Suspend): its deadline would otherwise run during the wait.
func Timeout(d time.Duration, opts ...TimeoutOption) toolkit.Interceptor {
	cfg := timeoutConfig{def: d, perTool: map[string]time.Duration{}, grace: -1}
	for _, o := range opts {
		o(&cfg)
	}
	ic := toolkit.Interceptor{Name: "timeout", Intercept: cfg.intercept}
	if d <= 0 {
		// Only the listed tools need the interceptor at all.
		scopeTo(&ic, slices.Collect(maps.Keys(cfg.perTool)))
	}
	return ic
}

func (cfg *timeoutConfig) intercept(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
	d, ok := cfg.perTool[toolName(inv)]
	if !ok {
		d = cfg.def
	}
	return inv.Within(ctx, d, cfg.grace, next)
}
