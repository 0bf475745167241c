package skills

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Store keeps the skills each session loaded beyond the process that
// loaded them: a program started again, resuming a session, finds them
// with Loader.Restore. Implementations must be safe for concurrent use
// (durable.Store is one, in a NATS key-value bucket).
type Store interface {
	// SkillsLoaded returns the skills kept as loaded in a session, nil
	// when none.
	SkillsLoaded(ctx context.Context, session string) ([]string, error)
	// AddSkillLoaded records that a session loaded a skill.
	AddSkillLoaded(ctx context.Context, session, skill string) error
}

// WithStore keeps the skills each session loads in s as well: a load is
// recorded there before it counts as loaded (a load s cannot record fails,
// and the model may try again). Restore reads them back.
func WithStore(s Store) Option { return func(l *Loader) { l.store = s } }

// Restore marks the skills the store kept for session as loaded in this
// process, as a resumed session had them, and returns them sorted. It
// emits no event and switches no tool group: the groups a skill switched
// on are the group store's to keep (groups.WithStore). Skills the session
// may no longer load (gone from the library, or filtered out) are left
// out. It needs WithStore.
func (l *Loader) Restore(ctx context.Context, session string) ([]string, error) {
	if l.store == nil {
		return nil, errors.New("skills: Restore needs WithStore")
	}
	kept, err := l.store.SkillsLoaded(ctx, session)
	if err != nil {
		return nil, fmt.Errorf("skills: reading the skills session %q loaded: %w", session, err)
	}
	visible := entryNames(l.entries(session))
	l.mu.Lock()
	defer l.mu.Unlock()
	set := l.loaded[session]
	for _, name := range kept {
		if !slices.Contains(visible, name) {
			continue
		}
		if set == nil {
			set = map[string]bool{}
			l.loaded[session] = set
		}
		set[name] = true
	}
	out := make([]string, 0, len(set))
	for name := range set {
		out = append(out, name)
	}
	slices.Sort(out)
	return out, nil
}
