package skills_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/skills"
	"github.com/toolstream/toolstream/toolkit"
)

// A path of any length gets an error of bounded size that says what is
// wrong: the model must not get its megabyte of path back (twice).
func TestLoadVeryLongPathErrorIsShort(t *testing.T) {
	f := newLoaderFixture(t)
	for _, n := range []int{skills.MaxPathBytes + 1, 100_000, 1 << 20} {
		for _, p := range []string{strings.Repeat("a", n), strings.Repeat("../", n/3+1), strings.Repeat("é", n/2+1)} {
			r := f.load(t, "s", "analysis", p)
			if r.State != events.StateError || !strings.Contains(r.Text(), fmt.Sprintf("more than the limit of %d", skills.MaxPathBytes)) {
				t.Fatalf("%d bytes: %s %.300q", len(p), r.State, r.Text())
			}
			if len(r.Text()) > 1000 {
				t.Fatalf("a path of %d bytes gave an error of %d bytes: %.300q...", len(p), len(r.Text()), r.Text())
			}
		}
	}
	lib := f.lib
	s, _ := lib.Skill("analysis")
	if _, err := lib.ReadResource(s, strings.Repeat("x/", 50_000), 0); err == nil || len(err.Error()) > 500 {
		t.Fatalf("ReadResource error of %d bytes", len(fmt.Sprint(err)))
	}
}

// With the default read limit (WithResourceLimit(0)), a truncated file
// says how many bytes are shown, not "0".
func TestLoadTruncatedWithDefaultLimitSaysHowMuch(t *testing.T) {
	fsys := fstest.MapFS{
		"big/SKILL.md": skillFile("big", "Big file.", "", "Read data.txt."),
		"big/data.txt": {Data: []byte(strings.Repeat("z", skills.DefaultResourceLimit+100))},
	}
	lib, err := skills.NewLibrary(skills.Repository{Name: "r", FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int64{0, -5} {
		tk := toolkit.New()
		t.Cleanup(func() { tk.Close(context.Background()) })
		if _, err := skills.Install(tk, lib, skills.WithResourceLimit(limit)); err != nil {
			t.Fatal(err)
		}
		s, _ := tk.Session("s")
		args, _ := json.Marshal(map[string]string{"skillId": "big", "path": "data.txt"})
		r := s.Run(context.Background(), []toolkit.Call{{ID: "c", Name: skills.LoadTool, Args: args}})[0]
		want := fmt.Sprintf("[truncated: the file has %d bytes; only the first %d are shown]", skills.DefaultResourceLimit+100, skills.DefaultResourceLimit)
		if r.State != events.StateSuccess || !strings.HasSuffix(r.Text(), want) {
			t.Fatalf("limit %d: %s ...%q", limit, r.State, r.Text()[max(0, len(r.Text())-120):])
		}
	}
}

// A skill removed (its folder gone) after load_skill_through_path checked
// it and before it read the file: the model is told the skill is gone and
// which skills it can load, not that the file does not exist. The window:
// the skill changed on disk before the load, so the load reads it again and
// asks the filter about it as read now; the filter removes the folder.
func TestLoadSkillRemovedWhileLoading(t *testing.T) {
	base := t.TempDir()
	writeFiles(t, base, map[string]string{
		"one/SKILL.md": skillText("one", "Goes away.", "Read ref.md."),
		"one/ref.md":   "reference",
		"two/SKILL.md": skillText("two", "Stays.", "Body."),
	})
	lib := dirLibrary(t, "disk", base)
	tk := toolkit.New()
	t.Cleanup(func() { tk.Close(context.Background()) })
	var removed atomic.Bool
	removeOnCheck := func(_ string, s *skills.Skill) bool {
		if s.Description == "Edited, then gone." && !removed.Swap(true) {
			if err := os.RemoveAll(filepath.Join(base, "one")); err != nil {
				t.Error(err)
			}
		}
		return true
	}
	if _, err := skills.Install(tk, lib, skills.WithFilter(removeOnCheck)); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, base, map[string]string{"one/SKILL.md": skillText("one", "Edited, then gone.", "Read ref.md.")})
	r := loadIn(t, tk, "s", "one", "ref.md")
	if !removed.Load() {
		t.Fatal("the load did not check the edited skill: the folder was not removed in its window")
	}
	if r.State != events.StateError || !strings.Contains(r.Text(), `skill "one" was removed`) || !strings.Contains(r.Text(), "Skills you can load: two") {
		t.Fatalf("%s: %q", r.State, r.Text())
	}
}

// Several sessions load the same skill at once while its SKILL.md is
// edited: every load succeeds with the instructions before or after the
// edit, never a mix or an error, and each session records the load.
func TestConcurrentLoadsWhileEdited(t *testing.T) {
	base := t.TempDir()
	writeFiles(t, base, map[string]string{"one/SKILL.md": skillText("one", "Edited.", "BODY-OLD")})
	lib := dirLibrary(t, "disk", base)
	tk := toolkit.New()
	t.Cleanup(func() { tk.Close(context.Background()) })
	ld, err := skills.Install(tk, lib)
	if err != nil {
		t.Fatal(err)
	}
	const sessions = 8
	results := make(chan toolkit.Result, sessions*3)
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			for range 3 {
				results <- loadIn(t, tk, fmt.Sprintf("s%d", i), "one", "SKILL.md")
			}
		})
		if i == sessions/2 {
			// Written aside and renamed into place, as editors save.
			writeFiles(t, base, map[string]string{"new.md": skillText("one", "Edited.", "BODY-NEW, longer")})
			if err := os.Rename(filepath.Join(base, "new.md"), filepath.Join(base, "one/SKILL.md")); err != nil {
				t.Fatal(err)
			}
		}
	}
	wg.Wait()
	close(results)
	for r := range results {
		old, cur := strings.Contains(r.Text(), "BODY-OLD"), strings.Contains(r.Text(), "BODY-NEW, longer")
		if r.State != events.StateSuccess || old == cur {
			t.Fatalf("%s: %q", r.State, r.Text())
		}
	}
	for i := range sessions {
		if got := ld.Loaded(fmt.Sprintf("s%d", i)); len(got) != 1 || got[0] != "one" {
			t.Fatalf("session %d loaded %v", i, got)
		}
	}
	if r := loadIn(t, tk, "late", "one", "SKILL.md"); !strings.Contains(r.Text(), "BODY-NEW, longer") {
		t.Fatalf("after the edit: %q", r.Text())
	}
}
