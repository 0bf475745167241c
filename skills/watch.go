package skills

import (
	"io/fs"
	"path"
	"strings"
	"sync/atomic"
	"time"
)

// seen is what a scan of one repository saw, so that a later look can tell
// whether the tree changed without scanning it again: the folders it
// listed that hold no skill, with their modification time and the entries
// that matter in each (its folders and a SKILL.md: a skill folder added or
// removed changes them), and the stamp of each SKILL.md it could not use (a
// copy half written: the look notices when it is whole). A good SKILL.md
// is not watched: a stat of each made the look ten times dearer, and its
// edits and removal are seen when it is loaded ([Library.Refresh]).
type seen struct {
	dirs  map[string]dirSeen
	files map[string]stamp // broken SKILL.md path -> stamp; missing: see fileStamp
	// verified is when the folders last listed as the scan saw them (unix
	// nanoseconds): a folder modified within racyWindow before it may
	// change again without its time changing, and is listed to be sure.
	verified atomic.Int64
}

// dirSeen is a folder as the scan saw it.
type dirSeen struct {
	print string    // dirPrint of its entries, or unreadable
	mod   time.Time // its modification time, taken before the listing
}

// racyWindow is the coarsest modification time of the file systems in
// use (FAT's 2 s): a folder whose time is within it of the moment its
// listing was checked can change within the same tick, unseen by a stat.
const racyWindow = 2 * time.Second

func newSeen(at time.Time) *seen {
	sn := &seen{dirs: map[string]dirSeen{}, files: map[string]stamp{}}
	sn.verified.Store(at.UnixNano())
	return sn
}

// unreadable is the print of a folder the scan could not list.
const unreadable = "\x01unreadable"

// dirPrint is what tells that a folder's skills may have changed: the
// names of its folders and whether it holds a SKILL.md. Other files do not
// matter to the listing.
func dirPrint(entries []fs.DirEntry) string {
	var b strings.Builder
	for _, e := range entries {
		if e.IsDir() {
			b.WriteString(e.Name())
			b.WriteString("/\x00")
		} else if e.Name() == skillFileName {
			b.WriteString(skillFileName + "\x00")
		}
	}
	return b.String()
}

// dirTime is a folder's modification time, zero when it cannot be stated.
func dirTime(fsys fs.FS, dir string) time.Time {
	info, err := fs.Stat(fsys, dir)
	if err != nil {
		return time.Time{}
	}
	return info.ModTime()
}

// fileStamp stats a SKILL.md through the scan's file system; a file that
// cannot be stated has the zero stamp with size -1.
func fileStamp(fsys fs.FS, p string) stamp {
	info, err := fs.Stat(fsys, p)
	if err != nil {
		return stamp{size: -1}
	}
	return stampOf(info)
}

// changed reports whether a repository's tree differs from what the scan
// saw, through the same file system as a scan (for a folder on disk, the
// folder now at the repository's path opened as an os.Root, so nothing
// outside it is looked at), over the paths the scan found only: a stat per
// folder that held no skill (a folder modified lately, or a file system
// without modification times, is listed too) and per broken SKILL.md.
func (sn *seen) changed(src *source) bool {
	start := time.Now()
	fsys, done, err := src.scanFS()
	if err != nil {
		return true // a Reload says why, and keeps the state
	}
	defer done()
	settled := time.Unix(0, sn.verified.Load()).Add(-racyWindow)
	listed := false
	for dir, d := range sn.dirs {
		if d.print != unreadable {
			mod := dirTime(fsys, dir)
			if !mod.Equal(d.mod) {
				return true
			}
			if !mod.IsZero() && mod.Before(settled) {
				continue // any change since would have moved its time
			}
		}
		listed = true
		entries, err := fs.ReadDir(fsys, dir)
		now := unreadable
		if err == nil {
			now = dirPrint(entries)
		}
		if now != d.print {
			return true
		}
	}
	for p, st := range sn.files {
		if !fileStamp(fsys, p).same(st) {
			return true
		}
	}
	if listed {
		// Every folder listed as the scan saw it, as of start.
		for {
			v := sn.verified.Load()
			if v >= start.UnixNano() || sn.verified.CompareAndSwap(v, start.UnixNano()) {
				break
			}
		}
	}
	return false
}

// skillFile is the path of the SKILL.md of the skill folder dir.
func skillFile(dir string) string { return path.Join(dir, skillFileName) }

// fresh returns the library's state, scanning the repositories again first
// when a skill folder was added, changed or removed since the last scan
// (see [Library.Skills]). A scan that fails keeps the state as it was.
func (l *Library) fresh() *libraryState {
	st := l.state.Load()
	if !l.changed(st) {
		return st
	}
	l.reloading.Lock()
	defer l.reloading.Unlock()
	// Another caller may have scanned meanwhile.
	if now := l.state.Load(); now == st || l.changed(now) {
		_ = l.reload()
	}
	return l.state.Load()
}

// changed reports whether any repository changed since st was scanned.
func (l *Library) changed(st *libraryState) bool {
	for _, r := range l.repos {
		sn := st.seen[r.Name]
		if sn == nil || sn.changed(l.byRepo[r.Name]) {
			return true
		}
	}
	return false
}
