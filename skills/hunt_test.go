package skills_test

import (
	"context"
	"strings"
	"testing"

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
	if strings.Contains(r.Text(), "ADMIN SECRET") || r.State != toolkit.StateError {
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
	if strings.Contains(r.Text(), "HIDDEN") || r.State != toolkit.StateError {
		t.Fatalf("a session loaded a skill its filter now hides: %s %q", r.State, r.Text())
	}
}
