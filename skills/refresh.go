package skills

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"time"
)

// ErrSkillGone is wrapped by [Library.Refresh]'s error when a skill's
// SKILL.md was removed, renamed the skill, or no longer parses.
var ErrSkillGone = errors.New("skill no longer available")

// stamp is what tells that a SKILL.md changed on disk: its size and
// modification time when it was read.
type stamp struct {
	size int64
	mod  time.Time
}

func stampOf(info fs.FileInfo) stamp { return stamp{info.Size(), info.ModTime()} }

func (a stamp) same(b stamp) bool { return a.size == b.size && a.mod.Equal(b.mod) }

// Refresh returns the library's current version of s, a skill it handed
// out. When the skill's SKILL.md has the size and modification time it had
// when it was read (one stat), that is s itself. When it changed, the
// library scans its repositories again (as [Library.Reload]) and returns
// the skill of the same name as read now. A skill whose SKILL.md was
// removed or now names another skill gives an error wrapping
// [ErrSkillGone] that says which; the library no longer lists it. One
// whose SKILL.md cannot be read or parsed now (an editor writing it, say)
// gives an error wrapping ErrSkillGone that says what is wrong with the
// file, but stays listed as last read (see [NewLibrary]): the first
// Refresh after the file is valid again returns the skill as read then.
//
// The check is one stat of the SKILL.md through the repository (for
// [Dir], the folder now at its path, opened as an os.Root); reading a
// changed skill goes through the same confinement as every read.
func (l *Library) Refresh(s *Skill) (*Skill, error) {
	if s == nil {
		return nil, errors.New("skills: nil skill")
	}
	if _, ok := l.byRepo[s.Repository]; !ok {
		return nil, fmt.Errorf("skills: skill %q comes from repository %q, which is not in this library", s.Name, s.Repository)
	}
	cur, err := l.statSkill(s)
	if err == nil && cur.same(s.stamp) {
		return s, nil
	}
	// Another load may have read the change already.
	if now, ok := l.state.Load().byName[s.Name]; ok && err == nil && now != s && now.Repository == s.Repository && now.Dir == s.Dir && cur.same(now.stamp) {
		return now, nil
	}
	if rerr := l.Reload(); rerr != nil {
		return nil, fmt.Errorf("skills: skill %q changed on disk and the library could not be read again: %w", s.Name, rerr)
	}
	st := l.state.Load()
	if now, ok := st.byName[s.Name]; ok {
		if why, bad := st.kept[now]; bad {
			// Kept as last read: its SKILL.md is broken now (being
			// written, maybe); the first load after it is fixed gets it.
			return nil, fmt.Errorf("%w: skill %q changed on disk and its %s is now broken: %v (the skill stays listed; load it again once the file is fixed)", ErrSkillGone, now.Name, skillFileName, why)
		}
		return now, nil
	}
	file := path.Join(s.Dir, skillFileName)
	for _, p := range st.problems {
		if p.Repository == s.Repository && p.Path == file {
			return nil, fmt.Errorf("%w: skill %q changed on disk and its %s is now broken: %v", ErrSkillGone, s.Name, skillFileName, p.Err)
		}
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%w: skill %q was removed: its %s is gone", ErrSkillGone, s.Name, skillFileName)
	}
	return nil, fmt.Errorf("%w: skill %q changed on disk and is no longer in the library (its %s names another skill now?)", ErrSkillGone, s.Name, skillFileName)
}

// statSkill stats the SKILL.md of s: one stat call. Only metadata is
// read, so the stat goes through the repository (for a folder on disk, the
// folder now at its path, opened as an os.Root) rather than opening the
// skill's folder as a Root of its own as reads do; the worst a link swapped
// in meanwhile can do is cause a rescan, which reads through the full
// confinement.
func (l *Library) statSkill(s *Skill) (stamp, error) {
	src, ok := l.byRepo[s.Repository]
	if !ok || !fs.ValidPath(s.Dir) {
		return stamp{}, fmt.Errorf("skills: skill %q is not from this library", s.Name)
	}
	p := path.Join(s.Dir, skillFileName)
	var info fs.FileInfo
	var err error
	if src.dir != "" {
		var root *os.Root
		if root, err = os.OpenRoot(src.dir); err != nil {
			return stamp{}, err
		}
		defer root.Close()
		info, err = root.Stat(p)
	} else {
		info, err = fs.Stat(src.fsys, p)
	}
	if err != nil {
		return stamp{}, err
	}
	return stampOf(info), nil
}
