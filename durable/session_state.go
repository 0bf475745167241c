package durable

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/skills"
)

// A session's state beside its calls and conversation, for a resumed
// session to be whole: the grants people added (an interceptors.GrantStore)
// and the skills it loaded (a skills.Store). Its tool groups are
// groups/natskv's to keep.
var (
	_ interceptors.GrantStore = (*Store)(nil)
	_ skills.Store            = (*Store)(nil)
)

// stateKey is the key of a session's state of one kind ("grants",
// "skills").
func stateKey(kind, session string) string {
	return kind + "." + base64.RawURLEncoding.EncodeToString([]byte(session))
}

// Grants implements interceptors.GrantStore.
func (s *Store) Grants(ctx context.Context, session string) ([]interceptors.Grant, error) {
	var gs []interceptors.Grant
	if err := s.getJSON(ctx, stateKey("grants", session), &gs); err != nil {
		return nil, fmt.Errorf("durable: the grants of %q: %w", session, err)
	}
	return gs, nil
}

// AddGrants implements interceptors.GrantStore.
func (s *Store) AddGrants(ctx context.Context, session string, grants []interceptors.Grant) error {
	err := updateJSON(ctx, s, stateKey("grants", session), func(gs *[]interceptors.Grant) bool {
		n := len(*gs)
		for _, g := range grants {
			if !slices.ContainsFunc(*gs, func(x interceptors.Grant) bool {
				return x.Tool == g.Tool && x.Under == g.Under && string(x.Args) == string(g.Args)
			}) {
				*gs = append(*gs, g)
			}
		}
		return len(*gs) > n
	})
	if err != nil {
		return fmt.Errorf("durable: keeping the grants of %q: %w", session, err)
	}
	return nil
}

// SkillsLoaded implements skills.Store.
func (s *Store) SkillsLoaded(ctx context.Context, session string) ([]string, error) {
	var names []string
	if err := s.getJSON(ctx, stateKey("skills", session), &names); err != nil {
		return nil, fmt.Errorf("durable: the skills %q loaded: %w", session, err)
	}
	return names, nil
}

// AddSkillLoaded implements skills.Store.
func (s *Store) AddSkillLoaded(ctx context.Context, session, skill string) error {
	err := updateJSON(ctx, s, stateKey("skills", session), func(names *[]string) bool {
		if slices.Contains(*names, skill) {
			return false
		}
		*names = append(*names, skill)
		return true
	})
	if err != nil {
		return fmt.Errorf("durable: recording that %q loaded skill %q: %w", session, skill, err)
	}
	return nil
}

// getJSON reads a key's JSON into v; a missing key leaves v as it is.
func (s *Store) getJSON(ctx context.Context, k string, v any) error {
	value, _, err := s.b.Get(ctx, k)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return json.Unmarshal(value, v)
}

// updateJSON changes a key's JSON value with compare-and-set, again on a
// concurrent change: fn gets the value (zero when the key has none),
// changes it and reports whether to write it.
func updateJSON[T any](ctx context.Context, s *Store, k string, fn func(*T) bool) error {
	for range 16 {
		raw, rev, err := s.b.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			raw, rev, err = nil, 0, nil
		}
		if err != nil {
			return err
		}
		var v T
		if raw != nil {
			if err := json.Unmarshal(raw, &v); err != nil {
				return err
			}
		}
		if !fn(&v) {
			return nil
		}
		next, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if rev == 0 {
			_, err = s.b.Create(ctx, k, next)
		} else {
			_, err = s.b.Update(ctx, k, next, rev)
		}
		if !conflict(err) {
			return err
		}
	}
	return fmt.Errorf("%s: too many concurrent changes", k)
}
