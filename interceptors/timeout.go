package interceptors

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/toolstream/toolstream/toolkit"
)

// TimeoutName is the name of the interceptor [Timeout] returns.
const TimeoutName = "timeout"

// DefaultTimeoutGrace is how long [Timeout] waits for a handler past its
// deadline before it reports the call without it.
const DefaultTimeoutGrace = 100 * time.Millisecond

// TimeoutOption configures [Timeout].
type TimeoutOption func(*timeoutConfig)

type timeoutConfig struct {
	def     time.Duration
	perTool map[string]time.Duration
	grace   time.Duration
}

// TimeoutFor sets the deadline of one tool's calls, overriding Timeout's
// d. Zero or a negative value means no deadline of the interceptor's own
// for that tool.
func TimeoutFor(tool string, d time.Duration) TimeoutOption {
	return func(c *timeoutConfig) { c.perTool[tool] = d }
}

// TimeoutGrace sets how long a handler that ignores its context's
// cancellation may run past the deadline before the call is reported as
// timed out without it (default 100ms).
func TimeoutGrace(d time.Duration) TimeoutOption {
	return func(c *timeoutConfig) { c.grace = max(d, 0) }
}

// Timeout returns an interceptor (named "timeout") that gives each pass
// through it a deadline of d, or the one set with [TimeoutFor]: per call,
// or per attempt when added after [Retry]. d <= 0 limits only the tools
// named with TimeoutFor. It works within the engine's own deadline
// (toolkit.Spec.Timeout or the toolkit default), which still bounds the
// whole call.
//
// A call that runs out of time gets state timeout and a cause matching
// both toolkit.ErrTimeout and context.DeadlineExceeded. A handler that
// ignores the cancellation is given the grace period, then left to finish
// on its own goroutine (what it writes afterwards is refused).
//
// Add Timeout after interceptors that wait for people (those that call
// Invocation.Suspend): its deadline would otherwise run during the wait.
func Timeout(d time.Duration, opts ...TimeoutOption) toolkit.Interceptor {
	cfg := timeoutConfig{def: d, perTool: map[string]time.Duration{}, grace: DefaultTimeoutGrace}
	for _, o := range opts {
		o(&cfg)
	}
	ic := toolkit.Interceptor{Name: TimeoutName, Intercept: cfg.intercept}
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
	if d <= 0 {
		return next(ctx, inv)
	}
	tctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	// The rest of the chain runs on its own goroutine, so that a handler
	// ignoring cancellation cannot hold the call. It works on a copy of the
	// invocation: if it is left behind, it must not race with the next
	// attempt on the original.
	cp := *inv
	done := make(chan toolkit.Result, 1)
	go func() { done <- next(tctx, &cp) }()
	select {
	case out := <-done:
		*inv = cp
		return out
	case <-tctx.Done():
	}
	grace := time.NewTimer(cfg.grace)
	defer grace.Stop()
	select {
	case out := <-done:
		*inv = cp
		return out
	case <-grace.C:
	}
	if ctx.Err() != nil {
		return inv.ContextFailure(ctx)
	}
	return toolkit.Failure(toolkit.StateTimeout, &timeoutError{tool: inv.Call.Name, after: d})
}

// timeoutError is the cause of a call that ran past a deadline of an
// interceptor's own.
type timeoutError struct {
	tool  string
	after time.Duration
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("tool %q timed out after %v", e.tool, e.after)
}

func (e *timeoutError) Unwrap() []error {
	return []error{toolkit.ErrTimeout, context.DeadlineExceeded}
}
