package skills_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/skills"
	"github.com/toolstream/toolstream/toolkit"
)

// TestRefreshedSkillStillFiltered: a load whose skill changed on disk gets
// the skill as read now, and that one is held to the session's filter: when
// the rescan hands the name to a skill the filter hides from the session (a
// later repository's, or one whose front matter now says so), the load is
// refused and reads nothing.
func TestRefreshedSkillStillFiltered(t *testing.T) {
	pub, admin := t.TempDir(), t.TempDir()
	writeFiles(t, pub, map[string]string{"deploy/SKILL.md": skillText("deploy", "Deploy.", "public steps")})
	pubRepo, err := skills.Dir("public", pub)
	if err != nil {
		t.Fatal(err)
	}
	adminRepo, err := skills.Dir("admin", admin)
	if err != nil {
		t.Fatal(err)
	}
	lib, err := skills.NewLibrary(pubRepo, adminRepo)
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New()
	t.Cleanup(func() { tk.Close(context.Background()) })
	_, err = skills.Install(tk, lib, skills.WithFilter(func(session string, s *skills.Skill) bool {
		return s.Repository != "admin" && s.Metadata["audience"] != "admin"
	}))
	if err != nil {
		t.Fatal(err)
	}
	if r := loadIn(t, tk, "user", "deploy", "SKILL.md"); !strings.Contains(r.Text(), "public steps") {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	// The admin repository gets a skill of the same name, and the public
	// one is edited: the next load rescans.
	writeFiles(t, admin, map[string]string{"deploy/SKILL.md": skillText("deploy", "Deploy.", "ADMIN SECRET steps")})
	writeFiles(t, pub, map[string]string{"deploy/SKILL.md": skillText("deploy", "Deploy.", "public steps, edited")})
	r := loadIn(t, tk, "user", "deploy", "SKILL.md")
	if strings.Contains(r.Text(), "ADMIN SECRET") || r.State != events.StateError {
		t.Fatalf("a session loaded a skill its filter hides: %s %q", r.State, r.Text())
	}
	if !strings.Contains(r.Text(), `cannot load skill "deploy": skill no longer available: skill "deploy" changed on disk and is no longer one this session can load. Skills you can load: `) {
		t.Fatalf("error %q", r.Text())
	}

	// The front matter now says the skill is not for this session.
	writeFiles(t, pub, map[string]string{"guide/SKILL.md": skillText("guide", "Guide.", "guide v1")})
	if err := lib.Reload(); err != nil {
		t.Fatal(err)
	}
	if r := loadIn(t, tk, "user", "guide", "SKILL.md"); !strings.Contains(r.Text(), "guide v1") {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	writeFiles(t, pub, map[string]string{"guide/SKILL.md": "---\nname: guide\ndescription: Guide.\naudience: admin\n---\nguide v2 HIDDEN\n"})
	r = loadIn(t, tk, "user", "guide", "SKILL.md")
	if strings.Contains(r.Text(), "HIDDEN") || r.State != events.StateError {
		t.Fatalf("a session loaded a skill its filter now hides: %s %q", r.State, r.Text())
	}
}

// TestLoadRacingClose: a load still running when its session is closed
// neither opens the session again in the toolkit nor leaves the skill
// recorded as loaded: a new session with the same id starts with none.
func TestLoadRacingClose(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"guide/SKILL.md": skillText("guide", "A guide.", "steps")})
	lib := dirLibrary(t, "disk", root)
	tk := toolkit.New(toolkit.WithInlineObserver(&testutil.Recorder{}))
	t.Cleanup(func() { tk.Close(context.Background()) })
	ld, err := skills.Install(tk, lib)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := tk.Session("s")
	if err := tk.Use(toolkit.Interceptor{Name: "close-first", Tools: []string{skills.LoadTool},
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
			s.Close() // the load's handler runs in a session closed meanwhile
			return next(ctx, inv)
		}}); err != nil {
		t.Fatal(err)
	}
	r := s.Run(context.Background(), []toolkit.Call{{ID: "l", Name: skills.LoadTool, Args: json.RawMessage(`{"skillId":"guide","path":"SKILL.md"}`)}})[0]
	if r.State != events.StateError || !errors.Is(r.Err, toolkit.ErrClosed) {
		t.Errorf("a load in a session closed meanwhile: %s %q, want an error saying it was closed", r.State, r.Text())
	}
	if ids := tk.Sessions(); slices.Contains(ids, "s") {
		t.Errorf("the closed session is open again after its load ended: %v", ids)
	}
	if got := ld.Loaded("s"); len(got) != 0 {
		t.Errorf("a new session \"s\" has loaded %v already", got)
	}
}

// removingStore runs remove once, at the start of the next Update: the
// window between the loader's check that a skill's groups exist and the
// switch.
type removingStore struct {
	groups.Store
	remove func()
}

func (s *removingStore) Update(ctx context.Context, session string, fn func(map[string]bool) (map[string]bool, error)) (map[string]bool, error) {
	if r := s.remove; r != nil {
		s.remove = nil
		r()
	}
	return s.Store.Update(ctx, session, fn)
}

// TestLoadRacingGroupRemoval: a group the skill names that is removed while
// the load switches the skill's groups on is skipped, as a group that never
// existed is, and the others are switched on: the load succeeds. It failed
// with "groups: unknown group".
func TestLoadRacingGroupRemoval(t *testing.T) {
	fsys := fstest.MapFS{"a/SKILL.md": {Data: []byte("---\nname: a\ndescription: A.\ntool-groups: [g1, g2]\n---\nbody a\n")}}
	lib, err := skills.NewLibrary(skills.Repository{Name: "m", FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New()
	t.Cleanup(func() { tk.Close(context.Background()) })
	for _, n := range []string{"t1", "t2"} {
		tk.Add(toolkit.MustTool(toolkit.Spec{Name: n}, func(context.Context, struct{}) (string, error) { return "", nil }))
	}
	st := &removingStore{Store: groups.NewMemoryStore()}
	gm, err := groups.Install(tk, groups.WithStore(st))
	if err != nil {
		t.Fatal(err)
	}
	if err := gm.Add(groups.Group{Name: "g1", Description: "one", Tools: []string{"t1"}}, groups.Group{Name: "g2", Description: "two", Tools: []string{"t2"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := skills.Install(tk, lib, skills.WithGroups(gm)); err != nil {
		t.Fatal(err)
	}
	st.remove = func() {
		if err := gm.Remove("g2"); err != nil {
			t.Error(err)
		}
	}
	r := loadIn(t, tk, "s", "a", "SKILL.md")
	if r.State != events.StateSuccess || !strings.Contains(r.Text(), "This skill switched on the tool group(s) g1. Now available: t1.") {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	if got, _ := gm.Active(context.Background(), "s"); !slices.Equal(got, []string{"g1"}) {
		t.Fatalf("active %v, want [g1]", got)
	}
}
