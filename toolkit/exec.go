package toolkit

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/stream"
)

type callKey struct{}

// CallInfoFrom returns the identity of the call running with ctx, for tools
// and interceptors.
func CallInfoFrom(ctx context.Context) (CallInfo, bool) {
	c, ok := ctx.Value(callKey{}).(*call)
	if !ok {
		return CallInfo{}, false
	}
	return CallInfo{Session: c.batch.sess.id, CallID: c.call.ID, Tool: c.call.Name, Agent: c.batch.agent}, true
}

// call is the engine's state for one call of a batch: who it is, where it
// runs, how far it got. Its life is in this file: begin, run, finish,
// abandon. Its other roles are types of their own that it holds: its
// output (output.go), the stream.Sink its tool writes to, and its scope
// (deadline.go), the context its handler runs with (Value answers the
// call's own keys without an allocation).
// Locking: mu guards the fields marked (c.mu) and the whole output, so that
// the call's state and its events change together; the atomics need no
// lock, and the rest is set before the call runs (exe and ic: before any
// interceptor or handler does).
type call struct {
	*scope // the stage's scope, the call's context; c.cur under c.mu is where it runs now

	batch  *Batch
	stage  *stage
	tool   *Tool // the registered or resolved tool; nil for an unknown one
	exe    *Tool // the tool that runs: tool, or the variant the visibility resolved (c.mu once interceptors run: an Unknown one may alias)
	preErr error // why the call fails before running, if it does (*decided: a batch hook decided it)
	call   Call

	timeout  time.Duration
	index    int32       // in the batch
	claimed  atomic.Bool // a runner took the call, or it was finished waiting
	counts   atomic.Bool // it counts against the parallelism cap (stage.go)
	inline   bool        // executed by the run's driver
	running  bool        // c.mu
	approved bool        // a batch hook approved the call
	direct   bool        // it succeeded on a return-direct tool (c.mu, set when final)

	args prepared // the arguments the handler receives (c.mu once interceptors run)
	ic   *chained // set when interceptors wrap the call (setChained, under c.mu)
	side *aside   // set for a traced call, one that may wait outside and one interceptors wrap, before the handler or an interceptor runs (c.mu)

	mu      sync.Mutex
	cur     *scope    // the scope the call runs on now; it changes on resume (c.mu)
	started time.Time // (c.mu)
	out     output
}

// aside is what only some calls need, in one allocation, so that every
// call stays small: a traced call's trace and the context the tracer gave
// it, the channel of a call that waits outside the process and why a
// suspended call waits (external.go).
type aside struct {
	t   callTrace       // nil when the call is not traced
	ctx context.Context // the tracer's context, set with t
	ext chan extResult  // made when the call first waits outside

	waiting string // why the call is suspended now (Invocation.Waiting), "" when it is not
}

// chained is what only a call wrapped by interceptors needs, in one
// allocation: the invocation they share, the arguments as they were handed
// to them, their delta filters and call locals.
type chained struct {
	inv      Invocation
	argsJSON json.RawMessage
	ran      *ranArgs        // set once an interceptor changed the arguments the tool runs with (under c.mu)
	filt     filtering       // the output's stream filters (under c.mu)
	locals   localStore      // call locals (local.go), dropped when the chain returns
	onWait   []*func(string) // Invocation.OnWait hooks (under c.mu; replaced, never changed in place)
	side     aside           // the call's aside when it had none (setChained)
}

// parallel reports whether the call may overlap its neighbours. Calls that
// fail before running never touch anything, so they do not end a stage.
func (c *call) parallel() bool {
	if c.preErr != nil {
		return true
	}
	if c.tool == nil {
		// A resolver may supply any tool at call time: the call runs alone.
		return c.batch.tk.opts.resolver == nil
	}
	return c.tool.spec.ConcurrencySafe
}

// exec runs the call from its start to its result: the start event, the
// visibility's say, the arguments, the interceptors around the tool. It
// reports false only when the call was abandoned (reported while its
// handler still ran): the caller is then a goroutine that came back late
// and must not touch the batch again.
func (c *call) exec() bool {
	if !c.begin() {
		return true
	}
	if c.preErr != nil {
		if d, ok := c.preErr.(*decided); ok { // a batch hook or WithOutcome gave the call its outcome
			c.out.em.Init(&c.out, c.out.observed())
			return c.finishOutcome(d.out)
		}
		return c.finish(preState(c.preErr), nil, c.preErr)
	}
	if c.tool == nil {
		return c.execUnknown()
	}
	c.exe = c.tool
	if v := c.batch.vis; v != nil {
		t, err := c.runsAs(v, c.tool)
		if err != nil {
			return c.finish(events.StateError, nil, err)
		}
		c.exe = t
	}
	// Every interceptor sees the arguments the handler will receive: they
	// are prepared (unwrapped, presets, nulls, defaults, validated) first.
	args, err := c.exe.prepare(c.call.Args)
	if err != nil {
		return c.finish(events.StateError, nil, err)
	}
	c.args = args
	c.out.em.Init(&c.out, c.out.observed())
	chain := c.batch.tk.ics.Load()
	if !chain.wraps {
		return c.finishOutcome(c.core(c, nil)) // no interceptors: no chain to build
	}
	argsJSON := args.bytes()
	ic := &chained{inv: Invocation{Session: c.batch.sess.id, Call: c.call, Tool: c.exe, c: c}, argsJSON: argsJSON}
	ic.inv.Call.Args = argsJSON
	c.setChained(ic)
	return c.finishOutcome(c.runChain(c.batch.tk.chainFor(c.tool)))
}

// setChained publishes the call's interceptor state under c.mu: the clock
// may abandon the call (and read it, in finish) while an interceptor that
// ignores its context holds the goroutine that set it. An interceptor may
// suspend the call, which needs an aside: it is set now, before any
// interceptor runs, because the call's context reads c.side without the
// lock (from any goroutine an interceptor or the handler starts); set
// later, it would race with them. It costs no allocation of its own.
func (c *call) setChained(ic *chained) {
	c.mu.Lock()
	c.ic, c.out.filters = ic, &ic.filt
	if c.side == nil {
		c.side = &ic.side
	}
	c.mu.Unlock()
}

// runChain runs the call's interceptor chain. An interceptor that panics
// (the handler's own panics are caught in invoke) costs its call a
// *PanicError result, not the process.
func (c *call) runChain(h Handler) (out Outcome) {
	defer func() {
		if v := recover(); v != nil {
			out = Failure(events.StateError, c.panicked("an interceptor", v))
		}
		c.ic.locals.clear()
	}()
	return h(c, &c.ic.inv)
}

// runsAs asks the visibility which tool a call to t runs as: t, a variant
// of it, or an error that refuses the call (ErrUnavailable with the
// visibility's words, or a tool of another name, which it may not give).
func (c *call) runsAs(v Visibility, t *Tool) (*Tool, error) {
	rt, err := c.visResolve(v, t)
	if err != nil {
		return nil, &callError{kind: ErrUnavailable, cause: err, msg: err.Error()}
	}
	if rt == nil || rt == t {
		return t, nil
	}
	if rt.spec.Name != t.spec.Name {
		return nil, fmt.Errorf("toolkit: the visibility resolved tool %q to a tool named %q", t.spec.Name, rt.spec.Name)
	}
	return rt, nil
}

// visResolve asks the visibility which tool the call runs as; a panic in it
// refuses the call like an error would.
func (c *call) visResolve(v Visibility, t *Tool) (rt *Tool, err error) {
	defer func() {
		if p := recover(); p != nil {
			rt, err = nil, c.panicked("the visibility", p)
		}
	}()
	return v.Resolve(c, c.batch.sess, t)
}

// panicked logs a panic that code around the handler (where) raised for the
// call and returns the error the call fails with.
func (c *call) panicked(where string, v any) error {
	stack := debug.Stack()
	c.batch.tk.log.Error().Str("tool", c.call.Name).Str("call", c.call.ID).Str("in", where).
		Interface("panic", v).Bytes("stack", stack).Msg("toolstream: panic around a tool")
	return &PanicError{Tool: c.call.Name, Value: v, Stack: stack, In: where}
}

// begin starts the call: the start event goes out. It reports false when
// the deadline passed or the batch was cancelled between the slot and here:
// the call is then finished without starting. A call that runs nothing (it
// fails before running, or its outcome was decided: preErr) has nothing to
// time out: past its deadline it still starts, and exec ends it with its
// own outcome.
func (c *call) begin() bool {
	c.mu.Lock()
	if c.Err() != nil {
		if timedOut := c.cur.timedOut(); c.preErr == nil || !timedOut {
			c.started = time.Time{} // it never started
			c.mu.Unlock()
			if timedOut {
				c.finish(events.StateTimeout, nil, c.timedOutWaiting("before it could start"))
			} else {
				c.finish(events.StateInterrupted, nil, c.batch.notStarted(c))
			}
			return false
		}
	}
	if c.started.IsZero() {
		c.started = time.Now()
	}
	if c.tool == nil || c.tool.spec.External {
		c.side = &aside{} // it may wait outside (an unknown call may be aliased to an external tool)
	}
	c.startTrace()
	c.running = true
	if c.out.emits() {
		ev, body := newEvent[events.Start](&c.out, events.TypeStart)
		body.Args, body.Index = c.call.Args, int(c.index)
		ev.Start = body
		c.out.dispatch(ev, nil)
	}
	c.mu.Unlock()
	return true
}

// runCore is the center of every interceptor chain. It is a plain function,
// not a method value, so that a chain built once serves every call.
func runCore(ctx context.Context, inv *Invocation) Outcome { return inv.c.core(ctx, inv) }

// core runs the tool itself, inside the interceptors (inv is nil without
// any). It may run several times for one call (a retry); each run is a new
// attempt that starts the content over, and only the latest attempt may
// write (output.go): an attempt an interceptor gave up on cannot leak into
// the one after it.
func (c *call) core(ctx context.Context, inv *Invocation) Outcome {
	n := c.out.newAttempt()
	if t := c.trace(); t != nil {
		t.Attempt(n)
	}
	if ctx.Err() != nil {
		state, err := c.ctxFailure(ctx, nil)
		return c.out.outcome(n, state, events.Part{}, nil, err)
	}
	exe, args, err := c.argsFor(n, inv)
	if err != nil {
		return c.out.outcome(n, events.StateError, events.Part{}, nil, err)
	}
	if exe.spec.External {
		return c.waitExternal(ctx, n)
	}
	hctx, em := ctx, &c.out.em // the first attempt's emitter is the call's own (call.Value)
	if n > 1 {
		em = stream.NewEmitter(&attemptSink{o: &c.out, n: n}, c.out.em.Listening())
		hctx = stream.NewContext(ctx, em)
	} else if stream.From(ctx) != &c.out.em { // an interceptor's context not derived from the call's
		hctx = stream.NewContext(ctx, &c.out.em)
	}
	one, parts, err := c.invoke(hctx, exe, args)
	em.Flush() // the start of a character a last Write cut, before what the handler returned
	switch {
	case err == nil:
		out := c.out.outcome(n, events.StateSuccess, one, parts, nil)
		if c.exe.typed != nil && len(parts) == 0 && one.IsEmpty() {
			// A typed tool that returned nothing (a nil pointer or map)
			// has no structured result.
			return out
		}
		return c.checkOutput(out)
	case isPanic(err):
		return c.out.outcome(n, events.StateError, events.Part{}, nil, err)
	case ctx.Err() != nil:
		state, cerr := c.ctxFailure(ctx, err)
		return c.out.outcome(n, state, one, parts, cerr)
	default:
		return c.out.outcome(n, events.StateError, one, parts, err)
	}
}

// checkOutput checks a successful outcome's structured result against the
// output schema of the tool the call runs (a handler's, or an external
// tool's as Session.Submit gave it), as the call's stream filters let it
// through. It is checked inside the interceptors: they see, and may
// reshape, a result that conforms or the failure that says it did not. A
// raw tool (an external one too) that declared a schema must give one.
func (c *call) checkOutput(out Outcome) Outcome {
	o := c.exe.output
	if o == nil || out.State != events.StateSuccess || out.Content == nil {
		return out
	}
	if err := o.check(c.call.Name, out.Content, c.exe.typed != nil); err != nil {
		return Failure(events.StateError, err)
	}
	return out
}

// argsFor returns the tool attempt n runs and its arguments. Arguments an
// interceptor changed are prepared and checked again (and kept for the
// attempts after it); so are those of a retried typed tool, whose input
// belongs to one run of its handler.
func (c *call) argsFor(n int, inv *Invocation) (*Tool, prepared, error) {
	if inv == nil {
		return c.exe, c.args, nil
	}
	c.mu.Lock()
	exe, args, prev, due := c.exe, c.args, c.ic.argsJSON, c.ic.ran != nil && c.ic.ran.due
	c.mu.Unlock()
	if inv.Tool != exe {
		return exe, prepared{}, fmt.Errorf("toolkit: an interceptor changed the tool of a call to %q; only a call to an unknown tool can be pointed at another (see Interceptor.Unknown)", c.call.Name)
	}
	changed := !sameSlice(inv.Call.Args, prev)
	if !changed && (n == 1 || exe.typed == nil) {
		if due {
			c.noteRan(exe, args.bytes(), prev)
		}
		return exe, args, nil
	}
	args, err := exe.prepare(inv.Call.Args)
	if err != nil {
		return exe, prepared{}, err
	}
	if changed {
		c.mu.Lock()
		c.args, c.ic.argsJSON = args, inv.Call.Args
		c.mu.Unlock()
	}
	if changed || due {
		c.noteRan(exe, args.bytes(), prev)
	}
	return exe, args, nil
}

// invoke calls the handler, turning a panic into a *PanicError.
func (c *call) invoke(ctx context.Context, exe *Tool, args prepared) (one events.Part, parts []events.Part, err error) {
	defer func() {
		if v := recover(); v != nil {
			stack := debug.Stack()
			c.batch.tk.log.Error().Str("tool", c.call.Name).Str("call", c.call.ID).
				Interface("panic", v).Bytes("stack", stack).Msg("toolstream: tool panicked")
			one, parts, err = events.Part{}, nil, &PanicError{Tool: c.call.Name, Value: v, Stack: stack}
		}
	}()
	return exe.invoke(ctx, args)
}

// sameSlice reports whether a is b (the same array and length, not merely
// equal contents).
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// abandon reports a running call whose context ended and whose handler did
// not return within the grace period. The handler's goroutine is left to
// finish on its own; its later writes are refused. It reports whether it
// finished the call.
//
// A call that waits outside the process is abandoned too: the engine's own
// wait ends with the context, so what holds it is code around the wait (an
// interceptor, an OnWait hook). If it is registered for Session.Submit, it
// is taken out of the session first and its wait handed the ending, as
// Session.Close does: no Submit succeeds for a call reported already, and
// the wait, when its goroutine gets there, ends at once.
func (c *call) abandon() bool {
	c.mu.Lock()
	running := c.running && !c.out.finished
	c.mu.Unlock()
	if !running {
		return false
	}
	state, err := c.ctxFailure(c.currentScope(), nil)
	c.endExternalWait(state, err)
	return c.finish(state, nil, err)
}

// currentScope returns the scope the call runs on now.
func (c *call) currentScope() *scope {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}

// startedAt returns when the call started.
func (c *call) startedAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started
}

// finish makes the call's result final with an ending the engine decided
// (the call never started, failed before running, or was abandoned): parts
// and the failure's message become the last deltas. Only the first ending
// of a call counts; finish reports whether this one did.
func (c *call) finish(state events.State, parts []events.Part, err error) bool {
	c.mu.Lock()
	if c.out.finished {
		c.mu.Unlock()
		return false
	}
	c.out.addLast(state, events.Part{}, parts, err)
	c.out.flushFilters()
	if c.out.broken() != nil {
		state, err = c.out.withhold() // an ending the engine decided fails closed too
	}
	c.complete(state, err)
	return true
}

// finishOutcome makes the outcome of the tool (through its interceptors)
// the call's result. When the interceptors replaced the content, the deltas
// start over (a reset delta, then the new content), so that they still add
// up to the result. It reports whether this ending counted.
func (c *call) finishOutcome(out Outcome) bool {
	c.mu.Lock()
	if c.out.finished {
		c.mu.Unlock()
		return false
	}
	c.out.replace(out.Content)
	if c.out.broken() != nil {
		out.State, out.Err = c.out.withhold()
	}
	state := out.State
	if state == "" {
		state = events.StateSuccess
	}
	c.direct = state == events.StateSuccess && c.exe != nil && c.exe.spec.ReturnDirect && answers(c.out.content.parts())
	c.complete(state, out.Err)
	return true
}

// answers reports whether content can be a final answer for the user: it
// holds something besides blank text. An empty return-direct result goes
// back to the model, which can do better than show the user nothing.
func answers(content []events.Part) bool {
	for _, p := range content {
		if p.Type != events.PartText || strings.TrimSpace(p.Text) != "" {
			return true
		}
	}
	return false
}

// complete emits the result event and hands the result to the batch. c.mu
// must be held; it is released.
func (c *call) complete(state events.State, err error) {
	if c.started.IsZero() {
		c.startTrace() // a call that never started is traced all the same
	}
	res := c.out.result(state, err, c.started)
	c.running = false
	c.mu.Unlock()
	c.logResult(&res)
	c.batch.complete(c, res)
}

func (c *call) logResult(res *Result) {
	log := &c.batch.tk.log
	e := log.Debug()
	if res.IsError() {
		e = log.Info()
	}
	if !e.Enabled() {
		return
	}
	e.Str("session", c.batch.sess.id).Str("run", c.batch.ID()).Str("call", c.call.ID).Str("tool", c.call.Name).
		Str("state", string(res.State)).Dur("duration", res.Duration).Err(res.Err).Msg("toolstream: call finished")
}

// decide gives the call its outcome without running it, unless it is
// malformed (a bad or duplicate id), which keeps its own failure.
func (c *call) decide(out Outcome) {
	if _, malformed := c.preErr.(*callError); malformed {
		return
	}
	if out.State == "" {
		out.State = events.StateSuccess
	}
	c.preErr = &decided{out: out}
}

// decided is the outcome a batch hook or the caller ([WithOutcome]) gave a
// call, kept as its preErr: like a call that fails before running, it
// touches nothing and runs in any stage.
type decided struct{ out Outcome }

func (d *decided) Error() string { return "decided without running: " + d.out.Text() }
