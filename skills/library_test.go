package skills

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
)

//go:embed testdata/repo
var skEmbedded embed.FS

// skSkillFile returns a SKILL.md with the given name and description.
func skSkillFile(name, desc string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte(fmt.Sprintf("---\nname: %s\ndescription: %s\n---\nBody of %s.\n", name, desc, name))}
}

func skNames(ss []*Skill) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}

func skNewLibrary(t *testing.T, repos ...Repository) *Library {
	t.Helper()
	l, err := NewLibrary(repos...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLibraryMapFS(t *testing.T) {
	fsys := fstest.MapFS{
		"SKILL.md.txt":                 {Data: []byte("not a skill")},
		"a/SKILL.md":                   skSkillFile("a", "Skill a."),
		"a/nested/SKILL.md":            skSkillFile("inner", "Inside a's folder: a resource, not a skill."),
		"deep/er/still/c/SKILL.md":     skSkillFile("c", "Deep skill."),
		"deep/er/still/c/notes.md":     {Data: []byte("n")},
		"b/SKILL.md":                   skSkillFile("b", "Skill b."),
		"bad/SKILL.md":                 {Data: []byte("---\nname: bad\n---\n")},
		"bad2/SKILL.md":                {Data: []byte("no front matter")},
		"dup/first/SKILL.md":           skSkillFile("twin", "First twin."),
		"dup/second/SKILL.md":          skSkillFile("twin", "Second twin."),
		"empty/dir/is/fine/readme.txt": {Data: []byte("x")},
	}
	l := skNewLibrary(t, Repository{Name: "main", FS: fsys})

	if got, want := skNames(l.Skills()), []string{"a", "b", "c", "twin"}; !slices.Equal(got, want) {
		t.Errorf("skills = %v, want %v", got, want)
	}
	c, ok := l.Skill("c")
	if !ok || c.Dir != "deep/er/still/c" || c.Repository != "main" || c.Body != "Body of c." {
		t.Errorf("skill c = %+v", c)
	}
	if tw, _ := l.Skill("twin"); tw.Description != "First twin." || tw.Dir != "dup/first" {
		t.Errorf("twin = %+v, want the first in path order", tw)
	}
	if _, ok := l.Skill("inner"); ok {
		t.Error("a SKILL.md inside a skill's folder was loaded as a skill")
	}

	probs := l.Problems()
	if len(probs) != 3 {
		t.Fatalf("problems = %v", probs)
	}
	want := []struct{ path, msg string }{
		{"bad/SKILL.md", `no "description"`},
		{"bad2/SKILL.md", `must start with a line "---"`},
		{"dup/second/SKILL.md", `skill name "twin" is already used by dup/first/SKILL.md`},
	}
	for i, w := range want {
		p := probs[i]
		if p.Repository != "main" || p.Path != w.path || !strings.Contains(p.Err.Error(), w.msg) {
			t.Errorf("problem %d = %v, want %s: ...%s", i, p, w.path, w.msg)
		}
		if !strings.HasPrefix(p.Error(), "main: "+w.path+": ") {
			t.Errorf("Error() = %q", p.Error())
		}
	}
}

func TestLibraryPrecedence(t *testing.T) {
	shared := fstest.MapFS{
		"x/SKILL.md": skSkillFile("x", "Shared x."),
		"y/SKILL.md": skSkillFile("y", "Shared y."),
	}
	local := fstest.MapFS{
		"mine/x/SKILL.md": skSkillFile("x", "Local x."),
	}
	l := skNewLibrary(t, Repository{"shared", shared}, Repository{"local", local})
	x, _ := l.Skill("x")
	if x.Description != "Local x." || x.Repository != "local" || x.Dir != "mine/x" {
		t.Errorf("x = %+v, want the later repository's", x)
	}
	if y, _ := l.Skill("y"); y.Repository != "shared" {
		t.Errorf("y = %+v", y)
	}
	if len(l.Problems()) != 0 {
		t.Errorf("an override is not a problem: %v", l.Problems())
	}
	// The reverse order gives the other one.
	l = skNewLibrary(t, Repository{"local", local}, Repository{"shared", shared})
	x, _ = l.Skill("x")
	if x.Repository != "shared" {
		t.Errorf("x = %+v", x)
	}
	// Resources come from the winning repository.
	if r, err := l.ReadResource(x, "SKILL.md", 0); err != nil || !strings.Contains(string(r.Data), "Shared x.") {
		t.Errorf("read %q, %v", r.Data, err)
	}
}

func TestLibraryRootSkill(t *testing.T) {
	l := skNewLibrary(t, Repository{"r", fstest.MapFS{
		"SKILL.md":    skSkillFile("root", "At the root."),
		"x/SKILL.md":  skSkillFile("x", "Not a skill: inside root's folder."),
		"x/other.txt": {Data: []byte("o")},
	}})
	if got := skNames(l.Skills()); !slices.Equal(got, []string{"root"}) {
		t.Fatalf("skills = %v", got)
	}
	s, _ := l.Skill("root")
	if s.Dir != "." {
		t.Errorf("dir = %q", s.Dir)
	}
	res, err := l.Resources(s)
	if err != nil || !slices.Equal(res, []string{"SKILL.md", "x/SKILL.md", "x/other.txt"}) {
		t.Errorf("resources = %v, %v", res, err)
	}
}

func TestNewLibraryErrors(t *testing.T) {
	ok := fstest.MapFS{}
	cases := []struct {
		repos []Repository
		want  string
	}{
		{[]Repository{{Name: "", FS: ok}}, "has no name"},
		{[]Repository{{Name: "a"}}, "has no file system"},
		{[]Repository{{"a", ok}, {"a", ok}}, `two repositories are named "a"`},
		{[]Repository{{"gone", os.DirFS(filepath.Join(t.TempDir(), "missing"))}}, `repository "gone"`},
	}
	for _, c := range cases {
		if _, err := NewLibrary(c.repos...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewLibrary(%v) error = %v, want %q", c.repos, err, c.want)
		}
	}
	if l, err := NewLibrary(); err != nil || len(l.Skills()) != 0 {
		t.Errorf("empty library: %v", err)
	}
}

// skWriteTree writes files (slash path -> content) under dir.
func skWriteTree(t *testing.T, dir string, files map[string]string) {
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

func skSkillText(name, desc string) string {
	return fmt.Sprintf("---\nname: %s\ndescription: %s\n---\nBody.\n", name, desc)
}

func TestDirAndReload(t *testing.T) {
	dir := t.TempDir()
	skWriteTree(t, dir, map[string]string{
		"one/SKILL.md":     skSkillText("one", "First version."),
		"one/data/x.txt":   "x",
		"two/SKILL.md":     skSkillText("two", "Two."),
		"three/SKILL.md":   skSkillText("three", "Three."),
		"broken/SKILL.md":  "---\nname: [\n---\n",
		"nothing/here.txt": "h",
	})
	repo, err := Dir("disk", dir)
	if err != nil {
		t.Fatal(err)
	}
	l := skNewLibrary(t, repo)
	if got := skNames(l.Skills()); !slices.Equal(got, []string{"one", "three", "two"}) {
		t.Fatalf("skills = %v", got)
	}
	if p := l.Problems(); len(p) != 1 || p[0].Path != "broken/SKILL.md" || !strings.Contains(p[0].Error(), "line 2") {
		t.Errorf("problems = %v", p)
	}
	old, _ := l.Skill("one")

	// Change one, add four, remove three, fix broken, add a file.
	skWriteTree(t, dir, map[string]string{
		"one/SKILL.md":    skSkillText("one", "Second version."),
		"one/data/y.txt":  "y",
		"new/SKILL.md":    skSkillText("four", "Added."),
		"broken/SKILL.md": skSkillText("fixed", "Fixed."),
	})
	if err := os.RemoveAll(filepath.Join(dir, "three")); err != nil {
		t.Fatal(err)
	}
	if err := l.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := skNames(l.Skills()); !slices.Equal(got, []string{"fixed", "four", "one", "two"}) {
		t.Errorf("skills after reload = %v", got)
	}
	if s, _ := l.Skill("one"); s.Description != "Second version." {
		t.Errorf("one = %+v", s)
	}
	if _, ok := l.Skill("three"); ok {
		t.Error("removed skill still there")
	}
	if len(l.Problems()) != 0 {
		t.Errorf("problems = %v", l.Problems())
	}
	if old.Description != "First version." {
		t.Error("reload modified a skill handed out before")
	}
	s, _ := l.Skill("one")
	if res, err := l.Resources(s); err != nil || !slices.Equal(res, []string{"SKILL.md", "data/x.txt", "data/y.txt"}) {
		t.Errorf("resources = %v, %v", res, err)
	}
}

func TestDirMissing(t *testing.T) {
	if _, err := Dir("x", filepath.Join(t.TempDir(), "nope")); err == nil || !strings.Contains(err.Error(), `repository "x"`) {
		t.Errorf("err = %v", err)
	}
}

func TestEmbedAndDiskTestdata(t *testing.T) {
	sub, err := fs.Sub(skEmbedded, "testdata/repo")
	if err != nil {
		t.Fatal(err)
	}
	disk, err := Dir("disk", filepath.Join("testdata", "repo"))
	if err != nil {
		t.Fatal(err)
	}
	for _, repo := range []Repository{{"embedded", sub}, disk} {
		t.Run(repo.Name, func(t *testing.T) {
			l := skNewLibrary(t, repo)
			if got := skNames(l.Skills()); !slices.Equal(got, []string{"alpha", "beta"}) {
				t.Fatalf("skills = %v", got)
			}
			if p := l.Problems(); len(p) != 1 || p[0].Path != "broken/SKILL.md" {
				t.Errorf("problems = %v", p)
			}
			a, _ := l.Skill("alpha")
			if !slices.Equal(a.Groups, []string{"files"}) || a.Body != "# Alpha\n\nRead reference.md first." {
				t.Errorf("alpha = %+v", a)
			}
			res, err := l.Resources(a)
			if err != nil || !slices.Equal(res, []string{"SKILL.md", "reference.md", "scripts/run.sh"}) {
				t.Errorf("resources = %v, %v", res, err)
			}
			r, err := l.ReadResource(a, "scripts/run.sh", 0)
			if err != nil || string(r.Data) != "#!/bin/sh\necho alpha\n" || r.Binary {
				t.Errorf("read = %+v, %v", r, err)
			}
			if _, err := l.ReadResource(a, "../group/beta/SKILL.md", 0); !errors.Is(err, ErrBadPath) {
				t.Errorf("err = %v", err)
			}
		})
	}
}

// skBrokenFS fails to list its root.
type skBrokenFS struct{}

func (skBrokenFS) Open(string) (fs.File, error) { return nil, fs.ErrPermission }

func TestLibraryUnwalkableRepository(t *testing.T) {
	_, err := NewLibrary(Repository{"ok", fstest.MapFS{"a/SKILL.md": skSkillFile("a", "A.")}}, Repository{"broken", skBrokenFS{}})
	if err == nil || !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), `"broken"`) {
		t.Errorf("err = %v", err)
	}
}

func TestLibraryUnreadableSubfolder(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads everything")
	}
	dir := t.TempDir()
	skWriteTree(t, dir, map[string]string{"a/SKILL.md": skSkillText("a", "A."), "locked/b/SKILL.md": skSkillText("b", "B.")})
	locked := filepath.Join(dir, "locked")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	repo, _ := Dir("d", dir)
	l := skNewLibrary(t, repo)
	if got := skNames(l.Skills()); !slices.Equal(got, []string{"a"}) {
		t.Errorf("skills = %v", got)
	}
	if p := l.Problems(); len(p) != 1 || p[0].Path != "locked" || !errors.Is(p[0], fs.ErrPermission) {
		t.Errorf("problems = %v", p)
	}
}

func TestLibraryOversizeSkillFile(t *testing.T) {
	big := skSkillText("big", "Big.") + strings.Repeat("x", maxSkillFileBytes)
	l := skNewLibrary(t, Repository{"r", fstest.MapFS{"big/SKILL.md": {Data: []byte(big)}, "ok/SKILL.md": skSkillFile("ok", "Ok.")}})
	if p := l.Problems(); len(p) != 1 || !strings.Contains(p[0].Error(), "more than the limit") {
		t.Errorf("problems = %v", p)
	}
	if got := skNames(l.Skills()); !slices.Equal(got, []string{"ok"}) {
		t.Errorf("skills = %v", got)
	}
}

func TestLibraryConcurrentReload(t *testing.T) {
	dir := t.TempDir()
	skWriteTree(t, dir, map[string]string{"a/SKILL.md": skSkillText("a", "A."), "a/f.txt": "f"})
	repo, _ := Dir("d", dir)
	l := skNewLibrary(t, repo)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				if i == 0 {
					if err := l.Reload(); err != nil {
						t.Error(err)
						return
					}
					continue
				}
				s, ok := l.Skill("a")
				if !ok {
					t.Error("skill a missing during reload")
					return
				}
				_ = l.Skills()
				_ = l.Problems()
				if r, err := l.ReadResource(s, "f.txt", 0); err != nil || string(r.Data) != "f" {
					t.Errorf("read %d: %q, %v", j, r.Data, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
