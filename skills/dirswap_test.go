package skills_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/skills"
	"github.com/toolstream/toolstream/toolkit"
)

// TestDirFollowsAFolderSwappedIn: a deploy that builds a new skills folder
// and renames it into place (or switches a symbolic link to it) is read by
// the next Reload, and a load of a skill that changed in the swap reads
// the new folder with no Reload.
func TestDirFollowsAFolderSwappedIn(t *testing.T) {
	for _, how := range []string{"rename", "symlink"} {
		t.Run(how, func(t *testing.T) {
			base := t.TempDir()
			live := filepath.Join(base, "skills")
			v1 := map[string]string{
				"guide/SKILL.md": skillText("guide", "Old guide.", "old body"),
				"gone/SKILL.md":  skillText("gone", "Dropped in v2.", "gone body"),
			}
			v2 := map[string]string{
				"guide/SKILL.md":    skillText("guide", "New guide.", "new body, longer"),
				"guide/notes.txt":   "new notes",
				"added/SKILL.md":    skillText("added", "New in v2.", "added body"),
				"added/escape.txt":  "", // replaced by a link below
				"../outside/secret": "SENTINEL",
			}
			if how == "rename" {
				writeFiles(t, live, v1)
			} else {
				writeFiles(t, filepath.Join(base, "v1"), v1)
				if err := os.Symlink("v1", live); err != nil {
					t.Fatal(err)
				}
			}
			lib := dirLibrary(t, "disk", live)
			tk := toolkit.New()
			t.Cleanup(func() { tk.Close(context.Background()) })
			if _, err := skills.Install(tk, lib); err != nil {
				t.Fatal(err)
			}
			if r := loadIn(t, tk, "s", "guide", "SKILL.md"); !strings.Contains(r.Text(), "old body") {
				t.Fatalf("%q", r.Text())
			}

			// Build the new folder, then swap it in.
			next := filepath.Join(base, "v2")
			writeFiles(t, next, v2)
			esc := filepath.Join(next, "added", "escape.txt")
			os.Remove(esc)
			if err := os.Symlink("../../outside/secret", esc); err != nil {
				t.Fatal(err)
			}
			if how == "rename" {
				if err := os.Rename(live, filepath.Join(base, "skills.old")); err != nil {
					t.Fatal(err)
				}
				// Between the two renames nothing is at the path: a
				// rescan fails and the library keeps what it had.
				if err := lib.Reload(); err == nil || !strings.Contains(err.Error(), `repository "disk"`) {
					t.Fatalf("reload with the folder missing: %v", err)
				}
				if got := skillEnum(t, tk, "s"); !slices.Equal(got, []string{"gone", "guide"}) {
					t.Fatalf("enum with the folder missing: %v", got)
				}
				if err := os.Rename(next, live); err != nil {
					t.Fatal(err)
				}
			} else {
				tmp := filepath.Join(base, "skills.tmp")
				if err := os.Symlink("v2", tmp); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(tmp, live); err != nil { // atomic
					t.Fatal(err)
				}
			}

			// A load notices the change and rescans the folder now there.
			if r := loadIn(t, tk, "s", "guide", "SKILL.md"); r.State != events.StateSuccess || !strings.Contains(r.Text(), "new body, longer") {
				t.Fatalf("load after the swap: %s %q", r.State, r.Text())
			}
			if r := loadIn(t, tk, "s", "guide", "notes.txt"); !strings.Contains(r.Text(), "new notes") {
				t.Fatalf("file after the swap: %s %q", r.State, r.Text())
			}
			if err := lib.Reload(); err != nil {
				t.Fatal(err)
			}
			if got := skillEnum(t, tk, "s"); !slices.Equal(got, []string{"added", "guide"}) {
				t.Fatalf("enum after the swap and Reload: %v", got)
			}
			// The new folder is held to the same confinement.
			r := loadIn(t, tk, "s", "added", "escape.txt")
			if r.State != events.StateError || strings.Contains(r.Text(), "SENTINEL") {
				t.Fatalf("escaping link in the new folder: %s %q", r.State, r.Text())
			}
		})
	}
}

// TestDirRelativePath: Dir makes its path absolute, so a later change of
// the working directory does not change the repository.
func TestDirRelativePath(t *testing.T) {
	base := t.TempDir()
	writeFiles(t, base, map[string]string{"skills/guide/SKILL.md": skillText("guide", "A guide.", "body")})
	t.Chdir(base)
	repo, err := skills.Dir("rel", "skills")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	lib, err := skills.NewLibrary(repo)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := lib.Skill("guide")
	if !ok {
		t.Fatalf("skills %v, problems %v", lib.Skills(), lib.Problems())
	}
	if _, err := lib.ReadResource(s, "SKILL.md", 0); err != nil {
		t.Fatal(err)
	}
}
