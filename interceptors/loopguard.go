package interceptors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/toolstream/toolstream/toolkit"
)

// LoopGuardName is the name of the interceptor [LoopGuard] returns.
const LoopGuardName = "loopguard"

// ErrLoop is the cause (for errors.Is) of a call refused by [LoopGuard].
var ErrLoop = errors.New("repeated tool call")

// LoopOption configures [LoopGuard].
type LoopOption func(*loopConfig)

// LoopGuardClock replaces the clock LoopGuard measures its window with,
// for tests.
func LoopGuardClock(now func() time.Time) LoopOption {
	return func(c *loopConfig) {
		if now != nil {
			c.now = now
		}
	}
}

type loopConfig struct {
	n      int
	window time.Duration
	now    func() time.Time
}

// LoopGuard returns an interceptor (named "loopguard") that stops a model
// repeating itself: the n-th call of the same tool with the same arguments
// within window in a session, and every further one, does not run. It gets
// state error and a message telling the model it repeats itself and should
// change its approach; its cause matches [ErrLoop].
//
// Arguments are the same when they are equal as JSON (key order and
// spacing do not matter). Refused calls count too, so a model that keeps
// repeating stays refused until it pauses for a window. n below 2 means 2;
// window <= 0 means the whole session. Another attempt of the same call
// (a retry) is not a repetition.
func LoopGuard(n int, window time.Duration, opts ...LoopOption) toolkit.Interceptor {
	cfg := &loopConfig{n: max(n, 2), window: window, now: time.Now}
	for _, o := range opts {
		o(cfg)
	}
	return toolkit.Interceptor{Name: LoopGuardName, Intercept: cfg.intercept}
}

type loopStateKey struct{ cfg *loopConfig }

// loopState is one session's recent calls, by tool and canonical
// arguments.
type loopState struct {
	mu    sync.Mutex
	calls map[string][]loopEntry
}

type loopEntry struct{ at time.Time }

// loopSeenKey marks, in the call's values, a call this LoopGuard let
// through: a retry passing through again is not a repeat.
type loopSeenKey struct{ cfg *loopConfig }

func (cfg *loopConfig) intercept(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
	if _, ok := inv.CallValues().Load(loopSeenKey{cfg}); ok {
		return next(ctx, inv)
	}
	st := loadOrNew(inv.SessionValues(), loopStateKey{cfg}, func() *loopState {
		return &loopState{calls: map[string][]loopEntry{}}
	})
	key := inv.Call.Name + "\x00" + loopCanonical(inv.Call.Args)
	now := cfg.now()

	st.mu.Lock()
	st.prune(now, cfg.window)
	entries := append(st.calls[key], loopEntry{at: now})
	st.calls[key] = entries
	st.mu.Unlock()

	if count := len(entries); count >= cfg.n {
		return toolkit.Failure(toolkit.StateError, &loopError{tool: inv.Call.Name, count: count, window: cfg.window})
	}
	inv.CallValues().Store(loopSeenKey{cfg}, true)
	return next(ctx, inv)
}

// prune drops calls older than the window, so the state stays as small as
// the window is short.
func (st *loopState) prune(now time.Time, window time.Duration) {
	if window <= 0 {
		return
	}
	cutoff := now.Add(-window)
	for k, es := range st.calls {
		i := 0
		for i < len(es) && !es[i].at.After(cutoff) {
			i++
		}
		switch {
		case i == len(es):
			delete(st.calls, k)
		case i > 0:
			st.calls[k] = append(es[:0:0], es[i:]...)
		}
	}
}

// loopCanonical returns the arguments as compact JSON with sorted keys, or
// as they are when they are not JSON. No arguments is the empty object.
func loopCanonical(args json.RawMessage) string {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return "{}"
	}
	v, err := decodeJSON(trimmed)
	if err != nil {
		return string(args)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(args)
	}
	return string(b)
}

type loopError struct {
	tool   string
	count  int
	window time.Duration
}

func (e *loopError) Error() string {
	within := "in this conversation"
	if e.window > 0 {
		within = fmt.Sprintf("within %v", e.window)
	}
	return fmt.Sprintf("repeated call: you have called %q with the same arguments %d times %s; it was not run again. "+
		"Repeating it will not give a different result: change your approach (other arguments or another tool) or answer with what you have",
		e.tool, e.count, within)
}

func (e *loopError) Is(target error) bool { return target == ErrLoop }
