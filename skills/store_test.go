package skills_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/skills"
)

// memSkills is a skills.Store in memory, shared by two loaders as a
// key-value bucket is shared by two processes.
type memSkills struct {
	mu   sync.Mutex
	kept map[string][]string
	fail error
}

func (m *memSkills) SkillsLoaded(_ context.Context, session string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.kept[session]), m.fail
}

func (m *memSkills) AddSkillLoaded(_ context.Context, session, skill string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	if m.kept == nil {
		m.kept = map[string][]string{}
	}
	if !slices.Contains(m.kept[session], skill) {
		m.kept[session] = append(m.kept[session], skill)
	}
	return nil
}

// TestLoadedSkillsKeptAcrossARestart: the skills a session loaded in one
// process are loaded in the next one that shares the store, after
// Restore; skills the library no longer has are left out.
func TestLoadedSkillsKeptAcrossARestart(t *testing.T) {
	store := &memSkills{}
	first := newLoaderFixture(t, skills.WithStore(store))
	if r := first.load(t, "s", "analysis", "SKILL.md"); r.State != events.StateSuccess {
		t.Fatalf("load: %s %q", r.State, r.Text())
	}
	store.mu.Lock()
	store.kept["s"] = append(store.kept["s"], "no-such-skill")
	store.mu.Unlock()

	second := newLoaderFixture(t, skills.WithStore(store))
	if got := second.ld.Loaded("s"); len(got) != 0 {
		t.Fatalf("loaded before Restore: %v", got)
	}
	got, err := second.ld.Restore(context.Background(), "s")
	if err != nil || !slices.Equal(got, []string{"analysis"}) || !slices.Equal(second.ld.Loaded("s"), []string{"analysis"}) {
		t.Fatalf("Restore: %v %v; Loaded %v", got, err, second.ld.Loaded("s"))
	}
	if got, _ := second.ld.Restore(context.Background(), "other"); len(got) != 0 {
		t.Fatalf("another session restored %v", got)
	}
}

// TestSkillStoreFails: a load the store cannot record fails and does not
// count as loaded; Restore says what it could not read; without a store,
// Restore says what it needs.
func TestSkillStoreFails(t *testing.T) {
	store := &memSkills{fail: errors.New("bucket gone")}
	f := newLoaderFixture(t, skills.WithStore(store))
	if r := f.load(t, "s", "analysis", "SKILL.md"); r.State == events.StateSuccess {
		t.Fatalf("a load the store could not record succeeded: %q", r.Text())
	}
	if got := f.ld.Loaded("s"); len(got) != 0 {
		t.Fatalf("loaded: %v", got)
	}
	if _, err := f.ld.Restore(context.Background(), "s"); err == nil {
		t.Fatal("Restore from a failing store: no error")
	}
	if _, err := newLoaderFixture(t).ld.Restore(context.Background(), "s"); err == nil {
		t.Fatal("Restore without a store: no error")
	}
}
