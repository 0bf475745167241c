package groups

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toolstream/toolstream/internal/memo"
	"github.com/toolstream/toolstream/toolkit"
)

// Manager holds a toolkit's tool groups and decides, per session, which
// tools the model sees. Install creates one.
type Manager struct {
	tk    *toolkit.Toolkit
	store Store
	meta  *toolkit.Tool // the registered reset_tools

	searchOn bool          // WithToolSearch
	search   *toolkit.Tool // tool_search, when searchOn

	mu   sync.Mutex              // serialises changes to the definitions
	defs atomic.Pointer[catalog] // read without locking
}

// catalog is an immutable snapshot of the group definitions, with a cache of
// the reset_tools variants built from it.
type catalog struct {
	order  []Group             // registration order
	byName map[string]Group    // by group name
	member map[string][]string // tool name -> its groups, in group order
	shown  []string            // the groups the model sees (not CodeOnly), in order

	metas        memo.Cache[*toolkit.Tool] // reset_tools as sessions see it, by active groups ('0' or '1' per group of order)
	searchFields                           // tool_search's index (search.go)
}

func newCatalog(order []Group) *catalog {
	c := &catalog{order: order, byName: map[string]Group{}, member: map[string][]string{}}
	for _, g := range order {
		c.byName[g.Name] = g
		if !g.CodeOnly {
			c.shown = append(c.shown, g.Name)
		}
		for _, t := range g.Tools {
			if !slices.Contains(c.member[t], g.Name) {
				c.member[t] = append(c.member[t], g.Name)
			}
		}
	}
	return c
}

// Option configures Install.
type Option func(*Manager)

// WithStore sets where per-session state lives (default: in memory). Use a
// natskv.Store (package groups/natskv) to share it between processes.
func WithStore(s Store) Option { return func(m *Manager) { m.store = s } }

// Install adds tool groups to a toolkit: it registers the reset_tools meta
// tool and makes the toolkit show each session only its visible tools.
func Install(tk *toolkit.Toolkit, opts ...Option) (*Manager, error) {
	m := &Manager{tk: tk, store: NewMemoryStore()}
	for _, o := range opts {
		o(m)
	}
	m.defs.Store(newCatalog(nil))
	meta, err := toolkit.NewRawTool(toolkit.Spec{
		Name:        MetaTool,
		Description: "Switch tool groups on and off.",
		// Serial: calls after it in a batch must see the groups it set.
		ConcurrencySafe: false,
	}, []byte(`{"type":"object"}`), m.resetTools)
	if err != nil {
		return nil, err
	}
	if err := tk.Add(meta); err != nil {
		return nil, fmt.Errorf("groups: registering %s: %w", MetaTool, err)
	}
	m.meta = meta // shown and run only as a session's variant (metaFor)
	if m.searchOn {
		if err := m.installSearch(); err != nil {
			return nil, err
		}
	}
	tk.AddVisibility(visibility{m})
	return m, nil
}

// Add registers groups. Their tools must be registered in the toolkit
// already; a name that exists is an error (ErrDuplicateGroup).
func (m *Manager) Add(groups ...Group) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.defs.Load()
	order := slices.Clone(cur.order)
	for _, g := range groups {
		if err := m.checkGroup(g); err != nil {
			return err
		}
		if slices.ContainsFunc(order, func(x Group) bool { return x.Name == g.Name }) {
			return fmt.Errorf("%w: %q", ErrDuplicateGroup, g.Name)
		}
		order = append(order, g.clone())
	}
	m.defs.Store(newCatalog(order))
	return nil
}

// Update replaces a group's definition (its description, instructions,
// tools, default). Sessions keep whatever state they set for it.
func (m *Manager) Update(g Group) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkGroup(g); err != nil {
		return err
	}
	cur := m.defs.Load()
	i := slices.IndexFunc(cur.order, func(x Group) bool { return x.Name == g.Name })
	if i < 0 {
		return cur.unknown(g.Name)
	}
	order := slices.Clone(cur.order)
	order[i] = g.clone()
	m.defs.Store(newCatalog(order))
	return nil
}

// Remove unregisters groups. Their tools that are in no other group become
// basic (always visible) unless removed from the toolkit too.
func (m *Manager) Remove(names ...string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.defs.Load()
	for _, n := range names {
		if n == BasicGroup {
			return fmt.Errorf("%w: the basic group cannot be removed: its tools are those in no group", ErrReservedGroup)
		}
		if _, ok := cur.byName[n]; !ok {
			return cur.unknown(n)
		}
	}
	order := slices.DeleteFunc(slices.Clone(cur.order), func(g Group) bool { return slices.Contains(names, g.Name) })
	m.defs.Store(newCatalog(order))
	return nil
}

// Groups returns the group definitions in registration order.
func (m *Manager) Groups() []Group {
	cur := m.defs.Load()
	out := make([]Group, len(cur.order))
	for i, g := range cur.order {
		out[i] = g.clone()
	}
	return out
}

func (m *Manager) checkGroup(g Group) error {
	if err := g.check(); err != nil {
		return err
	}
	for _, t := range g.Tools {
		if t == MetaTool || t == SearchTool {
			return fmt.Errorf("%w %q: %s cannot be in a group", ErrInvalidGroup, g.Name, t)
		}
		if _, ok := m.tk.Tool(t); !ok {
			return fmt.Errorf("%w %q: tool %q is not registered", ErrInvalidGroup, g.Name, t)
		}
	}
	return nil
}

func (c *catalog) unknown(name string) error {
	return fmt.Errorf("%w %q; groups are: %s", ErrUnknownGroup, name, strings.Join(names(c.order), ", "))
}

// unknownToModel is unknown as the model may read it: it names only the
// groups the model sees, so that a CodeOnly group named is refused exactly
// as a group that does not exist.
func (c *catalog) unknownToModel(name string) error {
	return fmt.Errorf("%w %q; groups are: %s", ErrUnknownGroup, name, strings.Join(c.shown, ", "))
}

// modelSees reports whether group g exists and is not CodeOnly.
func (c *catalog) modelSees(g string) bool {
	def, ok := c.byName[g]
	return ok && !def.CodeOnly
}

// shownOf returns the groups of gs the model sees, in their order.
func (c *catalog) shownOf(gs []string) []string {
	var out []string
	for _, g := range gs {
		if c.modelSees(g) {
			out = append(out, g)
		}
	}
	return out
}

func names(gs []Group) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.Name
	}
	return out
}

// active computes which groups of c are active for a stored state.
func active(c *catalog, state map[string]bool) map[string]bool {
	out := make(map[string]bool, len(c.order))
	for _, g := range c.order {
		if c.isOn(state, g.Name) {
			out[g.Name] = true
		}
	}
	return out
}

// isOn reports whether group g is active for a stored state: as stored, or
// the group's default when the state does not mention it.
func (c *catalog) isOn(state map[string]bool, g string) bool {
	if on, set := state[g]; set {
		return on
	}
	return c.byName[g].Active
}

func sortedKeys(m map[string]bool) []string {
	return slices.Sorted(maps.Keys(m))
}

// Active returns the groups active in a session, sorted.
func (m *Manager) Active(ctx context.Context, session string) ([]string, error) {
	state, err := m.store.Load(ctx, session)
	if err != nil {
		return nil, err
	}
	return sortedKeys(active(m.defs.Load(), state)), nil
}

// SetActive makes exactly the given groups active in a session (replace
// semantics, like reset_tools). Unknown names are an error and change
// nothing.
func (m *Manager) SetActive(ctx context.Context, session string, groups ...string) (Change, error) {
	return m.change(ctx, session, "code", "", switchGroups(groups, true, true))
}

// Activate switches groups on in a session, leaving the others as they are.
func (m *Manager) Activate(ctx context.Context, session string, groups ...string) (Change, error) {
	return m.change(ctx, session, "code", "", switchGroups(groups, true, false))
}

// ActivateForCall switches groups on for the session of the tool call
// running with ctx: for tools that enable others, such as a skill loader.
// The event names the call and by (for example "skill").
func (m *Manager) ActivateForCall(ctx context.Context, by string, groups ...string) (Change, error) {
	info, ok := toolkit.CallInfoFrom(ctx)
	if !ok {
		return Change{}, fmt.Errorf("groups: ActivateForCall outside a tool call")
	}
	return m.change(ctx, info.Session, by, info.CallID, switchGroups(groups, true, false))
}

// Has reports whether a group exists.
func (m *Manager) Has(group string) bool {
	_, ok := m.defs.Load().byName[group]
	return ok
}

// ToolsOf returns the tools of a group that are registered.
func (m *Manager) ToolsOf(group string) []string {
	var out []string
	for _, t := range m.defs.Load().byName[group].Tools {
		if _, ok := m.tk.Tool(t); ok {
			out = append(out, t)
		}
	}
	return out
}

// Deactivate switches groups off in a session, leaving the others as they
// are.
func (m *Manager) Deactivate(ctx context.Context, session string, groups ...string) (Change, error) {
	return m.change(ctx, session, "code", "", switchGroups(groups, false, false))
}

// switchGroups returns the update that sets the named groups to on. With
// replace, every other group is set to off (the complete new state, as in
// reset_tools); without, the others keep their stored state. An unknown
// name fails the update. The basic group is always on: switching it on
// changes nothing, switching it off fails.
func switchGroups(names []string, on, replace bool) func(*catalog, map[string]bool) (map[string]bool, error) {
	return func(c *catalog, state map[string]bool) (map[string]bool, error) {
		next := make(map[string]bool, len(c.order))
		if replace {
			for _, g := range c.order {
				next[g.Name] = false
			}
		} else {
			maps.Copy(next, state)
		}
		for _, n := range names {
			if n == BasicGroup {
				if !on {
					return nil, fmt.Errorf("%w: the basic group is always active and cannot be switched off; "+
						"to hide a tool, put it in a group", ErrReservedGroup)
				}
				continue
			}
			if _, ok := c.byName[n]; !ok {
				return nil, c.unknown(n)
			}
			next[n] = on
		}
		return next, nil
	}
}

// resetByModel is reset_tools' update: the named groups on and every other
// group the model sees off (replace semantics); CodeOnly groups keep their
// stored state, and naming one fails as naming no group does.
func resetByModel(names []string) func(*catalog, map[string]bool) (map[string]bool, error) {
	return func(c *catalog, state map[string]bool) (map[string]bool, error) {
		next := make(map[string]bool, len(c.order))
		for _, g := range c.order {
			if !g.CodeOnly {
				next[g.Name] = false
			} else if on, set := state[g.Name]; set {
				next[g.Name] = on
			}
		}
		for _, n := range names {
			if n == BasicGroup {
				continue // always on
			}
			if !c.modelSees(n) {
				return nil, c.unknownToModel(n)
			}
			next[n] = true
		}
		return next, nil
	}
}

// change applies one update through the store and reports it with a
// "groups" session event when anything changed.
func (m *Manager) change(ctx context.Context, session, by, callID string, fn func(*catalog, map[string]bool) (map[string]bool, error)) (Change, error) {
	ch, _, err := m.changeIn(ctx, session, by, callID, fn)
	return ch, err
}

// changeIn is change, also returning the definitions the change was made
// with. They are read inside the store update, each time it runs: read
// before it, a group added meanwhile (and set by code) would be missing
// from a replace ("every other group off") and fall back to its default.
func (m *Manager) changeIn(ctx context.Context, session, by, callID string, fn func(*catalog, map[string]bool) (map[string]bool, error)) (Change, *catalog, error) {
	sess, err := m.sessionFor(ctx, session)
	if err != nil {
		return Change{}, nil, err
	}
	var before, after map[string]bool
	var c *catalog
	_, err = m.store.Update(ctx, session, func(state map[string]bool) (map[string]bool, error) {
		c = m.defs.Load()
		before = active(c, state) // computed again if the update is retried
		next, err := fn(c, state)
		if err != nil {
			return nil, err
		}
		after = active(c, next)
		return next, nil
	})
	if err != nil {
		return Change{}, nil, err
	}
	if f, ok := m.store.(forgetter); ok && sess.Closed() {
		// Closed while the change was on its way: Close may have dropped
		// the session's state before this stored it, so drop it again
		// (Close marks the session closed before it drops the state, so
		// one of the two drops comes last). A shared store keeps the
		// change, as it keeps the state of closed sessions.
		f.Forget(session)
		return Change{}, nil, fmt.Errorf("%w: session %q was closed while its tool groups were changing", toolkit.ErrClosed, session)
	}
	ch := Change{Active: sortedKeys(after), By: by, Call: callID}
	for _, g := range c.order {
		switch {
		case after[g.Name] && !before[g.Name]:
			ch.Activated = append(ch.Activated, g.Name)
		case before[g.Name] && !after[g.Name]:
			ch.Deactivated = append(ch.Deactivated, g.Name)
		}
	}
	if ch.Changed() {
		if err := sess.Emit(ctx, EventType, ch); err != nil {
			return ch, c, err
		}
	}
	return ch, c, nil
}

// sessionFor returns the session a change is for: the session of the call
// running with ctx when it is this one of this toolkit (so that a change
// made by a call whose session closed meanwhile does not open it again),
// else the toolkit's session of that id.
func (m *Manager) sessionFor(ctx context.Context, session string) (*toolkit.Session, error) {
	if s, ok := toolkit.SessionFrom(ctx); ok && s.ID() == session && s.Toolkit() == m.tk {
		return s, nil
	}
	return m.tk.Session(session)
}

// sessionClosed is the SessionClosed a toolkit.Visibility may have: a closed session's state
// is dropped from an in-process store (a shared store keeps it: other
// processes may still serve the session).
func (m *Manager) sessionClosed(session string) {
	if f, ok := m.store.(forgetter); ok {
		f.Forget(session)
	}
}

// forgetter is a store that drops the state of closed sessions
// (NewMemoryStore's).
type forgetter interface{ Forget(session string) }

// tools is toolkit.Visibility's Tools: the basic tools, the tools of active
// groups, and reset_tools (with a schema for this session) when there are
// groups the model sees.
func (m *Manager) tools(ctx context.Context, s *toolkit.Session, registered []*toolkit.Tool) ([]*toolkit.Tool, error) {
	c := m.defs.Load()
	state, err := m.store.Load(ctx, s.ID())
	if err != nil {
		return nil, err
	}
	on := active(c, state)
	out := make([]*toolkit.Tool, 0, len(registered))
	for _, t := range registered {
		if t.Name() == MetaTool || t.Name() == SearchTool && m.search != nil {
			continue
		}
		if visible(c, on, t.Name()) {
			out = append(out, t)
		}
	}
	if len(c.shown) > 0 {
		meta, err := m.metaFor(c, on)
		if err != nil {
			return nil, err
		}
		if m.search != nil {
			out = append(out, m.search)
		}
		out = append(out, meta)
	}
	return out, nil
}

func visible(c *catalog, on map[string]bool, tool string) bool {
	gs := c.member[tool]
	if len(gs) == 0 {
		return true // basic
	}
	return slices.ContainsFunc(gs, func(g string) bool { return on[g] })
}

// resolve is toolkit.Visibility's Resolve: reset_tools runs as the session's
// variant (its schema lists the groups, so the engine refuses unknown
// names), and a tool of only inactive groups is refused with a message that
// says which group to activate.
func (m *Manager) resolve(ctx context.Context, s *toolkit.Session, t *toolkit.Tool) (*toolkit.Tool, error) {
	c := m.defs.Load()
	name := t.Name()
	gs := c.member[name]
	if name == SearchTool && m.search != nil {
		if len(c.shown) == 0 {
			return nil, fmt.Errorf("there are no tool groups to search")
		}
		return t, nil
	}
	if name != MetaTool && len(gs) == 0 {
		return t, nil // basic
	}
	state, err := m.store.Load(ctx, s.ID())
	if err != nil {
		return nil, err
	}
	if name == MetaTool {
		if len(c.shown) == 0 {
			return nil, fmt.Errorf("there are no tool groups to switch")
		}
		return m.metaFor(c, active(c, state))
	}
	if slices.ContainsFunc(gs, func(g string) bool { return c.isOn(state, g) }) {
		return t, nil
	}
	// Only the groups the model can switch are named: a CodeOnly group is
	// never revealed, and reset_tools could not switch it on.
	gs = c.shownOf(gs)
	switch len(gs) {
	case 0:
		return nil, fmt.Errorf("tool %q is not available in this session now.", name)
	case 1:
		return nil, fmt.Errorf("tool %q is in the tool group %q, which is not active. Activate it first by calling %s with %q set to true (and every group you still need set to true).",
			name, gs[0], MetaTool, gs[0])
	}
	return nil, fmt.Errorf("tool %q is in the tool groups %s, none of which is active. Activate one of them first by calling %s (and keep every group you still need set to true).",
		name, quoteList(gs), MetaTool)
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// visibility plugs a Manager into its toolkit: the toolkit.Visibility, with
// its optional SessionClosed, that only the engine calls.
type visibility struct{ m *Manager }

func (v visibility) Tools(ctx context.Context, s *toolkit.Session, registered []*toolkit.Tool) ([]*toolkit.Tool, error) {
	return v.m.tools(ctx, s, registered)
}

func (v visibility) Resolve(ctx context.Context, s *toolkit.Session, t *toolkit.Tool) (*toolkit.Tool, error) {
	return v.m.resolve(ctx, s, t)
}

func (v visibility) SessionClosed(session string) { v.m.sessionClosed(session) }
