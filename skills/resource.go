package skills

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"mime"
	"path"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxPathBytes is the longest resource path [Library.ReadResource] accepts.
const maxPathBytes = 512

// defaultResourceLimit is the read limit used when [Library.ReadResource] is
// given a limit <= 0.
const defaultResourceLimit = 256 << 10

// maxResources caps the listing returned by [Library.Resources].
const maxResources = 1000

// maxLinkHops caps the symbolic links followed for one path, so that loops
// end.
const maxLinkHops = 8

// maxElemBytes is the longest file name most file systems allow; longer
// ones fail with an error of their own, which says less.
const maxElemBytes = 255

// sniffBytes is how much of a file decides whether it is text.
const sniffBytes = 8 << 10

var (
	// ErrBadPath is wrapped by errors about a resource path that is refused:
	// malformed, pointing at a folder or a special file, or leading outside
	// the skill folder through a symbolic link.
	ErrBadPath = errors.New("bad resource path")
	// ErrNotFound is wrapped by errors about a resource that does not exist.
	ErrNotFound = errors.New("resource not found")
	// ErrTooLarge is wrapped by errors about a binary resource over the read
	// limit (text is truncated instead).
	ErrTooLarge = errors.New("resource too large")
)

// Resource is a file read from a skill.
type Resource struct {
	// Path is the path as asked, cleaned.
	Path string
	// Size is the file's full size in bytes.
	Size int64
	// Data is the content, cut to the limit for text.
	Data []byte
	// Truncated reports that Data holds only the first bytes of a text file
	// (up to the limit, cut at a UTF-8 boundary).
	Truncated bool
	// Binary reports that the file is not UTF-8 text: its first 8 KiB hold a
	// NUL byte or invalid UTF-8.
	Binary bool
	// MediaType comes from the extension: "text/markdown" for .md, the
	// mime.TypeByExtension type without parameters otherwise, and
	// "text/plain" or "application/octet-stream" when the extension says
	// nothing.
	MediaType string
}

// ReadResource reads one file of a skill. p is "SKILL.md" or the exact path
// of a file relative to the skill folder, with "/" between folders.
//
// These paths are refused with an error wrapping [ErrBadPath] that says what
// is wrong: empty; absolute (leading "/" or "\", or a drive letter such as
// "C:"); containing a "." or ".." element or ending in "/"; containing a
// backslash, a NUL byte, another control character or invalid UTF-8; longer
// than 512 bytes, or with a name longer than 255 bytes; naming a folder or a file that is not regular. Empty
// elements ("a//b") are dropped.
//
// Symbolic links are followed by this package, not by the file system, one
// element at a time and at most 8 in a row: a link whose target is absolute,
// or whose target leaves the skill folder at any step (even to come back, and
// even into another skill of the same repository), is refused with
// [ErrBadPath]. Links inside the skill folder work as the file they point to.
// For a repository on disk ([Dir], or an os.DirFS) the file is then opened
// through the skill folder as an os.Root, so that a change to the tree
// after the check (a file swapped for a link) cannot lead a read outside
// the folder either; other file systems rely on the check alone (see
// [NewLibrary]).
//
// A missing file gives [ErrNotFound]; for a repository on disk, a skill
// whose folder is gone gives [ErrSkillGone]. A text file over limit bytes is cut to
// at most limit bytes at a UTF-8 boundary and marked Truncated; a binary file
// over the limit gives [ErrTooLarge]. limit <= 0 means
// 256 KiB.
func (l *Library) ReadResource(s *Skill, p string, limit int64) (Resource, error) {
	clean, err := checkResourcePath(p)
	if err != nil {
		return Resource{}, err
	}
	fsys, dir, done, err := l.skillFS(s)
	if err != nil {
		return Resource{}, err
	}
	defer done()
	full, err := resolveInSkill(fsys, dir, clean, s.Name)
	if err != nil {
		return Resource{}, err
	}
	resolvedHook("", clean)
	if limit <= 0 {
		limit = defaultResourceLimit
	}
	limit = min(limit, math.MaxInt64-1)

	f, err := fsys.Open(full)
	if err != nil {
		return Resource{}, openError(clean, s.Name, err)
	}
	defer f.Close()
	// Checked again on the open file: the tree may have changed since the
	// lookup.
	info, err := f.Stat()
	if err != nil {
		return Resource{}, fmt.Errorf("skills: reading %q in skill %q: %w", clean, s.Name, err)
	}
	if !info.Mode().IsRegular() {
		return Resource{}, fmt.Errorf("%w %q: it is not a regular file", ErrBadPath, clean)
	}

	res := Resource{Path: clean, Size: info.Size()}
	head := make([]byte, sniffBytes)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return Resource{}, fmt.Errorf("skills: reading %q in skill %q: %w", clean, s.Name, err)
	}
	head = head[:n]
	res.Binary = looksBinary(head, n == sniffBytes)
	res.MediaType = mediaType(clean, res.Binary)
	tooLarge := func(size int64) error {
		return fmt.Errorf("%w: %q is a binary file of %d bytes, more than the limit of %d bytes", ErrTooLarge, clean, size, limit)
	}
	if res.Binary && max(res.Size, int64(n)) > limit {
		return Resource{}, tooLarge(max(res.Size, int64(n)))
	}

	data := head
	if n == sniffBytes && int64(n) <= limit {
		// One byte past the limit tells whether there is more.
		rest, err := io.ReadAll(io.LimitReader(f, limit+1-int64(n)))
		if err != nil {
			return Resource{}, fmt.Errorf("skills: reading %q in skill %q: %w", clean, s.Name, err)
		}
		data = append(data, rest...)
	}
	if int64(len(data)) > res.Size {
		res.Size = int64(len(data)) // the file grew while we read it
	}
	if int64(len(data)) > limit {
		if res.Binary {
			return Resource{}, tooLarge(res.Size)
		}
		data = data[:runeBoundary(data, int(limit))]
		res.Truncated = true
	}
	res.Data = data
	return res, nil
}

// Resources lists a skill's files as slash paths relative to its folder:
// "SKILL.md" first, then every other regular file, recursively, in lexical
// order compared folder by folder (the order of fs.WalkDir). A symbolic link
// counts as the file it points to when [Library.ReadResource] would accept
// it; others are left out, and links to folders are not entered. Names that
// ReadResource would refuse (backslashes, control characters) are left out
// too. The listing stops at 1,000 entries.
func (l *Library) Resources(s *Skill) ([]string, error) {
	fsys, dir, done, err := l.skillFS(s)
	if err != nil {
		return nil, err
	}
	defer done()
	out := []string{skillFileName}
	errFull := errors.New("full")
	var walk func(rel string) error
	walk = func(rel string) error {
		entries, err := fs.ReadDir(fsys, path.Join(dir, rel))
		if err != nil {
			if rel == "." {
				return fmt.Errorf("skills: listing skill %q: %w", s.Name, err)
			}
			return nil // an unreadable subfolder only hides its own files
		}
		for _, e := range entries {
			r := path.Join(rel, e.Name())
			if r == skillFileName {
				continue
			}
			if _, err := checkResourcePath(r); err != nil {
				continue
			}
			switch t := e.Type(); {
			case t.IsDir():
				if err := walk(r); err != nil {
					return err
				}
				continue
			case t.IsRegular():
			case t&fs.ModeSymlink != 0:
				if _, err := resolveInSkill(fsys, dir, r, s.Name); err != nil {
					continue
				}
			default:
				continue
			}
			if len(out) >= maxResources {
				return errFull
			}
			out = append(out, r)
		}
		return nil
	}
	if err := walk("."); err != nil && err != errFull {
		return nil, err
	}
	return out, nil
}

// checkResourcePath applies the syntactic rules of ReadResource and returns
// the path without empty elements.
func checkResourcePath(p string) (string, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %s: %s", ErrBadPath, quoteShort(p), fmt.Sprintf(format, args...))
	}
	const hint = `give the path of a file relative to the skill folder, such as "SKILL.md" or "scripts/run.py"`
	switch {
	case p == "":
		return "", bad("the path is empty; %s", hint)
	case len(p) > maxPathBytes:
		return "", bad("the path is %d bytes long, more than the limit of %d", len(p), maxPathBytes)
	case !utf8.ValidString(p):
		return "", bad("the path is not valid UTF-8")
	case strings.IndexFunc(p, unicode.IsControl) >= 0:
		return "", bad("the path contains a NUL byte or another control character")
	case p[0] == '/' || p[0] == '\\':
		return "", bad("absolute paths are not allowed; %s", hint)
	case isDriveLetter(p):
		return "", bad("drive letters are not allowed; %s", hint)
	case strings.Contains(p, `\`):
		return "", bad(`backslashes are not allowed; separate folders with "/"`)
	case strings.HasSuffix(p, "/"):
		return "", bad(`the path ends with "/"; name a file, not a folder`)
	}
	elems := strings.Split(p, "/")
	kept := elems[:0]
	for _, e := range elems {
		switch e {
		case "..":
			return "", bad(`".." is not allowed: only files inside the skill folder can be read; %s`, hint)
		case ".":
			return "", bad(`"." elements are not allowed; %s`, hint)
		case "":
		default:
			if len(e) > maxElemBytes {
				return "", bad("the name %.20q... is %d bytes long, more than the limit of %d for one file or folder name", e, len(e), maxElemBytes)
			}
			kept = append(kept, e)
		}
	}
	return strings.Join(kept, "/"), nil
}

// quoteShort quotes s for an error message, only its start when it is
// long: the model (or a log) must not get a huge argument back.
func quoteShort(s string) string {
	const max, keep = 120, 60
	if len(s) <= max {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:runeBoundary([]byte(s[:keep+utf8.UTFMax]), keep)], len(s))
}

func isDriveLetter(p string) bool {
	return len(p) >= 2 && p[1] == ':' && ('a' <= p[0] && p[0] <= 'z' || 'A' <= p[0] && p[0] <= 'Z')
}

// resolveInSkill finds the file that rel (already checked) names inside the
// skill folder dir, following symbolic links itself so that it can refuse
// any step outside the folder. It returns the link-free path of the file in
// fsys. Elements already resolved are real folders, so ".." in a link target
// simply drops the last of them.
func resolveInSkill(fsys fs.FS, dir, rel, skill string) (string, error) {
	var (
		cur   []string // resolved elements, relative to dir
		infos []fs.FileInfo
		todo  = strings.Split(rel, "/")
		hops  int
	)
	shown := func(name string) string { return path.Join(append(append([]string(nil), cur...), name)...) }
	for len(todo) > 0 {
		e := todo[0]
		todo = todo[1:]
		switch e {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				// Only link targets get here: rel has no "..".
				return "", fmt.Errorf("%w %q: a symbolic link on the way leads outside the skill folder", ErrBadPath, rel)
			}
			cur, infos = cur[:len(cur)-1], infos[:len(infos)-1]
			continue
		}
		name := path.Join(dir, path.Join(cur...), e)
		info, err := fs.Lstat(fsys, name)
		if err != nil {
			return "", openError(rel, skill, err)
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			link := shown(e)
			if hops++; hops > maxLinkHops {
				return "", fmt.Errorf("%w %q: more than %d symbolic links to follow (a loop?) at %q", ErrBadPath, rel, maxLinkHops, link)
			}
			target, err := fs.ReadLink(fsys, name)
			if err != nil {
				return "", openError(rel, skill, err)
			}
			if filepath.Separator == '\\' {
				target = filepath.ToSlash(target)
			}
			switch {
			case target == "":
				return "", fmt.Errorf("%w %q: symbolic link %q is empty", ErrBadPath, rel, link)
			case target[0] == '/' || target[0] == '\\' || isDriveLetter(target):
				return "", fmt.Errorf("%w %q: symbolic link %q points to an absolute path; only links to files inside the skill folder are followed", ErrBadPath, rel, link)
			case strings.ContainsAny(target, "\\\x00"):
				return "", fmt.Errorf("%w %q: symbolic link %q has a target with a backslash or NUL byte", ErrBadPath, rel, link)
			}
			// The link's elements replace it, relative to the folder it is in.
			todo = append(strings.Split(target, "/"), todo...)
			if outside(cur, todo) {
				return "", fmt.Errorf("%w %q: symbolic link %q leads outside the skill folder; only links to files inside the skill folder are followed", ErrBadPath, rel, link)
			}
			continue
		}
		if !info.IsDir() && len(todo) > 0 {
			return "", fmt.Errorf("%w: %q in skill %q: %q is a file, not a folder", ErrNotFound, rel, skill, shown(e))
		}
		cur, infos = append(cur, e), append(infos, info)
	}
	if len(cur) == 0 || infos[len(infos)-1].IsDir() {
		return "", fmt.Errorf("%w %q: it is a folder; name a file inside it (see the skill's list of resources)", ErrBadPath, rel)
	}
	info := infos[len(infos)-1]
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("%w %q: it is not a regular file", ErrBadPath, rel)
	}
	return path.Join(dir, path.Join(cur...)), nil
}

// outside reports whether the ".." elements at the head of todo climb above
// the skill folder from cur, to name the link in the error rather than some
// later element.
func outside(cur, todo []string) bool {
	depth := len(cur)
	for _, e := range todo {
		switch e {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return true
			}
		default:
			return false
		}
	}
	return false
}

// openError turns a file system error into a message a model can act on.
func openError(rel, skill string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %q in skill %q; list the skill's resources to see which files exist", ErrNotFound, rel, skill)
	case errors.Is(err, fs.ErrInvalid):
		return fmt.Errorf("%w %q: the file system refuses this name", ErrBadPath, rel)
	default:
		return fmt.Errorf("skills: reading %q in skill %q: %w", rel, skill, err)
	}
}

// looksBinary reports whether head (the start of a file) holds a NUL byte or
// invalid UTF-8. When more may follow, a rune cut by the end of head is fine.
func looksBinary(head []byte, more bool) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	if more {
		for i := len(head) - 1; i >= 0 && i >= len(head)-utf8.UTFMax; i-- {
			if utf8.RuneStart(head[i]) {
				if !utf8.FullRune(head[i:]) {
					head = head[:i]
				}
				break
			}
		}
	}
	return !utf8.Valid(head)
}

// runeBoundary returns the largest cut <= limit that does not split a UTF-8
// sequence, or limit itself when the bytes there are not valid UTF-8 anyway.
func runeBoundary(data []byte, limit int) int {
	if limit >= len(data) {
		return len(data)
	}
	for cut := limit; cut >= 0 && cut > limit-utf8.UTFMax; cut-- {
		if utf8.RuneStart(data[cut]) {
			return cut
		}
	}
	return limit
}

func mediaType(name string, binary bool) string {
	ext := strings.ToLower(path.Ext(name))
	if ext == ".md" || ext == ".markdown" {
		return "text/markdown"
	}
	if ext != "" {
		if t := mime.TypeByExtension(ext); t != "" {
			if mt, _, err := mime.ParseMediaType(t); err == nil {
				return mt
			}
			return t
		}
	}
	if binary {
		return "application/octet-stream"
	}
	return "text/plain"
}
