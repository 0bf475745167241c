package toolkit

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/toolstream/toolstream/events"
)

// Interceptor wraps each call of the tools it applies to: it may change the
// call's arguments, call next zero or more times (a retry runs every
// interceptor inside it again), and change or replace the outcome.
//
// Interceptors run by Order, lowest outermost; those of equal Order run in
// the order they were added, the first added outermost. They run only for calls that reached a tool with valid
// arguments (not for malformed calls, calls a Visibility refused or
// arguments the tool's schema refused; unknown tools only for interceptors
// that ask to see them, see Unknown), and inside the call's deadline. Every interceptor sees in Invocation.Call.Args exactly the
// arguments the handler will receive: unwrapped if the model encoded them
// twice, with presets applied, optional nulls dropped, defaults filled in
// and validated.
type Interceptor struct {
	// Name identifies the interceptor. Names are unique in a toolkit: Use
	// refuses a second interceptor of a name in use; ReplaceInterceptor and
	// SetInterceptors replace on purpose.
	Name string
	// Order places the interceptor in the chain: lower runs further out
	// (sees the call first and the outcome last). Zero for most; for
	// example a permission check at -100 stays outside a retry added before
	// it. Equal orders keep the order of adding.
	Order int
	// Tools limits the interceptor to these tools; Match, if set, must also
	// accept the tool. Both empty: every tool. Match is asked when a tool's
	// chain is built (not at every call), so it must depend on the tool only.
	Tools []string
	Match func(t *Tool) bool
	// Intercept does the work.
	Intercept func(ctx context.Context, inv *Invocation, next Handler) Outcome

	// Unknown makes the interceptor also wrap calls to tools that are not
	// registered (and that no ToolResolver supplied): Invocation.Unknown
	// reports them, Invocation.Tool is a placeholder with only the name,
	// Call.Args are the model's own, and next gives the unknown-tool
	// answer. Such an interceptor may answer the call itself (emulate a
	// missing tool) or set Invocation.Tool to a tool and call next (alias a
	// renamed one): the arguments are then prepared and validated against
	// that tool, and the call goes on through the other interceptors that
	// apply to it. For unknown calls, the interceptors with Unknown run
	// first, in their order. Tools and Match filter unknown calls too (by
	// the called name, and on the placeholder).
	Unknown bool

	// BeforeBatch and AfterBatch see whole batches (Solon AI's
	// onActionStart and onActionEnd, AgentScope's pre- and post-acting
	// hooks), where Intercept sees one call at a time: a rule about the
	// batch as a whole lives here (approve it once, refuse a destructive
	// call that comes with others, rewrite calls, summarise). They run in
	// the interceptors' order, on the goroutine that drives the batch
	// (Session.Run's caller, or a pool goroutine for Session.Start), for
	// every batch whatever its tools (Tools and Match filter Intercept
	// only). An interceptor may have any of Intercept, BeforeBatch and
	// AfterBatch; a toolkit whose interceptors have no batch part pays
	// nothing for it.
	//
	// BeforeBatch sees the batch before any call runs and may approve,
	// deny, answer or rewrite its calls (see [BatchPlan]), or wait for a
	// person's decision on the whole batch (BatchPlan.Suspend). ctx ends
	// when the batch is cancelled (Batch.Cancel, Toolkit.Close, the
	// caller's context, and Session.Close once the plan is suspended). It
	// has no deadline: the calls' deadlines start after it returns. It
	// must return when ctx ends: one that does not is given the cancel
	// grace period ([WithCancelGrace]); then the batch ends without it:
	// every call is reported interrupted, with a message naming the
	// interceptor, and whatever it does with the plan afterwards is
	// ignored. Its goroutine is left to return on its own, like a handler
	// abandoned at its deadline: Session.Run, whose caller it runs on,
	// returns only then (with the results that were final on time); Start
	// and Wait return on time.
	BeforeBatch func(ctx context.Context, p *BatchPlan)
	// AfterBatch sees the results in call order once every call is final,
	// before Wait returns and before the batch_end event. It must not
	// change them. ctx carries the batch's values; it does not end with
	// the caller's context (the results are final: one that records them
	// is not cut short by a caller that left), but Batch.Cancel and
	// Toolkit.Close end it. One that has not returned within the cancel
	// grace period after that is left behind: the batch ends without it
	// (the AfterBatch functions after it do not run), and its goroutine
	// returns on its own (Session.Run, whose caller it runs on, returns
	// only then).
	AfterBatch func(ctx context.Context, b *Batch, results []Result)
}

// Handler runs an invocation: the next interceptor, or the tool itself at
// the center.
type Handler func(ctx context.Context, inv *Invocation) Outcome

// Outcome is what a call produced, as interceptors see and shape it: the
// part of a [Result] the engine has not filled yet. It is its own type, not
// a Result, because it is returned through every interceptor of the chain:
// at seven words it is returned in registers, where a Result (nineteen)
// is copied through memory at each level (measured: 17 ns more per
// interceptor, BenchmarkInterceptorChain).
type Outcome struct {
	State events.State
	// Content is the model-visible result: what the tool streamed plus what
	// it returned (and the "Error: ..." line of a failure). Each outcome
	// from next is the interceptor's own copy of the list (the bytes of
	// JSON and binary parts are shared: do not write to them). An
	// interceptor that returns different content replaces it: the engine
	// emits a reset delta and the new content, which goes through the
	// call's delta filters like every delta, so the deltas still add up to
	// the result.
	Content []events.Part
	// Err is the cause of a failure, for errors.Is and errors.As.
	Err error
}

// Text renders the outcome's content as one string.
func (o Outcome) Text() string { return events.ContentText(o.Content) }

// Failure builds the outcome of a failure an interceptor decides on (for
// example a denied call): state, cause, and the "Error: ..." line the
// model reads.
func Failure(state events.State, err error) Outcome {
	return Outcome{State: state, Err: err, Content: []events.Part{events.Text("Error: " + err.Error())}}
}

// Success builds the outcome of a call an interceptor answers itself.
func Success(content ...events.Part) Outcome {
	return Outcome{State: events.StateSuccess, Content: content}
}

// Invocation is one call as interceptors see it.
type Invocation struct {
	// Session is the call's session.
	Session string
	// Call is the call, its Args prepared as the handler will receive them.
	// An interceptor may replace Call.Args: new arguments are prepared and
	// checked against the tool's schema again before the tool runs, and a
	// call whose new arguments are invalid fails without running.
	Call Call
	// Tool is the tool called: for a call to an unknown tool, a
	// placeholder (see Unknown) that an interceptor may replace with the
	// tool to run in its place. Only then may it be changed.
	Tool *Tool

	c *call
}

// Attempts counts how many times the tool itself has started for this
// call so far: 0 before the first run, 1 during and after it, and so on.
// Only the latest attempt can stream or add to the result: one an
// interceptor gave up on (a per-attempt timeout) is cut off.
func (inv *Invocation) Attempts() int {
	return inv.c.out.attempts()
}

// MetaValue returns metadata set on the call so far, by the tool or by an
// interceptor (see Meta).
func (inv *Invocation) MetaValue(key string) (any, bool) {
	return inv.c.out.metaValue(key)
}

// AbortBatch stops the whole batch because of this call (an error policy made
// its failure fatal): calls not started yet are reported as interrupted with
// cause, running ones have their context cancelled. The call itself ends
// with the outcome its interceptors return. Once the call's result is final
// (an interceptor left behind at the grace period) it does nothing.
func (inv *Invocation) AbortBatch(cause error) {
	if !inv.c.out.final() {
		inv.c.batch.interrupt(cause)
	}
}

// Logger returns the toolkit's logger (silent unless WithLogger set one).
func (inv *Invocation) Logger() *zerolog.Logger { return &inv.c.batch.tk.log }

// BatchID returns the id of the batch the call belongs to.
func (inv *Invocation) BatchID() string { return inv.c.batch.ID() }

// Meta attaches metadata to the call's result (code and UIs see it, the
// model does not).
func (inv *Invocation) Meta(key string, value any) { inv.c.out.setMeta(0, key, value) }

// FilterDeltas makes every delta the call emits from now on go through f
// first (a redactor, for example). Filters apply in the order they were
// added, FilterStream's among them.
func (inv *Invocation) FilterDeltas(f func(events.Part) events.Part) { inv.FilterStream(partFilter(f)) }

// FilterStream makes every delta the call emits from now on go through f
// first; see [StreamFilter]. Filters apply in the order they were added,
// FilterDeltas' among them.
func (inv *Invocation) FilterStream(f StreamFilter) {
	inv.c.mu.Lock()
	inv.c.ic.filt.list = append(inv.c.ic.filt.list, f)
	inv.c.mu.Unlock()
}

// Emit sends a call-level event of the given type (a valid name, see
// [events.CheckType], and not a lifecycle type) with data as its body
// (marshalled to JSON in Event.Data), for example an approval request. It goes to every observer and, on NATS, to
// <prefix>.<session>.<call>.<type>.
func (inv *Invocation) Emit(typ events.Type, data any) error {
	if err := checkFreeType(typ); err != nil {
		return err
	}
	body, err := json.Marshal(data)
	if err != nil {
		return err
	}
	inv.c.out.emit(typ, body)
	return nil
}

// Suspend tells the engine that the call now waits for something outside
// the process, such as a person's approval: a suspend event goes out with
// the reason, Batch.Results yields a suspended notice, and the call gives up
// its parallelism slot. Wait with the returned context: the batch's
// cancellation ends it, the call's deadline does not. When the wait is
// over, call resume and continue with the context it returns: the call's
// deadline starts over from then, with its full timeout. Like any code of
// the call, an interceptor that ignores the end of its wait is left behind
// after the cancel grace period (WithCancelGrace), and one that suspends a
// call already reported that way gets a wait that is over at once and
// announces nothing.
func (inv *Invocation) Suspend(reason string) (wait context.Context, resume func() context.Context) {
	return inv.c.suspend(reason)
}

// Waiting returns the reason the call is suspended with now (Suspend, or
// "external" for a call of an external tool), or "" when it is not
// waiting. An interceptor whose call comes back interrupted tells from it
// whether the call was interrupted while it waited outside the process.
func (inv *Invocation) Waiting() string {
	c := inv.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.side == nil {
		return ""
	}
	return c.side.waiting
}

// OnWait registers f to be told, on the call's goroutine, when the call
// starts waiting outside the process (f(reason), the reason Waiting will
// report) and when a wait of Suspend ends with its resume (f("")). f runs
// before the suspend event goes out, so before anyone outside can see the
// call wait, and before resume returns, so before the call goes on; the call
// waits for it (f may do I/O, such as writing the call's state to a store,
// so that a process that dies while the call waits leaves it recorded as
// waiting). remove unregisters f.
func (inv *Invocation) OnWait(f func(reason string)) (remove func()) {
	c := inv.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ic == nil || f == nil {
		return func() {}
	}
	ic, h := c.ic, &f
	ic.onWait = append(slices.Clip(ic.onWait), h)
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if i := slices.Index(ic.onWait, h); i >= 0 {
			ic.onWait = slices.Delete(slices.Clone(ic.onWait), i, i+1)
		}
	}
}

// interceptors is an immutable snapshot of a toolkit's interceptors, with
// the chains built from it, cached per tool.
type interceptors struct {
	list   []*registered
	wraps  bool     // one of list has an Intercept: calls go through a chain
	chains sync.Map // tool name -> *builtChain
}

func newInterceptors(list []*registered) *interceptors {
	return &interceptors{list: list, wraps: slices.ContainsFunc(list, func(r *registered) bool { return r.Intercept != nil })}
}

// builtChain is the handler for one tool, valid while the tool is the same
// and no interceptor was switched on or off (gen).
type builtChain struct {
	tool *Tool
	gen  uint64
	h    Handler
}

type registered struct {
	Interceptor
	on atomic.Bool
}

func (r *registered) applies(t *Tool) bool {
	if len(r.Tools) > 0 && !slices.Contains(r.Tools, t.spec.Name) {
		return false
	}
	return r.Match == nil || r.Match(t)
}

// Use adds interceptors to the ones already there, placed by Order (equal
// orders: after the ones added before). It refuses, adding none of ics, an
// interceptor without a name or a function, and a name already in use
// (ReplaceInterceptor replaces one; SetInterceptors the whole list): a
// second interceptor that silently took the place of the first would drop
// a rule someone relied on. Calls and batches that already started keep
// the interceptors they started with.
func (tk *Toolkit) Use(ics ...Interceptor) error {
	tk.icMu.Lock()
	defer tk.icMu.Unlock()
	list := slices.Clone(tk.ics.Load().list)
	for _, ic := range ics {
		if err := checkInterceptor(ic); err != nil {
			return err
		}
		if slices.ContainsFunc(list, func(x *registered) bool { return x.Name == ic.Name }) {
			return fmt.Errorf("toolkit: an interceptor named %q is already in use: ReplaceInterceptor replaces it, RemoveInterceptor removes it", ic.Name)
		}
		list = append(list, newRegistered(ic))
	}
	tk.storeInterceptors(list)
	return nil
}

// ReplaceInterceptor puts ic in the place of the interceptor of the same
// name, switched on, in one step (no call runs with neither); a new Order
// moves it. It fails when no interceptor has that name.
func (tk *Toolkit) ReplaceInterceptor(ic Interceptor) error {
	if err := checkInterceptor(ic); err != nil {
		return err
	}
	tk.icMu.Lock()
	defer tk.icMu.Unlock()
	list := slices.Clone(tk.ics.Load().list)
	i := slices.IndexFunc(list, func(x *registered) bool { return x.Name == ic.Name })
	if i < 0 {
		return fmt.Errorf("toolkit: no interceptor named %q to replace", ic.Name)
	}
	list[i] = newRegistered(ic)
	tk.storeInterceptors(list)
	return nil
}

// SetInterceptors replaces the whole list with ics, switched on and placed
// by Order, in one step; no ics removes every interceptor. It refuses, and
// changes nothing, when two of ics share a name or one is not valid.
func (tk *Toolkit) SetInterceptors(ics ...Interceptor) error {
	list := make([]*registered, 0, len(ics))
	for _, ic := range ics {
		if err := checkInterceptor(ic); err != nil {
			return err
		}
		if slices.ContainsFunc(list, func(x *registered) bool { return x.Name == ic.Name }) {
			return fmt.Errorf("toolkit: two interceptors are named %q", ic.Name)
		}
		list = append(list, newRegistered(ic))
	}
	tk.icMu.Lock()
	defer tk.icMu.Unlock()
	tk.storeInterceptors(list)
	return nil
}

func checkInterceptor(ic Interceptor) error {
	if ic.Name == "" || ic.Intercept == nil && ic.BeforeBatch == nil && ic.AfterBatch == nil {
		return errors.New("toolkit: an interceptor needs a name and an Intercept, BeforeBatch or AfterBatch function")
	}
	return nil
}

func newRegistered(ic Interceptor) *registered {
	r := &registered{Interceptor: ic}
	r.on.Store(true)
	return r
}

// storeInterceptors orders list (stable: equal orders keep their places)
// and installs it with the batch hooks derived from it; tk.icMu must be
// held.
func (tk *Toolkit) storeInterceptors(list []*registered) {
	slices.SortStableFunc(list, func(a, b *registered) int { return cmp.Compare(a.Order, b.Order) })
	tk.ics.Store(newInterceptors(list))
	tk.hooks.Store(hooksOf(list))
}

// EnableInterceptor switches an interceptor on or off while calls run: calls
// and batches that start afterwards see the change.
func (tk *Toolkit) EnableInterceptor(name string, on bool) error {
	tk.icMu.Lock()
	defer tk.icMu.Unlock()
	list := tk.ics.Load().list
	for _, r := range list {
		if r.Name == name {
			r.on.Store(on)
			tk.icGen.Add(1) // after the switch: a chain built for the new gen sees it
			tk.hooks.Store(hooksOf(list))
			return nil
		}
	}
	return fmt.Errorf("toolkit: no interceptor named %q", name)
}

// RemoveInterceptor removes an interceptor; it reports whether there was one.
func (tk *Toolkit) RemoveInterceptor(name string) bool {
	tk.icMu.Lock()
	defer tk.icMu.Unlock()
	cur := tk.ics.Load()
	list := slices.DeleteFunc(slices.Clone(cur.list), func(x *registered) bool { return x.Name == name })
	tk.storeInterceptors(list)
	return len(list) != len(cur.list)
}

// Interceptors returns the names of the interceptors, outermost first, and
// whether each is on.
func (tk *Toolkit) Interceptors() (names []string, on []bool) {
	for _, r := range tk.ics.Load().list {
		names = append(names, r.Name)
		on = append(on, r.on.Load())
	}
	return names, on
}

// chainFor returns the handler for a call of t: the interceptors that are
// on and apply to t, around the tool. Chains are built once per tool and
// reused until the interceptors change, so a call through the chain
// allocates nothing.
func (tk *Toolkit) chainFor(t *Tool) Handler {
	gen := tk.icGen.Load()
	snap := tk.ics.Load()
	if v, ok := snap.chains.Load(t.spec.Name); ok {
		if b := v.(*builtChain); b.tool == t && b.gen == gen {
			return b.h
		}
	}
	h := buildChain(snap.list, t, false)
	snap.chains.Store(t.spec.Name, &builtChain{tool: t, gen: gen, h: h})
	return h
}

// buildChain wraps the tool's core in the interceptors of list that are on
// and apply to t, skipping those that wrap unknown calls when the call
// already went through them (an unknown call pointed at t).
func buildChain(list []*registered, t *Tool, skipUnknown bool) Handler {
	h := Handler(runCore)
	for i := len(list) - 1; i >= 0; i-- {
		r := list[i]
		if r.Intercept == nil || !r.on.Load() || skipUnknown && r.Unknown || !r.applies(t) {
			continue
		}
		ic, next := r.Intercept, h
		h = func(ctx context.Context, inv *Invocation) Outcome { return ic(ctx, inv, next) }
	}
	return h
}

// hooksOf returns the batch hooks of list, nil when there are none (a
// toolkit without them pays nothing for them).
func hooksOf(list []*registered) *batchHooks {
	var hs []Interceptor
	for _, r := range list {
		if r.on.Load() && (r.BeforeBatch != nil || r.AfterBatch != nil) {
			hs = append(hs, r.Interceptor)
		}
	}
	if len(hs) == 0 {
		return nil
	}
	return &batchHooks{list: hs,
		before: slices.ContainsFunc(hs, func(h Interceptor) bool { return h.BeforeBatch != nil }),
		after:  slices.ContainsFunc(hs, func(h Interceptor) bool { return h.AfterBatch != nil })}
}
