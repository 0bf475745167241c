package toolkit

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
)

// derived is what a toolkit made by Derive keeps about its family.
type derived struct {
	parent *Toolkit                        // nil for a toolkit made by New
	merged atomic.Pointer[mergedObservers] // the parent's observers and its own, cached

	kidsMu sync.Mutex
	kids   map[*Toolkit]struct{} // toolkits derived from this one and not closed
}

type mergedObservers struct{ up, own, set *observerSet }

// Derive returns a toolkit for a sub-agent (AgentScope's Toolkit.copy): it
// starts with this toolkit's tools and interceptors, without registering
// anything again, and then lives on its own. opts change its options
// (WithMaxParallel, WithDefaultTimeout, ...), which otherwise are the
// parent's; observers given in opts are its own.
//
// What is shared and what is its own:
//
//   - Tools: the registry as it is now. Tools are immutable, so nothing is
//     copied; registering, replacing or removing a tool afterwards, on
//     either side, changes that side only. [Toolkit.SetPresets] gives the
//     sub-agent its own presets for a tool.
//   - Interceptors (their batch parts too): the list as it is now, each switched on or off as it
//     is. Use, EnableInterceptor and RemoveInterceptor afterwards change
//     that side only (give the sub-agent its own call limits with
//     ReplaceInterceptor). The interceptors themselves are the same values:
//     whatever state they close over (a Permissions' pending approvals, an
//     eviction store) is shared; state they keep per session or per batch
//     is not, since sessions are the toolkit's own.
//   - Visibility: the parent's as it is now, so by default a sub-agent sees
//     what the parent's session of the same id sees, and a group it
//     switches (reset_tools) is switched for both. Closing one of its
//     sessions does not end the parent's per-session state. To give the
//     sub-agent groups of its own, install them on it after removing the
//     parent's visibility and reset_tools (whose handler works on the
//     parent's groups): sub.SetVisibility(nil); sub.Remove("reset_tools");
//     groups.Install(sub, ...).
//   - Observers: the parent's, live (the sub-agent's events go wherever
//     the parent's go, also to observers attached to the parent later),
//     plus its own. Tell its calls apart with [WithAgent].
//   - Its own: sessions (and what they hold: suspended calls, per-session
//     state), batches, goroutines and timers, statistics.
//
// Closing the derived toolkit never closes its parent. Closing the parent
// closes the toolkits derived from it first (their batches are interrupted
// and Close waits for them too): their events go through the parent's
// observers, which close with it. Deriving from a closed toolkit returns a
// closed toolkit.
func (tk *Toolkit) Derive(opts ...Option) *Toolkit {
	o := tk.opts
	o.observers = nil
	for _, opt := range opts {
		opt(&o)
	}
	kid := newToolkit(o)
	kid.family.parent = tk
	kid.reg.Store(tk.reg.Load())
	if v := tk.visibility(); v != nil {
		kid.storeVisibility(inherited{v})
	}
	tk.icMu.Lock()
	list := make([]*registered, len(tk.ics.Load().list))
	for i, r := range tk.ics.Load().list {
		c := &registered{Interceptor: r.Interceptor}
		c.on.Store(r.on.Load())
		list[i] = c
	}
	tk.icMu.Unlock()
	kid.ics.Store(newInterceptors(list))
	kid.hooks.Store(tk.hooks.Load()) // an immutable snapshot: sharing it is copying it

	tk.batchMu.Lock() // ordered with Close: a kid is either closed by it or born closed
	closed := tk.closed.Load()
	if !closed {
		tk.family.kidsMu.Lock()
		if tk.family.kids == nil {
			tk.family.kids = map[*Toolkit]struct{}{}
		}
		tk.family.kids[kid] = struct{}{}
		tk.family.kidsMu.Unlock()
	}
	tk.batchMu.Unlock()
	if closed {
		kid.startClose()
	}
	return kid
}

// inherited is the parent's visibility in a derived toolkit. It hides
// SessionClosed: the per-session state it keeps belongs to the parent's
// sessions, which a sub-agent closing its own must not end.
type inherited struct{ Visibility }

// observerSet returns the observers of a batch starting now: the
// toolkit's own and, for a derived toolkit, its parent's.
func (tk *Toolkit) observerSet() *observerSet {
	own := tk.observers.Load()
	if tk.family.parent == nil {
		return own
	}
	up := tk.family.parent.observerSet()
	switch {
	case own.empty():
		return up
	case up.empty():
		return own
	}
	if m := tk.family.merged.Load(); m != nil && m.up == up && m.own == own {
		return m.set
	}
	set := newObserverSet(slices.Concat(up.inline, own.inline), slices.Concat(up.boxes, own.boxes))
	tk.family.merged.Store(&mergedObservers{up: up, own: own, set: set})
	return set
}

// forget removes a closed derived toolkit from its parent.
func (tk *Toolkit) forget(kid *Toolkit) {
	tk.family.kidsMu.Lock()
	delete(tk.family.kids, kid)
	tk.family.kidsMu.Unlock()
}

// takeKids returns the derived toolkits still open and forgets them.
func (tk *Toolkit) takeKids() []*Toolkit {
	tk.family.kidsMu.Lock()
	defer tk.family.kidsMu.Unlock()
	kids := slices.Collect(maps.Keys(tk.family.kids))
	tk.family.kids = nil
	return kids
}

// SetPresets replaces the registered tool name by a copy with these presets
// added to its own (a value given here wins), for example a sub-agent's
// toolkit ([Toolkit.Derive]) whose writes must stay in its own folder. The
// parent of a derived toolkit, and every other toolkit the tool is
// registered with, keep the tool as it was.
func (tk *Toolkit) SetPresets(name string, presets map[string]any) error {
	tk.regMu.Lock()
	defer tk.regMu.Unlock()
	old := tk.reg.Load()
	t, ok := old.byName[name]
	if !ok {
		return fmt.Errorf("toolkit: SetPresets: no tool named %q", name)
	}
	nt, err := t.withPresets(presets)
	if err != nil {
		return err
	}
	next := &registry{byName: maps.Clone(old.byName), order: slices.Clone(old.order)}
	next.byName[name] = nt
	next.order[slices.Index(next.order, t)] = nt
	tk.reg.Store(next)
	return nil
}

// withPresets returns a copy of t with more presets.
func (t *Tool) withPresets(presets map[string]any) (*Tool, error) {
	spec := t.spec
	merged := make(map[string]any, len(t.presetVals)+len(presets))
	for k, raw := range t.presetVals {
		merged[k] = raw
	}
	maps.Copy(merged, presets)
	spec.Presets = merged
	nt, err := newTool(spec, t.schema, t.handler, t.in)
	if err != nil {
		return nil, err
	}
	nt.typed, nt.newIn, nt.output = t.typed, t.newIn, t.output
	return nt, nil
}
