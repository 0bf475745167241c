package toolkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/toolstream/toolstream/events"
)

// A ToolResolver supplies a tool for a call whose name nobody registered,
// when the call's turn comes (Spring AI's ToolCallbackResolver, eino's
// UnknownToolsHandler): a tool loaded on demand, a renamed tool under its
// old name, a remote tool discovered late. It returns nil and no error to
// leave the call unknown (interceptors with Unknown set may still handle
// it, else the model gets the unknown-tool answer), or an error the model
// reads. The tool it returns is not registered: it runs for this call only,
// its arguments prepared and validated against its own schema like any
// call's, through the interceptors that apply to it and the session's
// Visibility. Its name may differ from the call's.
//
// The resolver is asked just as the call's stage begins (so it sees what the
// calls before it did), on a pool goroutine while the batch waits for it.
// A call to an unknown name therefore runs alone in its stage when a
// resolver is installed. Its ctx carries the batch's values and ends when
// the batch is cancelled (Batch.Cancel, Toolkit.Close, the caller's
// context) or at the call's deadline: the stage's start plus the toolkit's
// default timeout ([WithDefaultTimeout]), the time the resolver takes
// counting against the call's own timeout.
//
// The resolver must return when ctx ends. One that does not is given the
// cancel grace period; then the batch goes on without it: the call is
// reported as a timeout (or interrupted, when the batch was cancelled) with
// a message naming the resolver, and what it returns later is ignored. Its
// goroutine is left to return on its own, like a handler abandoned at its
// deadline.
type ToolResolver func(ctx context.Context, s *Session, call Call) (*Tool, error)

// Unknown reports whether the call names a tool that is neither registered
// nor supplied by a resolver: Tool is then a placeholder that has only the
// called name (Spec().Name) and that no handler runs. Only interceptors
// with Unknown set see such calls.
func (inv *Invocation) Unknown() bool { return inv.Tool == nil || inv.Tool.args == nil }

// lastUnknownKey marks the context the innermost Unknown interceptor of an
// unknown call gets; its value is the call's *Invocation.
type lastUnknownKey struct{}

// CannotRun reports whether the call certainly will not run: it is
// [Invocation.Unknown] (no tool is registered under its name and no
// resolver supplied one), and no interceptor inside the one asking may
// answer it or point it at a tool, so next gives the unknown-tool answer.
// ctx is the context the asking interceptor was given. An interceptor
// that would spend something on the call first (a person's approval, a
// quota) can call next at once instead. It is false for a call that may
// run, and for one an interceptor with Unknown set inside the one asking
// may still handle (an alias, an emulation, a proxy), whatever it will do.
func (inv *Invocation) CannotRun(ctx context.Context) bool {
	return inv.Unknown() && ctx.Value(lastUnknownKey{}) == inv
}

// resolve asks the toolkit's resolver for the tool of an unknown call, on a
// pool worker under a guard (guard.go), by the call's deadline: start plus
// the unknown call's timeout.
func (c *call) resolve(r ToolResolver, start time.Time) {
	b := c.batch
	timeout, deadline := b.resolverDeadline(start)
	var res struct {
		tool *Tool
		err  error
	}
	sess, call := b.sess, c.call
	g := b.newGuard(&job{deadline: deadline, run: func(ctx context.Context) func() {
		t, err := askResolver(ctx, r, sess, call)
		return func() { res.tool, res.err = t, err }
	}})
	g.begin()
	b.tk.pool.submit(g)
	g.wait()
	// The guard's state is final (wait saw it change): no lock needed.
	g.close(g.state == guardAbandoned)
	grace := b.tk.opts.cancelGrace
	switch {
	// A timeout's deadline has passed: the stage reports it with this
	// error wherever the call is (stage.expire, call.begin).
	case g.state == guardAbandoned && g.timedOut:
		c.preErr = resolverTimeoutErr(c.call.Name, timeout, grace, nil)
	case g.state == guardAbandoned:
		c.preErr = resolverAbandonedErr(c.call.Name, grace, g.why())
	case res.err != nil && b.err() == nil && errors.Is(g.ctx.Err(), context.DeadlineExceeded):
		c.preErr = resolverTimeoutErr(c.call.Name, timeout, grace, res.err)
	case res.err != nil:
		c.preErr = &callError{kind: ErrUnavailable, cause: res.err,
			msg: fmt.Sprintf("tool %q could not be resolved: %v", truncate(c.call.Name, 80), res.err)}
	case res.tool != nil:
		c.tool = res.tool
	}
}

// askResolver asks r for the tool of call, a panic turned into an error;
// a context already over (its time was over before a worker took it) is
// the answer.
func askResolver(ctx context.Context, r ToolResolver, s *Session, call Call) (t *Tool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	defer func() {
		if v := recover(); v != nil {
			t, err = nil, fmt.Errorf("the tool resolver panicked: %v", v)
		}
	}()
	return r(ctx, s, call)
}

// Messages of calls that never ran because their resolver did not answer
// in time.

func resolverAbandonedErr(name string, grace time.Duration, cause error) error {
	return &callError{kind: ErrInterrupted, cause: cause,
		msg: fmt.Sprintf("tool %q was not run: the run was cancelled (%v) while the tool resolver was looking the tool up, and the resolver did not return within the %v grace period; the call never ran (a ToolResolver must return when its context ends)",
			shownName(name), cause, grace)}
}

func resolverTimeoutErr(name string, timeout, grace time.Duration, resolverErr error) error {
	if resolverErr == nil {
		return &callError{kind: ErrTimeout, cause: context.DeadlineExceeded,
			msg: fmt.Sprintf("tool %q timed out after %v: the tool resolver did not return within that time and the %v grace period; the call never ran (a ToolResolver must return when its context ends)",
				shownName(name), timeout, grace)}
	}
	cause := resolverErr
	if !errors.Is(cause, context.DeadlineExceeded) {
		cause = errors.Join(context.DeadlineExceeded, cause)
	}
	return &callError{kind: ErrTimeout, cause: cause,
		msg: fmt.Sprintf("tool %q timed out after %v while the tool resolver was looking it up (%v); the call never ran",
			shownName(name), timeout, resolverErr)}
}

// placeholderSchema is the input schema a placeholder shows.
var placeholderSchema = json.RawMessage(`{"type":"object"}`)

// placeholder is the Invocation.Tool of an unknown call: a name and
// nothing to run (no argument pass: Unknown tells it by that).
func placeholder(name string) *Tool {
	return &Tool{spec: Spec{Name: name}, params: placeholderSchema}
}

// unknownErr is the friendly answer to an unknown call: the closest names
// among the tools this session can call, and the list of them.
func (c *call) unknownErr() error {
	if c.batch.vis != nil {
		if tools, err := c.batch.sess.Tools(c); err == nil {
			return unknownTool(c.call.Name, tools)
		}
	}
	return unknownTool(c.call.Name, c.batch.tk.reg.Load().order)
}

// execUnknown runs a call to an unknown tool through the interceptors that
// asked to see such calls; without any, it gets the unknown-tool answer at
// once, as it always did.
func (c *call) execUnknown() bool {
	snap := c.batch.tk.ics.Load()
	ph := placeholder(c.call.Name)
	h, wrapped := Handler(unknownCore), false
	for i := len(snap.list) - 1; i >= 0; i-- {
		r := snap.list[i]
		if !r.Unknown || r.Intercept == nil || !r.on.Load() || !r.applies(ph) {
			continue
		}
		ic, next := r.Intercept, h
		if !wrapped {
			// The innermost: its next is the unknown-tool answer, unless
			// it points the call at a tool (CannotRun).
			h = func(ctx context.Context, inv *Invocation) Outcome {
				return ic(context.WithValue(ctx, lastUnknownKey{}, inv), inv, next)
			}
		} else {
			h = func(ctx context.Context, inv *Invocation) Outcome { return ic(ctx, inv, next) }
		}
		wrapped = true
	}
	if !wrapped {
		return c.finish(events.StateError, nil, c.unknownErr())
	}
	c.exe = ph
	c.out.em.Init(&c.out, c.out.observed())
	c.setChained(&chained{inv: Invocation{Session: c.batch.sess.id, Call: c.call, Tool: ph, c: c}, argsJSON: c.call.Args})
	return c.finishOutcome(c.runChain(h))
}

// unknownCore is the centre of an unknown call's chain: the unknown-tool
// answer, unless an interceptor pointed the call at a tool. Then the call
// runs as that tool: the session's Visibility decides, the arguments are
// prepared and validated against its schema, and the interceptors that
// apply to it (but for those the call went through already) wrap it.
func unknownCore(ctx context.Context, inv *Invocation) Outcome {
	c := inv.c
	t := inv.Tool
	if inv.Unknown() {
		return Failure(events.StateError, c.unknownErr())
	}
	if v := c.batch.vis; v != nil {
		rt, err := c.runsAs(v, t)
		if err != nil {
			return Failure(events.StateError, err)
		}
		t = rt
	}
	// An alias that also changed the model's arguments: the tool's first
	// run records what it ran with (the start event has the model's).
	due := !bytes.Equal(inv.Call.Args, c.call.Args)
	args, err := t.prepare(inv.Call.Args)
	if err != nil {
		return Failure(events.StateError, err)
	}
	inv.Tool, inv.Call.Args = t, args.bytes()
	c.mu.Lock()
	c.exe, c.args, c.ic.argsJSON = t, args, inv.Call.Args
	if due {
		c.ic.ran = &ranArgs{due: true}
	}
	c.mu.Unlock()
	return buildChain(c.batch.tk.ics.Load().list, t, true)(ctx, inv)
}
