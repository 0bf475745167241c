package skills

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Repository is a source of skills: any fs.FS (an embed.FS, os.DirFS,
// fstest.MapFS, ...) under a name.
type Repository struct {
	// Name identifies the repository in a [Library]; it must be unique and
	// non-empty there.
	Name string
	// FS holds the skills.
	FS fs.FS
}

// Dir returns a repository over a folder on disk. The folder is opened with
// os.OpenRoot, so no symbolic link can lead outside it even before
// [Library.ReadResource] applies its own, stricter, per-skill rule. The
// folder stays open for the life of the process.
func Dir(name, path string) (Repository, error) {
	root, err := os.OpenRoot(path)
	if err != nil {
		return Repository{}, fmt.Errorf("skills: opening repository %q: %w", name, err)
	}
	return Repository{Name: name, FS: root.FS()}, nil
}

// Problem is a skill that could not be loaded: which file, and why.
type Problem struct {
	// Repository is the name of the repository.
	Repository string
	// Path is the SKILL.md path inside the repository (or the folder that
	// could not be read).
	Path string
	// Err says what is wrong.
	Err error
}

// Error returns "<repo>: <path>: <err>".
func (p Problem) Error() string {
	return fmt.Sprintf("%s: %s: %v", p.Repository, p.Path, p.Err)
}

// Unwrap returns p.Err.
func (p Problem) Unwrap() error { return p.Err }

// Library is the set of skills of several repositories. When two
// repositories have a skill with the same name, the one in the later
// repository (in the order given to [NewLibrary]) wins, so that a later,
// more specific, repository can override a shared one. A Library is safe
// for concurrent use, including Reload while others read.
type Library struct {
	repos  []Repository
	byRepo map[string]fs.FS

	reloading sync.Mutex // one scan at a time, so the last Reload's result stays
	state     atomic.Pointer[libraryState]
}

// libraryState is one scan's result; it is never modified once stored.
type libraryState struct {
	sorted   []*Skill
	byName   map[string]*Skill
	problems []Problem
}

// NewLibrary loads every skill of the repositories. Every folder, at any
// depth, that holds a file named SKILL.md is a skill; folders are visited in
// lexical order, compared folder by folder (the order of fs.WalkDir), and
// the walk does not look for more skills inside a skill's folder.
//
// A skill whose SKILL.md is broken is left out and reported by
// [Library.Problems]; the others still load. When two skills of one
// repository share a name the first one wins and the second is a Problem.
// An error is returned only when a repository cannot be walked at all, or
// when the repositories are misconfigured (nil FS, empty or repeated name).
func NewLibrary(repos ...Repository) (*Library, error) {
	l := &Library{repos: slices.Clone(repos), byRepo: make(map[string]fs.FS, len(repos))}
	for i, r := range repos {
		switch {
		case r.Name == "":
			return nil, fmt.Errorf("skills: repository %d has no name", i)
		case r.FS == nil:
			return nil, fmt.Errorf("skills: repository %q has no file system", r.Name)
		}
		if _, dup := l.byRepo[r.Name]; dup {
			return nil, fmt.Errorf("skills: two repositories are named %q", r.Name)
		}
		l.byRepo[r.Name] = r.FS
	}
	if err := l.Reload(); err != nil {
		return nil, err
	}
	return l, nil
}

// Reload scans the repositories again and swaps in the result atomically,
// picking up added, changed and removed skills and files. On error the
// previous state stays.
func (l *Library) Reload() error {
	l.reloading.Lock()
	defer l.reloading.Unlock()
	st := &libraryState{byName: map[string]*Skill{}}
	for _, r := range l.repos {
		found, problems, err := scanRepository(r)
		if err != nil {
			return fmt.Errorf("skills: repository %q: %w", r.Name, err)
		}
		first := map[string]string{} // skill name -> SKILL.md path, within r
		for _, s := range found {
			p := path.Join(s.Dir, skillFileName)
			if prev, dup := first[s.Name]; dup {
				problems = append(problems, Problem{r.Name, p, fmt.Errorf("skill name %q is already used by %s in this repository", s.Name, prev)})
				continue
			}
			first[s.Name] = p
			st.byName[s.Name] = s // a later repository overrides
		}
		slices.SortStableFunc(problems, func(a, b Problem) int { return comparePaths(a.Path, b.Path) })
		st.problems = append(st.problems, problems...)
	}
	for _, s := range st.byName {
		st.sorted = append(st.sorted, s)
	}
	slices.SortFunc(st.sorted, func(a, b *Skill) int { return cmp.Compare(a.Name, b.Name) })
	l.state.Store(st)
	return nil
}

// Skills returns the skills, sorted by name.
func (l *Library) Skills() []*Skill {
	return slices.Clone(l.state.Load().sorted)
}

// Skill returns the skill with the given name.
func (l *Library) Skill(name string) (*Skill, bool) {
	s, ok := l.state.Load().byName[name]
	return s, ok
}

// Problems returns the skills that the last load or reload had to leave
// out, by repository and then path.
func (l *Library) Problems() []Problem {
	return slices.Clone(l.state.Load().problems)
}

// skillFS returns the file system of the repository s came from.
func (l *Library) skillFS(s *Skill) (fs.FS, error) {
	if s == nil {
		return nil, errors.New("skills: nil skill")
	}
	fsys, ok := l.byRepo[s.Repository]
	if !ok {
		return nil, fmt.Errorf("skills: skill %q comes from repository %q, which is not in this library", s.Name, s.Repository)
	}
	if !fs.ValidPath(s.Dir) {
		return nil, fmt.Errorf("skills: skill %q has an invalid folder %q", s.Name, s.Dir)
	}
	return fsys, nil
}

// scanRepository finds the skills of r in walk order. Only a failure to read
// the repository's root is an error; anything else is a Problem.
func scanRepository(r Repository) ([]*Skill, []Problem, error) {
	var (
		found    []*Skill
		problems []Problem
	)
	var visit func(dir string) error
	visit = func(dir string) error {
		entries, err := fs.ReadDir(r.FS, dir)
		if err != nil {
			if dir == "." {
				return err
			}
			problems = append(problems, Problem{r.Name, dir, fmt.Errorf("cannot read the folder: %w", err)})
			return nil
		}
		for _, e := range entries {
			if e.Name() == skillFileName && !e.IsDir() {
				s, err := loadSkill(r, dir)
				if err != nil {
					problems = append(problems, Problem{r.Name, path.Join(dir, skillFileName), err})
				} else {
					found = append(found, s)
				}
				return nil // a skill's subfolders are its resources
			}
		}
		for _, e := range entries {
			// Links to folders are not entered: that is how walks loop.
			if e.IsDir() {
				if err := visit(path.Join(dir, e.Name())); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := visit("."); err != nil {
		return nil, nil, err
	}
	return found, problems, nil
}

// loadSkill reads and parses dir/SKILL.md. It goes through resolveInSkill so
// that a SKILL.md link is held to the same rules as any resource.
func loadSkill(r Repository, dir string) (*Skill, error) {
	full, err := resolveInSkill(r.FS, dir, skillFileName, path.Base(dir))
	if err != nil {
		return nil, err
	}
	f, err := r.FS.Open(full)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && info.Size() > MaxSkillFileBytes {
		return nil, fmt.Errorf("SKILL.md is %d bytes, more than the limit of %d", info.Size(), MaxSkillFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSkillFileBytes+1))
	if err != nil {
		return nil, err
	}
	s, err := Parse(data)
	if err != nil {
		return nil, err
	}
	s.Repository, s.Dir = r.Name, dir
	return s, nil
}

// comparePaths orders slash paths folder by folder, the order of a walk.
func comparePaths(a, b string) int {
	for a != "" && b != "" {
		var ea, eb string
		ea, a, _ = strings.Cut(a, "/")
		eb, b, _ = strings.Cut(b, "/")
		if c := cmp.Compare(ea, eb); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}
