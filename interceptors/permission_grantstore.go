package interceptors

import (
	"context"
	"fmt"
	"path"
	"sync"

	"github.com/toolstream/toolstream/toolkit"
)

// GrantStore keeps the grants people added to sessions (AlwaysAllow, an
// accepted suggestion) beyond the process that holds the session: a program
// started again, resuming a session, finds them there. Implementations must
// be safe for concurrent use (durable.Store is one, in a NATS key-value
// bucket).
type GrantStore interface {
	// Grants returns the grants kept for a session, nil when none.
	Grants(ctx context.Context, session string) ([]Grant, error)
	// AddGrants adds grants to the session's; one kept already stays once.
	AddGrants(ctx context.Context, session string, grants []Grant) error
}

// WithGrantStore keeps the grants added to sessions in s as well as with
// the session, and gives a session the grants s kept for it before its
// first decision: after a restart, a tool a person allowed for the rest of
// the session runs without asking again. A grant s cannot keep is still
// with the session, and the approval event's note says it was not kept; a
// session whose grants s cannot read has none of them, so its calls ask (a
// later decision reads again).
func WithGrantStore(s GrantStore) PermissionOption {
	return func(p *Permissions) { p.grantStore = s }
}

// grantsRestoredOf marks a session whose kept grants were read.
var grantsRestoredOf = toolkit.NewSessionLocal[*grantsRestored]()

type grantsRestored struct {
	mu   sync.Mutex
	done bool
}

// restoreGrants puts the grants the store kept for session in its session
// locals, once per session (again after a failed read).
func (p *Permissions) restoreGrants(ctx context.Context, session string, values toolkit.LocalScope) {
	if p.grantStore == nil {
		return
	}
	r := grantsRestoredOf.LoadOrInit(values, func() *grantsRestored { return &grantsRestored{} })
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	gs, err := p.grantStore.Grants(ctx, session)
	if err != nil {
		return
	}
	r.done = true
	if len(gs) == 0 {
		return
	}
	sg := sessionGrantsOf.LoadOrInit(values, newSessionGrants)
	for _, g := range gs {
		if g, ok := keptGrant(g); ok {
			sg.add(g)
		}
	}
}

// keptGrant puts a grant read from a store in the form the session keeps
// (Under cleaned, Args canonical), or refuses it: a store holds data, and a
// grant naming no tool, or with arguments that are not JSON, allows nothing.
func keptGrant(g Grant) (Grant, bool) {
	if g.Tool == "" {
		return Grant{}, false
	}
	if len(g.Args) > 0 {
		c, err := canonicalJSON(g.Args)
		if err != nil {
			return Grant{}, false
		}
		g.Args = c
	}
	if g.Under != "" {
		g.Under = path.Clean(g.Under)
	}
	return g, true
}

// keepGrants hands grants just added to a session to the store, and
// returns note with a word when it could not keep them.
func (p *Permissions) keepGrants(ctx context.Context, session string, gs []Grant, note string) string {
	if p.grantStore == nil || len(gs) == 0 {
		return note
	}
	if err := p.grantStore.AddGrants(context.WithoutCancel(ctx), session, gs); err != nil {
		return permJoin(note, fmt.Sprintf("not kept beyond this process: %v", err))
	}
	return note
}
