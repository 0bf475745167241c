package skills_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/skills"
)

// TestHalfWrittenSkillComesBack: an editor that truncates SKILL.md and
// writes it again leaves it briefly empty or with broken front matter. A
// load (or any rescan) that reads it then gets a precise error, and the
// skill stays in the session's list, so that once the file is valid again
// the next load gets it, with no Reload.
func TestHalfWrittenSkillComesBack(t *testing.T) {
	root, lib, tk, ld := guideAndOther(t)
	if r := loadIn(t, tk, "s", "guide", "SKILL.md"); !strings.Contains(r.Text(), "version one") {
		t.Fatalf("%q", r.Text())
	}

	for _, broken := range []string{"", "---\nname: gui", "---\nname: [\n---\n"} {
		// The load that reads the half-written file.
		writeFiles(t, root, map[string]string{"guide/SKILL.md": broken})
		r := loadIn(t, tk, "s", "guide", "SKILL.md")
		if r.State != events.StateError || !errors.Is(r.Err, skills.ErrSkillGone) ||
			!strings.Contains(r.Text(), `skill "guide" changed on disk and its SKILL.md is now broken`) {
			t.Fatalf("broken %q: %s %q", broken, r.State, r.Text())
		}
		// A rescan meanwhile (another skill's edit, a Reload) reads it too.
		if err := lib.Reload(); err != nil {
			t.Fatal(err)
		}
		if got := skillEnum(t, tk, "s"); !slices.Equal(got, []string{"guide", "other"}) {
			t.Fatalf("broken %q: enum %v, want guide still listed", broken, got)
		}
		if p := lib.Problems(); len(p) != 1 || p[0].Path != "guide/SKILL.md" {
			t.Fatalf("broken %q: problems %v", broken, p)
		}
		// Another load while it is broken: the same precise error, not
		// "unknown skill" or an enum refusal.
		r = loadIn(t, tk, "s2", "guide", "SKILL.md")
		if r.State != events.StateError || !strings.Contains(r.Text(), `its SKILL.md is now broken`) {
			t.Fatalf("broken %q, second load: %s %q", broken, r.State, r.Text())
		}
		// Written again: the next load gets it, with no Reload.
		writeFiles(t, root, map[string]string{"guide/SKILL.md": skillText("guide", "A guide, again.", "version two "+broken)})
		if r := loadIn(t, tk, "s", "guide", "SKILL.md"); r.State != events.StateSuccess || !strings.Contains(r.Text(), "version two") {
			t.Fatalf("after %q was fixed: %s %q", broken, r.State, r.Text())
		}
		if !strings.Contains(ld.Prompt("s"), "A guide, again.") || len(lib.Problems()) != 0 {
			t.Fatalf("after %q was fixed: prompt %q, problems %v", broken, ld.Prompt("s"), lib.Problems())
		}
	}
}
