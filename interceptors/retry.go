package interceptors

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// Defaults of [Retry].
const (
	defaultRetryAttempts = 3
	defaultRetryInitial  = 200 * time.Millisecond
	defaultRetryMax      = 10 * time.Second
	defaultRetryFactor   = 2.0
)

// MetaAttempts is the result metadata key under which [Retry] records how
// many attempts it made.
const MetaAttempts = "attempts"

// RetryOption configures [Retry].
type RetryOption func(*retryConfig)

type retryConfig struct {
	attempts       int
	initial, limit time.Duration
	factor         float64
	jitter         bool
	retryIf        func(toolkit.Outcome) bool
	sleep          func(ctx context.Context, d time.Duration) error
}

// RetryMaxAttempts sets how many times a call may run in total, the first
// attempt included (default 3). 1 means no retry; values below 1 mean 1.
func RetryMaxAttempts(n int) RetryOption {
	return func(c *retryConfig) { c.attempts = max(n, 1) }
}

// RetryBackoff sets the wait before the first retry (default 200ms) and the
// cap on every wait (default 10s). A cap below initial is raised to it.
func RetryBackoff(initial, maxWait time.Duration) RetryOption {
	return func(c *retryConfig) {
		c.initial = max(initial, 0)
		c.limit = max(maxWait, c.initial)
	}
}

// RetryFactor sets the growth of the wait from one retry to the next
// (default 2). Values below 1 mean 1 (a constant wait).
func RetryFactor(f float64) RetryOption {
	return func(c *retryConfig) {
		if math.IsNaN(f) || f < 1 {
			f = 1
		}
		c.factor = f
	}
}

// RetryJitter switches jitter on or off (default on). With jitter each wait
// is drawn from [d/2, d), where d is the capped exponential wait, so it
// never exceeds the cap.
func RetryJitter(on bool) RetryOption { return func(c *retryConfig) { c.jitter = on } }

// RetryIf replaces the default choice of which failures to retry (see
// [Retry]). f is asked only about error-state outcomes; a call whose
// context has ended is never retried, whatever f says.
func RetryIf(f func(toolkit.Outcome) bool) RetryOption {
	return func(c *retryConfig) { c.retryIf = f }
}

// retrySleep replaces how Retry waits between attempts (tests: see
// export_api_test.go). f must return early with an error when ctx ends;
// an error stops the retries.
func retrySleep(f func(ctx context.Context, d time.Duration) error) RetryOption {
	return func(c *retryConfig) {
		if f != nil {
			c.sleep = f
		}
	}
}

// retryError is the cause of a call that failed on every attempt. It wraps
// the last attempt's cause, so errors.Is and errors.As still find it.
type retryError struct {
	Tool     string
	Attempts int
	Err      error
}

// Error says how many attempts failed and why the last one did.
func (e *retryError) Error() string {
	return fmt.Sprintf("tool %q failed after %d attempts: %v", e.Tool, e.Attempts, e.Err)
}

// Unwrap returns the last attempt's cause.
func (e *retryError) Unwrap() error { return e.Err }

// Retry returns an interceptor (named "retry") that runs a failed call
// again, with exponential backoff: the n-th retry waits
// min(initial*factor^(n-1), max), jittered within that.
//
// By default it retries timeouts and transient errors (see [IsTransient]),
// and never invalid arguments, unknown or unavailable tools, panics, denied
// or interrupted calls. A tool that declares itself not idempotent
// (toolkit.Spec.Idempotent set to false, and not read-only) may have done
// its work in an attempt that timed out or lost its connection, so for it
// only errors the tool marked itself with [Transient] are retried: the
// tool vouches that the attempt had no effect. Tools that declare nothing
// about idempotence are retried as before: installing Retry for them is
// the declaration. [RetryIf] replaces all of this. It stops as soon as the call's context ends, never
// waits after the last attempt, and gives up early when the call's deadline
// would pass during the wait. Interceptors added after Retry run again on
// every attempt: add a [Timeout] after it for a deadline per attempt.
//
// A call that fails every attempt gets the message
// `tool "x" failed after N attempts: <last cause>`; its cause wraps the
// last attempt's, so errors.Is and errors.As find it. The number of attempts is recorded in the
// result's metadata under [MetaAttempts]. What failed attempts streamed is
// dropped from the result.
func Retry(opts ...RetryOption) toolkit.Interceptor {
	cfg := retryConfig{
		attempts: defaultRetryAttempts,
		initial:  defaultRetryInitial,
		limit:    defaultRetryMax,
		factor:   defaultRetryFactor,
		jitter:   true,
		sleep:    retrySleepCtx,
	}
	for _, o := range opts {
		o(&cfg)
	}
	return toolkit.Interceptor{Name: "retry", Intercept: cfg.intercept}
}

func (cfg *retryConfig) intercept(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
	for n := 1; ; n++ {
		out := next(ctx, inv)
		inv.Meta(MetaAttempts, n)
		if !out.State.IsError() || ctx.Err() != nil || !cfg.retryable(inv, out) {
			return out
		}
		if n >= cfg.attempts {
			return retryGiveUp(inv, out, n)
		}
		d := cfg.delay(n)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
			// The next attempt could not start before the deadline.
			return retryGiveUp(inv, out, n)
		}
		if err := cfg.sleep(ctx, d); err != nil || ctx.Err() != nil {
			return out
		}
	}
}

func (cfg *retryConfig) retryable(inv *toolkit.Invocation, out toolkit.Outcome) bool {
	if cfg.retryIf != nil {
		return cfg.retryIf(out)
	}
	if !retrySafe(toolSpec(inv)) {
		// A timeout or a failed request may have done the work: only the
		// tool itself can vouch that an attempt had no effect.
		return retryDefault(out) && out.State == events.StateError && retryMarked(out.Err)
	}
	return retryDefault(out)
}

// retryMarked reports whether err, or an error it wraps, was marked with
// [Transient].
func retryMarked(err error) bool {
	return retryWalk(err, func(e error) bool {
		_, ok := e.(*retryTransient)
		return ok
	})
}

// delay returns the wait after the n-th attempt (n >= 1).
func (cfg *retryConfig) delay(n int) time.Duration {
	d := float64(cfg.initial) * math.Pow(cfg.factor, float64(n-1))
	if math.IsInf(d, 0) || math.IsNaN(d) || d > float64(cfg.limit) {
		d = float64(cfg.limit)
	}
	if cfg.jitter {
		d = d/2 + rand.Float64()*d/2
	}
	return time.Duration(d)
}

// retryGiveUp reports a call whose retries are over. One attempt alone is
// left as it is: nothing was retried.
func retryGiveUp(inv *toolkit.Invocation, out toolkit.Outcome, n int) toolkit.Outcome {
	if n <= 1 {
		return out
	}
	cause := out.Err
	if cause == nil {
		cause = errors.New(out.Text())
	}
	return toolkit.Failure(out.State, &retryError{Tool: inv.Call.Name, Attempts: n, Err: cause})
}

// retryNever lists causes that another attempt cannot fix, beside the
// typed ones (retryNeverTyped).
var retryNever = []error{toolkit.ErrUnavailable, toolkit.ErrInterrupted, toolkit.ErrInvalidCall}

// retryNeverTyped reports whether err is a typed cause that another
// attempt cannot fix: arguments the schema refused, an unknown tool, a
// panic.
func retryNeverTyped(err error) bool {
	if _, ok := errors.AsType[*toolkit.ArgumentError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*toolkit.UnknownToolError](err); ok {
		return true
	}
	_, ok := errors.AsType[*toolkit.PanicError](err)
	return ok
}

// retryDefault is the default choice of outcomes worth another attempt.
func retryDefault(out toolkit.Outcome) bool {
	switch out.State {
	case events.StateError, events.StateTimeout:
	default:
		return false
	}
	if out.Err == nil {
		return false
	}
	for _, e := range retryNever {
		if errors.Is(out.Err, e) {
			return false
		}
	}
	if retryNeverTyped(out.Err) {
		return false
	}
	return out.State == events.StateTimeout || errors.Is(out.Err, toolkit.ErrTimeout) || IsTransient(out.Err)
}

func retrySleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Transient marks err as worth retrying: [IsTransient] reports true for it
// and for errors wrapping it. It returns nil for nil.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &retryTransient{err}
}

type retryTransient struct{ err error }

func (e *retryTransient) Error() string { return e.err.Error() }
func (e *retryTransient) Unwrap() error { return e.err }

// IsTransient reports whether err, or an error it wraps, is marked with
// [Transient] or says it is temporary or a timeout (a Temporary() bool or
// Timeout() bool method that returns true, as net.Error timeouts,
// syscall.ETIMEDOUT and context.DeadlineExceeded have).
func IsTransient(err error) bool {
	return retryWalk(err, func(e error) bool {
		if _, ok := e.(*retryTransient); ok {
			return true
		}
		if t, ok := e.(interface{ Temporary() bool }); ok && t.Temporary() {
			return true
		}
		t, ok := e.(interface{ Timeout() bool })
		return ok && t.Timeout()
	})
}

// retryWalk reports whether f holds for err or any error in its tree.
func retryWalk(err error, f func(error) bool) bool {
	for err != nil {
		if f(err) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if retryWalk(e, f) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}
