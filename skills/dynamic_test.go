package skills_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/skills"
)

// TestSkillAddedOnDiskIsFound: a skill folder copied into a repository
// after the library was made is loadable at once, without Reload (as
// AgentScope's dynamic skills): load_skill_through_path finds it, its enum
// and the prompt list it. A folder made first and given its SKILL.md later
// (two steps, as a copy does) is found too, and so is one nested deeper.
func TestSkillAddedOnDiskIsFound(t *testing.T) {
	root, lib, tk, ld := guideAndOther(t)
	if r := loadIn(t, tk, "s", "guide", "SKILL.md"); r.State != events.StateSuccess {
		t.Fatalf("%s %q", r.State, r.Text())
	}

	writeFiles(t, root, map[string]string{"fresh/SKILL.md": skillText("fresh", "Added later.", "fresh body"), "fresh/notes.md": "n"})
	if r := loadIn(t, tk, "s", "fresh", "SKILL.md"); r.State != events.StateSuccess || !strings.Contains(r.Text(), "fresh body") {
		t.Fatalf("a skill added on disk: %s %q", r.State, r.Text())
	}
	if r := loadIn(t, tk, "s", "fresh", "notes.md"); r.State != events.StateSuccess {
		t.Fatalf("its file: %s %q", r.State, r.Text())
	}
	if got := skillEnum(t, tk, "s"); !slices.Equal(got, []string{"fresh", "guide", "other"}) {
		t.Errorf("enum %v", got)
	}
	if !strings.Contains(ld.Prompt("s"), "Added later.") {
		t.Errorf("prompt:\n%s", ld.Prompt("s"))
	}

	// The folder first, its SKILL.md after a listing saw it empty.
	if err := os.MkdirAll(filepath.Join(root, "team", "late"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, ok := lib.Skill("late"); ok {
		t.Fatal("a skill without its SKILL.md")
	}
	// On a file system with coarse times the folder's time may not move:
	// put it back, so that only the listing of a folder changed lately
	// can tell.
	late := filepath.Join(root, "team", "late")
	info, err := os.Stat(late)
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, root, map[string]string{"team/late/SKILL.md": skillText("late", "Two steps.", "late body")})
	if err := os.Chtimes(late, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
	if s, ok := lib.Skill("late"); !ok || s.Dir != "team/late" {
		t.Fatalf("the SKILL.md written into a folder already listed: %v %v", s, ok)
	}
	if r := loadIn(t, tk, "s", "late", "SKILL.md"); !strings.Contains(r.Text(), "late body") {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	// A broken one added is a problem, found the same way.
	writeFiles(t, root, map[string]string{"bad/SKILL.md": "---\nname: [\n---\n"})
	if ps := lib.Problems(); len(ps) != 1 || ps[0].Path != "bad/SKILL.md" {
		t.Fatalf("problems %v", ps)
	}
}

// TestSkillRemovedOnDiskIsGone: a skill folder removed from disk leaves the
// listing without Reload, and a call that still names it (the model was
// offered it) is told it was removed, with what it can load instead.
func TestSkillRemovedOnDiskIsGone(t *testing.T) {
	root, lib, tk, ld := guideAndOther(t)
	if got := skillEnum(t, tk, "s"); !slices.Equal(got, []string{"guide", "other"}) {
		t.Fatalf("enum %v", got)
	}
	if err := os.RemoveAll(filepath.Join(root, "guide")); err != nil {
		t.Fatal(err)
	}
	if _, ok := lib.Skill("guide"); ok {
		t.Error("Skill finds a removed skill")
	}
	if got := skillEnum(t, tk, "s"); !slices.Equal(got, []string{"other"}) {
		t.Errorf("enum after removal %v", got)
	}
	if strings.Contains(ld.Prompt("s"), `"guide"`) {
		t.Errorf("prompt still lists it:\n%s", ld.Prompt("s"))
	}
	r := loadIn(t, tk, "s", "guide", "SKILL.md")
	if r.State != events.StateError || !errors.Is(r.Err, skills.ErrSkillGone) ||
		!strings.Contains(r.Text(), `cannot load skill "guide": skill no longer available: skill "guide" was removed`) ||
		!strings.Contains(r.Text(), "Skills you can load: other") {
		t.Fatalf("removed: %s %q", r.State, r.Text())
	}
	// Never offered to this session: the engine's own refusal.
	r = loadIn(t, tk, "t", "guide", "SKILL.md")
	if r.State != events.StateError || !strings.Contains(r.Text(), `must be one of "other"`) {
		t.Fatalf("another session: %s %q", r.State, r.Text())
	}
}

// TestSkillAddedOnDiskStaysConfined: what is added to a repository after
// the library was made is held to the same rules as at the first scan: a
// link to a folder outside is not entered, a SKILL.md that links out is
// refused (a problem, never listed), and hostile paths are still refused
// in an added skill.
func TestSkillAddedOnDiskStaysConfined(t *testing.T) {
	root, lib, tk, _ := guideAndOther(t)
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"stolen/SKILL.md": skillText("stolen", "Outside.", "SECRET"), "secret.txt": "SECRET"})
	if err := os.Symlink(filepath.Join(outside, "stolen"), filepath.Join(root, "stolen")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "leak"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "stolen", "SKILL.md"), filepath.Join(root, "leak", "SKILL.md")); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, root, map[string]string{"added/SKILL.md": skillText("added", "Added.", "added body")})
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "added", "secret.txt")); err != nil {
		t.Fatal(err)
	}

	var names []string
	for _, s := range lib.Skills() {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"added", "guide", "other"}) {
		t.Fatalf("skills %v", names)
	}
	if ps := lib.Problems(); len(ps) != 1 || ps[0].Path != "leak/SKILL.md" || !errors.Is(ps[0].Err, skills.ErrBadPath) {
		t.Fatalf("problems %v", ps)
	}
	for _, p := range []string{"secret.txt", "../guide/SKILL.md", "/etc/passwd", "./SKILL.md", "."} {
		r := loadIn(t, tk, "s", "added", p)
		if r.State != events.StateError || strings.Contains(r.Text(), "SECRET") {
			t.Errorf("%q: %s %q", p, r.State, r.Text())
		}
	}
	for _, id := range []string{"stolen", "leak"} {
		if r := loadIn(t, tk, "s", id, "SKILL.md"); r.State != events.StateError || strings.Contains(r.Text(), "SECRET") {
			t.Errorf("%s: %s %q", id, r.State, r.Text())
		}
	}
}

// TestWithdrawnSkillStaysRefused: a skill the session was offered and may
// no longer load, though it is still on disk (the session got a library
// of its own instead of the shared one), is refused, saying so, never
// loaded from the library it was offered from.
func TestWithdrawnSkillStaysRefused(t *testing.T) {
	_, _, tk, ld := guideAndOther(t)
	if r := loadIn(t, tk, "s", "guide", "SKILL.md"); r.State != events.StateSuccess {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	own := t.TempDir()
	writeFiles(t, own, map[string]string{"mine/SKILL.md": skillText("mine", "Mine.", "mine body")})
	ld.SetSessionLibrary("s", dirLibrary(t, "own", own), skills.InsteadOfShared)
	r := loadIn(t, tk, "s", "guide", "SKILL.md")
	if r.State != events.StateError || strings.Contains(r.Text(), "version one") ||
		!strings.Contains(r.Text(), `skill "guide" is no longer one this session can load. Skills you can load: mine`) {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	if got := skillEnum(t, tk, "s"); !slices.Equal(got, []string{"mine"}) {
		t.Errorf("enum %v", got)
	}
}
