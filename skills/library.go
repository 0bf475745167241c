package skills

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Repository is a source of skills under a name. For a folder on disk use
// [Dir]: its reads are confined by the operating system. Any other fs.FS
// (an embed.FS, fstest.MapFS, ...) works too, with the limits that
// [NewLibrary] describes.
type Repository struct {
	// Name identifies the repository in a [Library]; it must be unique and
	// non-empty there.
	Name string
	// FS holds the skills.
	FS fs.FS
}

// Dir returns a repository over a folder on disk, the safe form for skills
// on disk.
//
// The folder is named by its absolute path (path made absolute now) and
// opened with os.OpenRoot at every scan and every read, not held open: a
// new folder renamed into place at that path, or a symbolic link at that
// path switched to another folder (a deploy's atomic swap), is what the
// next scan reads: [Library.Reload], the next listing that notices a
// folder changed (see [Library.Skills]), or the next load that notices a
// changed SKILL.md (see [Library.Refresh]). The path itself is trusted:
// symbolic links in it are followed, as the operating system resolves
// them at each open. Dir fails when the folder cannot be opened now; a
// scan that cannot open it later fails (Reload keeps the previous state),
// and so does a read.
//
// Inside the folder, every read of a skill's file opens that skill's own
// folder as an os.Root and the file inside it, so the operating system
// refuses any way out of the skill folder: "..", a symbolic link that
// leaves it, or a file or folder swapped for such a link while reads run.
// Symbolic links that stay inside the skill folder are followed. Files and
// folders are opened without waiting, so a named pipe swapped in is
// refused rather than waited on. The FS of the Repository opens the
// folder the same way for each call.
func Dir(name, path string) (Repository, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Repository{}, fmt.Errorf("skills: repository %q: %w", name, err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return Repository{}, fmt.Errorf("skills: opening repository %q: %w", name, err)
	}
	root.Close()
	return Repository{Name: name, FS: &diskFS{dir: abs}}, nil
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
	byRepo map[string]*source

	reloading sync.Mutex // one scan at a time, so the last Reload's result stays
	state     atomic.Pointer[libraryState]
}

// libraryState is one scan's result; it is never modified once stored.
type libraryState struct {
	sorted   []*Skill
	byName   map[string]*Skill
	problems []Problem
	// byDir holds every skill the scan read or kept, listed or not, by
	// dirKey: what the next scan keeps when a SKILL.md turns broken.
	byDir map[string]*Skill
	// kept are skills whose SKILL.md could not be used at this scan, kept
	// as last read, with what is wrong with the file now.
	kept map[*Skill]error
	// seen is what the scan saw of each repository, by name, to tell
	// cheaply whether it changed since.
	seen map[string]*seen
}

func dirKey(repo, dir string) string { return repo + "\x00" + dir }

// NewLibrary loads every skill of the repositories. Every folder, at any
// depth, that holds a file named SKILL.md is a skill; folders are visited in
// lexical order, compared folder by folder (the order of fs.WalkDir), and
// the walk does not look for more skills inside a skill's folder.
//
// For skills on disk, give repositories made by [Dir]: the operating
// system then keeps every read inside the skill's folder, whatever happens
// to the tree meanwhile. A Repository whose FS is an os.DirFS is read the
// same way (its folder is opened with os.OpenRoot on each read). Any other
// fs.FS is checked by this package alone: it resolves each path element
// and symbolic link itself and refuses any step out of the skill folder,
// but the check runs before the open, so if such a file system can change
// while it is read (a folder on disk behind a custom fs.FS, a network file
// system), a file or folder swapped for a symbolic link at the wrong moment
// can make a read return a file from outside the skill folder. Use such
// file systems only for trees that do not change (embed.FS, fstest.MapFS,
// archives) or that nobody hostile can write to.
//
// A skill whose SKILL.md is broken is left out and reported by
// [Library.Problems]; the others still load. A skill already in the library
// whose SKILL.md turns unreadable or invalid at a later scan (an editor
// that truncates the file and writes it again, a half-copied file) is
// kept as last read, still listed, while [Library.Problems] reports the
// file and [Library.Refresh] (every load) says what is wrong with it; the
// first scan that reads a valid file again (any load that notices the
// change, or Reload) replaces it. A SKILL.md or skill folder removed, or a
// SKILL.md that is no longer a regular file in the skill folder (a link
// out of it, a named pipe), removes the skill. When two skills of one
// repository share a name the first one wins and the second is a Problem.
// An error is returned only when a repository cannot be walked at all, or
// when the repositories are misconfigured (nil FS, empty or repeated name).
func NewLibrary(repos ...Repository) (*Library, error) {
	l := &Library{repos: slices.Clone(repos), byRepo: make(map[string]*source, len(repos))}
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
		l.byRepo[r.Name] = newSource(r.FS)
	}
	if err := l.Reload(); err != nil {
		return nil, err
	}
	return l, nil
}

// Reload scans the repositories again and swaps in the result atomically,
// picking up added, changed and removed skills and files. On error the
// previous state stays. The library does this by itself when its listing
// is asked for and a skill folder changed (see [Library.Skills]); Reload
// forces it.
func (l *Library) Reload() error {
	l.reloading.Lock()
	defer l.reloading.Unlock()
	return l.reload()
}

// reload is Reload with l.reloading held.
func (l *Library) reload() error {
	prev := l.state.Load()
	st := &libraryState{byName: map[string]*Skill{}, byDir: map[string]*Skill{}, kept: map[*Skill]error{}, seen: map[string]*seen{}}
	for _, r := range l.repos {
		sn := newSeen(time.Now())
		st.seen[r.Name] = sn
		found, problems, err := scanRepository(r, l.byRepo[r.Name], prev, st, sn)
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

// Skills returns the skills, sorted by name. A skill folder added to or
// removed from a repository since the last scan, or a broken SKILL.md
// fixed, makes the library scan its repositories again first (as Reload;
// if that fails, the last scan's skills are returned), so
// load_skill_through_path, its enum and [Loader.Prompt] see a skill copied
// in at the next model turn, without Reload. Telling costs no scan: a stat
// of each folder the last scan listed that holds no skill (the
// repository's root, and the folders between it and the skills; one that
// was modified lately is listed too, since a file system's coarse clock
// may not move its time) and of each broken SKILL.md, through the same
// confinement as a scan, over the paths the last scan found (about 8 µs
// for 10 or 100 skills on disk, BenchmarkListing). A good SKILL.md edited
// or removed is seen when it is loaded ([Library.Refresh]). A file system
// whose folders have no modification time is listed at each call; one
// whose clock runs more than 2 s behind this machine's may hide a change
// until Reload.
func (l *Library) Skills() []*Skill {
	return slices.Clone(l.fresh().sorted)
}

// Skill returns the skill with the given name, as [Library.Skills] finds
// it (a skill added on disk since the last scan is found).
func (l *Library) Skill(name string) (*Skill, bool) {
	s, ok := l.fresh().byName[name]
	return s, ok
}

// Problems returns the skills that the last load or reload had to leave
// out, and those it kept as last read because their SKILL.md cannot be
// used now (see [NewLibrary]), by repository and then path; like
// [Library.Skills], it scans again first when the tree changed.
func (l *Library) Problems() []Problem {
	return slices.Clone(l.fresh().problems)
}

// skillFS returns the file system to read the folder of s through, the
// folder's path in it, and a function to call when done (see
// source.openSkill).
func (l *Library) skillFS(s *Skill) (fs.FS, string, func(), error) {
	if s == nil {
		return nil, "", nil, errors.New("skills: nil skill")
	}
	src, ok := l.byRepo[s.Repository]
	if !ok {
		return nil, "", nil, fmt.Errorf("skills: skill %q comes from repository %q, which is not in this library", s.Name, s.Repository)
	}
	if !fs.ValidPath(s.Dir) {
		return nil, "", nil, fmt.Errorf("skills: skill %q has an invalid folder %q", s.Name, s.Dir)
	}
	fsys, dir, done, err := src.openSkill(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil, fmt.Errorf("%w: skill %q was removed: its folder %q is gone", ErrSkillGone, s.Name, s.Dir)
	}
	if err != nil {
		return nil, "", nil, openError(skillFileName, s.Name, err)
	}
	return fsys, dir, done, nil
}

// scanRepository finds the skills of r in walk order. Only a failure to read
// the repository's root is an error; anything else is a Problem.
//
// A SKILL.md that cannot be used but is there, in a folder that held a
// skill at the previous scan (prev), keeps that skill as it was read, in
// st.kept with the reason, besides the Problem. Every skill found or kept
// goes in st.byDir.
// What the scan lists and stats goes in sn.
func scanRepository(r Repository, src *source, prev, st *libraryState, sn *seen) ([]*Skill, []Problem, error) {
	var (
		found    []*Skill
		problems []Problem
	)
	fsys, done, err := src.scanFS()
	if err != nil {
		return nil, nil, err
	}
	defer done()
	var visit func(dir string) error
	visit = func(dir string) error {
		scanHook(dir)
		mod := dirTime(fsys, dir) // before the listing: a change during it moves the time
		entries, err := fs.ReadDir(fsys, dir)
		if err != nil {
			if dir == "." {
				return err
			}
			sn.dirs[dir] = dirSeen{print: unreadable}
			problems = append(problems, Problem{r.Name, dir, fmt.Errorf("cannot read the folder: %w", err)})
			return nil
		}
		for _, e := range entries {
			if e.Name() == skillFileName && !e.IsDir() {
				// Stamped before the read: a change during it makes the
				// next look scan again.
				before := fileStamp(fsys, skillFile(dir))
				s, err := loadSkill(r.Name, src, dir)
				if err != nil {
					// Watched until fixed (a copy still being written);
					// a good one's edits are for Refresh.
					sn.files[skillFile(dir)] = before
					problems = append(problems, Problem{r.Name, path.Join(dir, skillFileName), err})
					// Removed since the listing, or no longer a regular
					// file inside the folder (a link out, a pipe): gone.
					// Otherwise (being written, say) keep the last good
					// version, if any.
					if prev == nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrBadPath) {
						return nil
					}
					if s = prev.byDir[dirKey(r.Name, dir)]; s == nil {
						return nil
					}
					st.kept[s] = err
				}
				st.byDir[dirKey(r.Name, dir)] = s
				found = append(found, s)
				return nil // a skill's subfolders are its resources
			}
		}
		sn.dirs[dir] = dirSeen{print: dirPrint(entries), mod: mod}
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

// loadSkill reads and parses dir/SKILL.md. It goes through resolveInSkill,
// and the skill's folder as a Root on disk, so that a SKILL.md link is held
// to the same rules as any resource.
func loadSkill(repo string, src *source, dir string) (*Skill, error) {
	fsys, base, done, err := src.openSkill(dir)
	if err != nil {
		return nil, err
	}
	defer done()
	full, err := resolveInSkill(fsys, base, skillFileName, path.Base(dir))
	if err != nil {
		return nil, err
	}
	resolvedHook(dir, skillFileName)
	f, err := fsys.Open(full)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// Checked again on the open file: the tree may have changed since the
	// lookup (a pipe swapped in would be read for as long as its writer
	// holds it).
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%w %q: it is not a regular file", ErrBadPath, skillFileName)
	}
	if info.Size() > maxSkillFileBytes {
		return nil, fmt.Errorf("SKILL.md is %d bytes, more than the limit of %d", info.Size(), maxSkillFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSkillFileBytes+1))
	if err != nil {
		return nil, err
	}
	s, err := Parse(data)
	if err != nil {
		return nil, err
	}
	s.Repository, s.Dir, s.stamp = repo, dir, stampOf(info)
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
