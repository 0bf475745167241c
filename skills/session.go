package skills

import (
	"cmp"
	"slices"
)

// SessionMode says how a session's own library stands to the shared one
// (see [Loader.SetSessionLibrary]).
type SessionMode int

const (
	// BesideShared: the session loads the shared library's skills and its
	// own; on a name both have, its own wins.
	BesideShared SessionMode = iota
	// InsteadOfShared: the session loads only its own skills.
	InsteadOfShared
)

// sessionLibrary is a session's own library and how it is used.
type sessionLibrary struct {
	lib  *Library
	mode SessionMode
}

// entry is a skill a session may load and the library that reads it.
type entry struct {
	s   *Skill
	lib *Library
}

// SetSessionLibrary gives a session skills of its own: lib (for example
// over a per-user folder, made with [NewLibrary] and [Dir]) beside the
// shared library or instead of it. load_skill_through_path, its enum and
// [Loader.Prompt] then follow the session's repositories only, and every
// read of a skill goes through the library it came from, with the same
// confinement as the shared one: a session can never load another
// session's skill. A nil lib gives the session the shared library again.
// The setting is forgotten when the session closes. Libraries may be
// shared between sessions (one per user, say); a library is scanned when
// it is made, not per session.
func (l *Loader) SetSessionLibrary(session string, lib *Library, mode SessionMode) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if lib == nil {
		delete(l.sessLibs, session)
		return
	}
	l.sessLibs[session] = sessionLibrary{lib, mode}
}

// entries returns the skills a session may load, sorted by name, each with
// the library it comes from: the shared library's, the session's own (its
// own winning on a name both have), then the filter.
func (l *Loader) entries(session string) []entry {
	l.mu.Lock()
	own, hasOwn := l.sessLibs[session]
	l.mu.Unlock()
	var out []entry
	if l.lib != nil && (!hasOwn || own.mode == BesideShared) {
		for _, s := range l.lib.Skills() {
			out = append(out, entry{s, l.lib})
		}
	}
	if hasOwn {
		mine := own.lib.Skills()
		out = slices.DeleteFunc(out, func(e entry) bool {
			_, found := slices.BinarySearchFunc(mine, e.s.Name, func(s *Skill, name string) int { return cmp.Compare(s.Name, name) })
			return found
		})
		for _, s := range mine {
			out = append(out, entry{s, own.lib})
		}
		slices.SortFunc(out, func(a, b entry) int { return cmp.Compare(a.s.Name, b.s.Name) })
	}
	if l.filter != nil {
		out = slices.DeleteFunc(out, func(e entry) bool { return !l.filter(session, e.s) })
	}
	return out
}
