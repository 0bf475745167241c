package interceptors

import (
	"path"
	"slices"
	"strings"
)

// Path-like arguments, shared by the suggested rules (which must never
// widen) and the dangerous-file rules (which must never miss): both find
// the same strings, and then each side leans its own way.

// pathArg is a string argument that names a file or folder.
type pathArg struct {
	key   string // the nearest object key above it (lower case)
	value string
}

// pathKeyWords mark an argument as a path by its name.
var pathKeyWords = []string{"path", "file", "dir", "folder"}

// pathKeys are whole names that mark an argument as a path.
var pathKeys = []string{"src", "dst", "source", "dest", "destination", "target", "from", "to", "cwd", "location", "root"}

func isPathKey(key string) bool {
	k := strings.ToLower(key)
	if slices.Contains(pathKeys, k) {
		return true
	}
	for _, w := range pathKeyWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// looksLikePath is true for strings that start as only paths do: a slash
// or backslash, ./ ../ ~ or a drive letter.
func looksLikePath(s string) bool {
	if s == "" {
		return false
	}
	switch {
	case s[0] == '/' || s[0] == '\\' || s[0] == '~':
		return true
	case s == "." || s == "..":
		return true
	case strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../") || strings.HasPrefix(s, `.\`) || strings.HasPrefix(s, `..\`):
		return true
	case len(s) >= 3 && s[1] == ':' && (s[2] == '\\' || s[2] == '/') && isASCIILetter(s[0]):
		return true
	}
	return false
}

func isASCIILetter(b byte) bool { return b|0x20 >= 'a' && b|0x20 <= 'z' }

// keyIsPath is true for an object key that names a file rather than a
// property: one with a slash, a backslash or a dot in it, or that looks
// like a path (a map of path to content, {"files": {"notes/a.md": "..."}}).
// Property names have none of these.
func keyIsPath(k string) bool { return strings.ContainsAny(k, `/\.`) || looksLikePath(k) }

// pathArgs walks decoded JSON arguments and returns every string that is a
// path: by its key (path, file, dir, src, ...; arrays inherit the key of
// their field) or by its look, and every object key that is one
// (keyIsPath). Nested objects and arrays are walked too, so a path cannot
// hide one level down.
func pathArgs(args any) []pathArg {
	var out []pathArg
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if keyIsPath(k) {
					out = append(out, pathArg{key: strings.ToLower(key), value: k})
				}
				walk(k, x)
			}
		case []any:
			for _, x := range v {
				walk(key, x)
			}
		case string:
			if isPathKey(key) || looksLikePath(v) {
				out = append(out, pathArg{key: strings.ToLower(key), value: v})
			}
		}
	}
	walk("", args)
	slices.SortFunc(out, func(a, b pathArg) int { return strings.Compare(a.key+"\x00"+a.value, b.key+"\x00"+b.value) })
	return out
}

// cleanAllowPath is a path as an allow rule reads it: cleaned ("./a/../b"
// is "b"), or ok=false for a path no allow rule may match. A backslash is
// a separator on Windows and a plain character elsewhere, and a NUL ends
// the path for C code and not for Go: either way the two readings differ,
// and an allow rule takes neither.
func cleanAllowPath(p string) (string, bool) {
	if p == "" || strings.ContainsAny(p, "\\\x00") {
		return "", false
	}
	return path.Clean(p), true
}

// pathUnder reports whether p, cleaned, is dir or inside it, compared as
// text: case-sensitive (on a case-insensitive file system "Notes/x" is
// inside "notes" but is not allowed: the rule asks rather than guess), and
// at component boundaries ("notes-evil" is not inside "notes"). dir is
// clean already.
func pathUnder(p, dir string) bool {
	c, ok := cleanAllowPath(p)
	if !ok {
		return false
	}
	if dir == "/" {
		return strings.HasPrefix(c, "/")
	}
	return c == dir || strings.HasPrefix(c, dir+"/")
}

// suggestableDir is the folder the path arguments of a call share, worth a
// rule of its own: not the working folder, the root or only "..", and
// none of the paths unreadable for an allow rule.
func suggestableDir(paths []pathArg) (string, bool) {
	common := ""
	for i, p := range paths {
		c, ok := cleanAllowPath(p.value)
		if !ok {
			return "", false
		}
		d := path.Dir(c)
		if i == 0 {
			common = d
			continue
		}
		for common != d && !strings.HasPrefix(d, common+"/") && !(common == "/" && strings.HasPrefix(d, "/")) {
			next := path.Dir(common)
			if next == common {
				common = ""
				break
			}
			common = next
		}
		if common == "" {
			return "", false
		}
	}
	if common == "" || common == "." || common == "/" {
		return "", false
	}
	for part := range strings.SplitSeq(common, "/") {
		if part != ".." && part != "" {
			return common, true
		}
	}
	return "", false // only "..": the folder above the working one
}

// displayDir shows a relative folder the way people write it: ./notes.
func displayDir(dir string) string {
	if strings.HasPrefix(dir, "/") || strings.HasPrefix(dir, "..") || strings.HasPrefix(dir, "~") {
		return dir
	}
	return "./" + dir
}
