package skills_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/skills"
	"github.com/toolstream/toolstream/toolkit"
)

// writeFiles writes files (slash path -> content) under dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func skillText(name, desc, body string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\n" + body + "\n"
}

func dirLibrary(t testing.TB, name, dir string) *skills.Library {
	t.Helper()
	repo, err := skills.Dir(name, dir)
	if err != nil {
		t.Fatal(err)
	}
	lib, err := skills.NewLibrary(repo)
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

func loadIn(t *testing.T, tk *toolkit.Toolkit, session, skill, path string) toolkit.Result {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"skillId": skill, "path": path})
	s, _ := tk.Session(session)
	return s.Run(context.Background(), []toolkit.Call{{ID: "l", Name: skills.LoadTool, Args: args}})[0]
}

// guideAndOther writes the skills guide ("version one") and other in a new
// directory and installs the loader of that directory's library on a new
// toolkit.
func guideAndOther(t *testing.T) (root string, lib *skills.Library, tk *toolkit.Toolkit, ld *skills.Loader) {
	t.Helper()
	root = t.TempDir()
	writeFiles(t, root, map[string]string{
		"guide/SKILL.md": skillText("guide", "A guide.", "version one"),
		"other/SKILL.md": skillText("other", "Another.", "other body"),
	})
	lib = dirLibrary(t, "disk", root)
	tk = toolkit.New()
	t.Cleanup(func() { tk.Close(context.Background()) })
	var err error
	ld, err = skills.Install(tk, lib)
	if err != nil {
		t.Fatal(err)
	}
	return root, lib, tk, ld
}

// skillEnum returns the skillId enum of the loader as a session sees it
// (nil when the session does not see the loader).
func skillEnum(t *testing.T, tk *toolkit.Toolkit, session string) []string {
	t.Helper()
	s, _ := tk.Session(session)
	defs, err := s.Definitions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range defs {
		if d.Name == skills.LoadTool {
			var sch struct {
				Properties struct {
					SkillID struct {
						Enum []string `json:"enum"`
					} `json:"skillId"`
				} `json:"properties"`
			}
			if err := json.Unmarshal(d.Parameters, &sch); err != nil {
				t.Fatal(err)
			}
			return sch.Properties.SkillID.Enum
		}
	}
	return nil
}

// TestSessionLibrariesIsolated: each session loads from its own
// repositories (a per-user folder) beside or instead of the shared
// library; one session can never load another's skill, by name, by a
// path, or by a link.
func TestSessionLibrariesIsolated(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"alice/notes/SKILL.md":     skillText("notes", "Alice's notes.", "ALICE-SECRET body"),
		"alice/notes/ref.md":       "alice ref",
		"alice/a-only/SKILL.md":    skillText("a-only", "Only Alice.", "A body"),
		"bob/notes/SKILL.md":       skillText("notes", "Bob's notes.", "BOB-SECRET body"),
		"bob/notes/ref.md":         "BOB-SECRET ref",
		"bob/b-only/SKILL.md":      skillText("b-only", "Only Bob.", "BOB-SECRET only"),
		"bob/b-only/private.md":    "BOB-SECRET private",
		"alice/notes/to-bob.md":    "placeholder",
		"alice/notes/shared-again": "x",
	})
	// A link from Alice's skill into Bob's folder.
	os.Remove(filepath.Join(root, "alice/notes/to-bob.md"))
	if err := os.Symlink(filepath.Join("..", "..", "bob", "notes", "SKILL.md"), filepath.Join(root, "alice/notes/to-bob.md")); err != nil {
		t.Fatal(err)
	}
	shared, err := skills.NewLibrary(skills.Repository{Name: "shared", FS: fstest.MapFS{
		"shared/SKILL.md": {Data: []byte(skillText("shared", "For everyone.", "shared body"))},
		"notes/SKILL.md":  {Data: []byte(skillText("notes", "Shared notes.", "shared notes body"))},
	}})
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New()
	t.Cleanup(func() { tk.Close(context.Background()) })
	ld, err := skills.Install(tk, shared)
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := dirLibrary(t, "alice", filepath.Join(root, "alice")), dirLibrary(t, "bob", filepath.Join(root, "bob"))
	ld.SetSessionLibrary("A", alice, skills.BesideShared)
	ld.SetSessionLibrary("B", bob, skills.InsteadOfShared)

	if got := skillEnum(t, tk, "A"); !slices.Equal(got, []string{"a-only", "notes", "shared"}) {
		t.Fatalf("A's skills %v", got)
	}
	if got := skillEnum(t, tk, "B"); !slices.Equal(got, []string{"b-only", "notes"}) {
		t.Fatalf("B's skills %v", got)
	}
	if got := skillEnum(t, tk, "C"); !slices.Equal(got, []string{"notes", "shared"}) {
		t.Fatalf("C's skills %v", got)
	}
	// The same name resolves in each session's own repositories.
	for session, want := range map[string]string{"A": "ALICE-SECRET body", "B": "BOB-SECRET body", "C": "shared notes body"} {
		if r := loadIn(t, tk, session, "notes", "SKILL.md"); r.State != events.StateSuccess || !strings.Contains(r.Text(), want) {
			t.Errorf("%s: %s %q", session, r.State, r.Text())
		}
	}
	if r := loadIn(t, tk, "B", "notes", "ref.md"); !strings.Contains(r.Text(), "BOB-SECRET ref") {
		t.Errorf("B ref: %q", r.Text())
	}
	// Every way from A to Bob's skills is refused, and nothing of Bob's shows.
	for _, tc := range []struct{ skill, path, want string }{
		{"b-only", "SKILL.md", "skillId: must be one of"},
		{"b-only", "private.md", "skillId: must be one of"},
		{"notes", "../../bob/notes/SKILL.md", "bad resource path"},
		{"notes", "to-bob.md", "bad resource path"},
		{"notes", "/etc/passwd", "bad resource path"},
		{"a-only", "../notes/ref.md", "bad resource path"},
	} {
		r := loadIn(t, tk, "A", tc.skill, tc.path)
		if r.State != events.StateError || !strings.Contains(r.Text(), tc.want) || strings.Contains(r.Text(), "BOB-SECRET") {
			t.Errorf("A %s %s: %s %q", tc.skill, tc.path, r.State, r.Text())
		}
	}
	if p := ld.Prompt("A"); strings.Contains(p, "b-only") || !strings.Contains(p, "Alice's notes.") {
		t.Errorf("A's prompt:\n%s", p)
	}
	if p := ld.Prompt("B"); strings.Contains(p, "shared") || strings.Contains(p, "a-only") {
		t.Errorf("B's prompt:\n%s", p)
	}
	// A closed session forgets its library.
	s, _ := tk.Session("B")
	s.Close()
	if got := skillEnum(t, tk, "B"); !slices.Equal(got, []string{"notes", "shared"}) {
		t.Fatalf("B after close %v", got)
	}
}

// TestNoSharedLibrary: with no shared library, only sessions given one see
// the loader.
func TestNoSharedLibrary(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"mine/SKILL.md": skillText("mine", "Mine.", "my body")})
	tk := toolkit.New()
	t.Cleanup(func() { tk.Close(context.Background()) })
	ld, err := skills.Install(tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	ld.SetSessionLibrary("A", dirLibrary(t, "user-a", root), skills.BesideShared)
	if got := skillEnum(t, tk, "A"); !slices.Equal(got, []string{"mine"}) {
		t.Fatalf("A %v", got)
	}
	if got := skillEnum(t, tk, "B"); got != nil {
		t.Fatalf("B sees the loader: %v", got)
	}
	if r := loadIn(t, tk, "B", "mine", "SKILL.md"); r.State != events.StateError || !strings.Contains(r.Text(), "no skills to load") {
		t.Fatalf("B: %s %q", r.State, r.Text())
	}
	if r := loadIn(t, tk, "A", "mine", "SKILL.md"); !strings.Contains(r.Text(), "my body") {
		t.Fatalf("A: %q", r.Text())
	}
}

// TestSkillRefreshesOnChange: a SKILL.md edited on disk is read again at
// the next load, with no Reload; a broken or removed one gives a clear
// error and leaves the list.
func TestSkillRefreshesOnChange(t *testing.T) {
	root, lib, tk, ld := guideAndOther(t)
	file := filepath.Join(root, "guide", "SKILL.md")
	if r := loadIn(t, tk, "s", "guide", "SKILL.md"); !strings.Contains(r.Text(), "version one") {
		t.Fatalf("%q", r.Text())
	}
	// A longer body.
	writeFiles(t, root, map[string]string{"guide/SKILL.md": skillText("guide", "A better guide.", "version two, longer")})
	if r := loadIn(t, tk, "s", "guide", "SKILL.md"); !strings.Contains(r.Text(), "version two, longer") || !strings.Contains(r.Text(), "A better guide.") {
		t.Fatalf("after an edit: %q", r.Text())
	}
	if !strings.Contains(ld.Prompt("s"), "A better guide.") {
		t.Fatalf("prompt not refreshed:\n%s", ld.Prompt("s"))
	}
	// The same size: the modification time tells.
	writeFiles(t, root, map[string]string{"guide/SKILL.md": skillText("guide", "A better guide.", "version 3!, longer")})
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(file, later, later); err != nil {
		t.Fatal(err)
	}
	if r := loadIn(t, tk, "s", "guide", "SKILL.md"); !strings.Contains(r.Text(), "version 3!, longer") {
		t.Fatalf("after a same-size edit: %q", r.Text())
	}
	// Broken.
	writeFiles(t, root, map[string]string{"guide/SKILL.md": "---\nname: [\n---\n"})
	r := loadIn(t, tk, "s", "guide", "SKILL.md")
	if r.State != events.StateError || !errors.Is(r.Err, skills.ErrSkillGone) ||
		!strings.Contains(r.Text(), `cannot load skill "guide": skill no longer available: skill "guide" changed on disk and its SKILL.md is now broken`) ||
		!strings.Contains(r.Text(), "Skills you can load: other") {
		t.Fatalf("broken: %s %q", r.State, r.Text())
	}
	// Fixed, then removed.
	writeFiles(t, root, map[string]string{"guide/SKILL.md": skillText("guide", "Back.", "version four")})
	lib.Reload()
	if r := loadIn(t, tk, "s", "guide", "SKILL.md"); !strings.Contains(r.Text(), "version four") {
		t.Fatalf("fixed: %q", r.Text())
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	r = loadIn(t, tk, "s", "guide", "SKILL.md")
	if r.State != events.StateError || !strings.Contains(r.Text(), `skill "guide" was removed: its SKILL.md is gone. Skills you can load: other`) {
		t.Fatalf("removed: %s %q", r.State, r.Text())
	}
	if got := skillEnum(t, tk, "s"); !slices.Equal(got, []string{"other"}) {
		t.Fatalf("enum after removal %v", got)
	}
	// The other skill was never disturbed.
	if r := loadIn(t, tk, "s", "other", "SKILL.md"); !strings.Contains(r.Text(), "other body") {
		t.Fatalf("%q", r.Text())
	}
}

// BenchmarkRefreshUnchanged: what the freshness check costs a load when
// nothing changed: the stat of a SKILL.md in a folder on disk, through the
// skill's folder opened as an os.Root.
func BenchmarkRefreshUnchanged(b *testing.B) {
	root := b.TempDir()
	writeFiles(b, root, map[string]string{"team/guide/SKILL.md": skillText("guide", "A guide.", "body")})
	lib := dirLibrary(b, "disk", root)
	s, _ := lib.Skill("guide")
	b.ReportAllocs()
	for b.Loop() {
		if got, err := lib.Refresh(s); err != nil || got != s {
			b.Fatal(err)
		}
	}
}

// TestRefreshConcurrentAndForeign: loads racing after an edit all get the
// new content; a skill of another library is refused, not looked up by
// name.
func TestRefreshConcurrentAndForeign(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"guide/SKILL.md": skillText("guide", "A guide.", "old")})
	lib := dirLibrary(t, "disk", root)
	tk := toolkit.New()
	t.Cleanup(func() { tk.Close(context.Background()) })
	if _, err := skills.Install(tk, lib); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, root, map[string]string{"guide/SKILL.md": skillText("guide", "A guide.", "the new content")})
	s, _ := tk.Session("s")
	calls := make([]toolkit.Call, 16)
	for i := range calls {
		calls[i] = toolkit.Call{ID: "l" + string(rune('a'+i)), Name: skills.LoadTool, Args: json.RawMessage(`{"skillId":"guide","path":"SKILL.md"}`)}
	}
	// Loads in one batch run one after another (the loader is serial); run
	// batches from several goroutines at once.
	done := make(chan []toolkit.Result, 4)
	for range 4 {
		go func() { done <- s.Run(context.Background(), calls) }()
	}
	for range 4 {
		for _, r := range <-done {
			if !strings.Contains(r.Text(), "the new content") {
				t.Fatalf("%s %q", r.State, r.Text())
			}
		}
	}
	other, err := skills.NewLibrary(skills.Repository{Name: "other", FS: fstest.MapFS{"guide/SKILL.md": {Data: []byte(skillText("guide", "x", "x"))}}})
	if err != nil {
		t.Fatal(err)
	}
	foreign, _ := other.Skill("guide")
	if _, err := lib.Refresh(foreign); err == nil || !strings.Contains(err.Error(), `repository "other", which is not in this library`) {
		t.Fatalf("foreign skill: %v", err)
	}
}
