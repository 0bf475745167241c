package groups

import (
	"context"
	"maps"
	"sync"
)

// Store keeps which groups each session switched on or off. A session's
// state maps group names to active or not; groups it does not mention have
// their default. Implementations must be safe for concurrent use, also from
// several processes when the store is shared.
type Store interface {
	// Load returns a session's state, nil when nothing was stored.
	Load(ctx context.Context, session string) (map[string]bool, error)
	// Update changes a session's state atomically: fn gets the current state
	// (nil when none) and returns the new one. When another update lands in
	// between, fn runs again on the newer state, so no update is lost.
	Update(ctx context.Context, session string, fn func(cur map[string]bool) (map[string]bool, error)) (map[string]bool, error)
}

// memoryStore keeps state in process: NewMemoryStore.
type memoryStore struct {
	mu       sync.Mutex
	sessions map[string]map[string]bool
}

// NewMemoryStore returns an empty in-process store, the default: a
// session's state is dropped when the session closes (its Manager sees to
// it), since no other process serves the session.
func NewMemoryStore() Store { return &memoryStore{sessions: map[string]map[string]bool{}} }

// Load is Store.Load.
func (s *memoryStore) Load(_ context.Context, session string) (map[string]bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.sessions[session]), nil
}

// Update is Store.Update.
func (s *memoryStore) Update(_ context.Context, session string, fn func(map[string]bool) (map[string]bool, error)) (map[string]bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next, err := fn(maps.Clone(s.sessions[session]))
	if err != nil {
		return nil, err
	}
	s.sessions[session] = maps.Clone(next)
	return next, nil
}

// Forget drops a session's state (the Manager calls it when the session
// closes).
func (s *memoryStore) Forget(session string) {
	s.mu.Lock()
	delete(s.sessions, session)
	s.mu.Unlock()
}
