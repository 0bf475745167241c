package interceptors

import (
	"bytes"
	"encoding/json"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Dangerous files: a ready-made set of rules, the way the seeds ship them
// (AgentScope's dangerous files and folders, checked case-insensitively).

// dangerKind is one kind of dangerous file, with the reason a person
// reads in the approval request.
type dangerKind struct {
	reason string
	dirs   []string    // a component with one of these names (lower case)
	names  []string    // a last component with one of these names
	prefix []string    // ... or starting with one of these
	suffix []string    // ... or ending with one of these
	pairs  [][2]string // two components in a row
}

var dangerClasses = []dangerKind{
	{
		reason: "the arguments name a file that usually holds secrets (.env, .netrc, credentials, ...)",
		names:  []string{".env", ".envrc", ".netrc", "_netrc", ".npmrc", ".pypirc", ".pgpass", ".git-credentials", ".htpasswd", "credentials", "credentials.json", "credentials.db"},
		prefix: []string{".env."},
	},
	{
		reason: "the arguments name a private key or certificate store (id_rsa, *.pem, *.key, ...)",
		names:  []string{"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk", "authorized_keys"},
		prefix: []string{"id_rsa.", "id_dsa.", "id_ecdsa.", "id_ed25519."},
		suffix: []string{".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".ppk"},
	},
	{
		reason: "the arguments name a folder of keys or cloud credentials (.ssh, .gnupg, .aws, .kube, ...)",
		dirs:   []string{".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker"},
		pairs:  [][2]string{{".config", "gcloud"}},
	},
	{
		reason: "the arguments name git's own files (.git/, .gitconfig, .gitmodules), whose hooks and settings can run code",
		dirs:   []string{".git"},
		names:  []string{".gitconfig", ".gitmodules"},
	},
	{
		reason: "the arguments name a shell startup file (.bashrc, .zshrc, .profile, ...), which runs code in every new shell",
		names: []string{".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zprofile", ".zshenv",
			".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".kshrc", ".login", ".logout"},
		pairs: [][2]string{{"fish", "config.fish"}},
	},
	{
		reason: "the arguments name an editor's settings folder (.vscode, .idea), whose tasks can run code",
		dirs:   []string{".vscode", ".idea"},
	},
}

// dangerDirs and dangerNames map names to the first kind that has them.
var dangerDirs, dangerNames = map[string]int{}, map[string]int{}

// dangerTokens: whenever a path names a dangerous file, one of them is in
// it, lower-cased (each pattern is a component or part of one, and
// components are substrings of the path). dangerByByte holds them by
// their first two bytes, for a one-pass search.
var (
	dangerTokens []string
	dangerByByte [256][256][]string
)

func init() {
	for _, k := range dangerClasses {
		dangerTokens = append(dangerTokens, k.dirs...)
		dangerTokens = append(dangerTokens, k.names...)
		dangerTokens = append(dangerTokens, k.prefix...)
		dangerTokens = append(dangerTokens, k.suffix...)
		for _, p := range k.pairs {
			dangerTokens = append(dangerTokens, p[0], p[1])
		}
	}
	for _, t := range dangerTokens {
		dangerByByte[t[0]][t[1]] = append(dangerByByte[t[0]][t[1]], t)
	}
	for i := len(dangerClasses) - 1; i >= 0; i-- {
		for _, d := range dangerClasses[i].dirs {
			dangerDirs[d] = i
		}
		for _, n := range dangerClasses[i].names {
			dangerNames[n] = i
		}
	}
}

// DangerousFiles returns a rule that asks a person before any tool touches
// a dangerous file: secrets (.env, .netrc, credentials), private keys
// (id_rsa, *.pem, *.key), folders of keys and cloud credentials (.ssh,
// .gnupg, .aws, .kube), git's own files (.git/, .gitconfig), shell startup
// files (.bashrc, .zshrc, .profile) and editor settings (.vscode, .idea).
// The request's reason names the kind. Add it with WithRules; it is firm,
// so its place in the list does not matter.
//
// It asks rather than denies: editing .bashrc or reading a key can be the
// task, and a person who sees the exact arguments can say so; but no grant
// a person added for the session ("always allow write_file") silences it,
// so every such call is seen. To refuse outright, set Decision to Deny on
// the rule returned.
//
// Every string argument is checked (see [DangerousPath]) when it is named
// or looks like a path, or is a single word; the words of command
// arguments (command, cmd, script) are checked one by one, also with their
// quotes and backslashes removed, as a shell reads them. This is a
// tripwire, not a sandbox: a shell command can spell a file in ways no
// pattern sees, and symbolic links are not followed.
func DangerousFiles() []Rule {
	return []Rule{{
		Decision: Ask, Firm: true,
		Reason: "the arguments name a dangerous file (secrets, keys, credentials, git's own files, shell startup files or editor settings)",
		When: func(args map[string]any) bool {
			return anyString(args, "", func(key, s string) bool {
				return dangerCandidates(key, s, func(p string) bool { return dangerClass(p) >= 0 })
			})
		},
		cannot: dangerCannot,
		explain: func(args map[string]any) string {
			first := -1
			anyString(args, "", func(key, s string) bool {
				dangerCandidates(key, s, func(p string) bool {
					if c := dangerClass(p); c >= 0 && (first < 0 || c < first) {
						first = c
					}
					return false
				})
				return false
			})
			if first < 0 {
				return ""
			}
			return dangerClasses[first].reason
		},
	}}
}

// dangerCannot is true for raw JSON arguments in which no string can name
// a dangerous file, so that most calls skip decoding them: none of the
// tokens is in the lower-cased text. Only \u escapes can spell a token's
// characters in JSON, and only non-ASCII letters can lower-case to ASCII
// ones (the Kelvin sign is a k): arguments with either are decoded.
func dangerCannot(raw json.RawMessage) bool {
	var buf [1024]byte
	if len(raw) > len(buf) {
		return false
	}
	l := buf[:len(raw)]
	for i, c := range raw {
		switch {
		case c >= utf8.RuneSelf:
			return false
		case c == '\\' && i+1 < len(raw) && raw[i+1] == 'u':
			return false
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		l[i] = c
	}
	for i := 0; i+1 < len(l); i++ {
		for _, t := range dangerByByte[l[i]][l[i+1]] {
			if bytes.HasPrefix(l[i:], []byte(t)) {
				return false
			}
		}
	}
	// A command's words are read with their quotes removed too, which
	// can join pieces into a token: those arguments are decoded.
	if bytes.ContainsAny(l, `'\`) {
		for _, k := range commandKeys {
			if bytes.Contains(l, []byte(k)) {
				return false
			}
		}
	}
	return true
}

// dangerClass is the index of the first kind of dangerous file p names,
// or -1. It reads p twice when p has a ".." in it: as written, and
// resolved; either reading can name the file.
func dangerClass(p string) int {
	l := dangerLower(p)
	kind, dotdot := dangerReading(l)
	if dotdot {
		var comps []string
		for c := range strings.SplitSeq(l, "/") {
			comps = append(comps, windowsName(c))
		}
		if k, _ := dangerReading(path.Clean(strings.Join(comps, "/"))); k >= 0 && (kind < 0 || k < kind) {
			kind = k
		}
	}
	return kind
}

// dangerReading returns the first kind a lower-cased, slash-separated
// path names, reading its components as written, and whether one of
// them is "..". It allocates nothing.
func dangerReading(l string) (kind int, dotdot bool) {
	kind = -1
	better := func(k int) {
		if kind < 0 || k < kind {
			kind = k
		}
	}
	base := ""
	for c := range strings.SplitSeq(l, "/") {
		c = windowsName(c)
		switch c {
		case "", ".":
			continue
		case "..":
			dotdot = true
		}
		if k, ok := dangerDirs[c]; ok {
			better(k)
		}
		for i := range dangerClasses {
			for _, pr := range dangerClasses[i].pairs {
				if base == pr[0] && c == pr[1] {
					better(i)
				}
			}
		}
		base = c
	}
	if base == "" {
		return kind, dotdot
	}
	if k, ok := dangerNames[base]; ok {
		better(k)
	}
	for i := range dangerClasses {
		d := &dangerClasses[i]
		for _, pr := range d.prefix {
			if strings.HasPrefix(base, pr) {
				better(i)
			}
		}
		for _, su := range d.suffix {
			if len(base) > len(su) && strings.HasSuffix(base, su) {
				better(i)
			}
		}
	}
	return kind, dotdot
}

// DangerousPath reports whether p names a dangerous file (see
// DangerousFiles) and why, for a tool's own permission check. It reads p
// the widest way: case-insensitively (as Unicode folds case), without
// the code points HFS+ ignores in names, with both slashes as separators,
// before and after resolving "..", with Windows' trailing dots and
// spaces and stream names (":$DATA") dropped, up to a NUL.
func DangerousPath(p string) (reason string, ok bool) {
	if c := dangerClass(p); c >= 0 {
		return dangerClasses[c].reason, true
	}
	return "", false
}

// anyString calls f on every string in v, with the nearest key above it,
// and on every object key that names a file (keyIsPath), until f returns
// true.
func anyString(v any, key string, f func(key, s string) bool) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if keyIsPath(k) && f("path", k) { // a path, whatever the key above it
				return true
			}
			if anyString(x, k, f) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if anyString(x, key, f) {
				return true
			}
		}
	case string:
		return f(key, v)
	}
	return false
}

// dangerCandidates calls f on the strings of an argument to check as
// paths, until f returns true.
func dangerCandidates(key, s string, f func(string) bool) bool {
	if (isPathKey(key) || looksLikePath(s) || !strings.ContainsFunc(s, unicode.IsSpace)) && f(s) {
		return true
	}
	if isCommandKey(key) {
		for w := range strings.FieldsFuncSeq(s, func(r rune) bool {
			return unicode.IsSpace(r) || strings.ContainsRune(";|&<>()'\"`=,$", r)
		}) {
			if f(w) {
				return true
			}
		}
		// The words as the shell reads them too: quotes and backslashes
		// removed (.e''nv, .s"s"h and .e\nv are .env and .ssh to sh).
		if strings.ContainsAny(s, shellQuotes) {
			for w := range strings.FieldsFuncSeq(s, func(r rune) bool {
				return unicode.IsSpace(r) || strings.ContainsRune(";|&<>()`=,$", r)
			}) {
				if strings.ContainsAny(w, shellQuotes) && f(strings.Map(dropShellQuote, w)) {
					return true
				}
			}
		}
	}
	return false
}

// shellQuotes are the characters a shell removes from a word.
const shellQuotes = `'"\`

func dropShellQuote(r rune) rune {
	if strings.ContainsRune(shellQuotes, r) {
		return -1
	}
	return r
}

func isCommandKey(key string) bool {
	for _, k := range commandKeys {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

// dangerLower is p as the check reads it before splitting: up to a NUL,
// lower case (as Unicode folds it: U+017F LONG S is an s), without the
// code points HFS+ ignores in names, backslashes as slashes.
func dangerLower(p string) string {
	if i := strings.IndexByte(p, 0); i >= 0 {
		p = p[:i]
	}
	p = strings.ToLower(p) // no copy for a path with no upper case
	if strings.IndexFunc(p, dangerNonASCII) >= 0 {
		p = strings.Map(dangerFold, p)
	}
	if strings.IndexByte(p, '\\') >= 0 {
		p = strings.ReplaceAll(p, `\`, "/")
	}
	return p
}

func dangerNonASCII(r rune) bool { return r >= utf8.RuneSelf }

// dangerFold maps a lower-cased rune to the one a case-insensitive or
// HFS+ disk compares it as, or drops it (-1). The only non-ASCII runes
// that fold to ASCII letters are the Kelvin sign (lower-cased to k
// already) and the long s. HFS+ ignores zero-width joiners, direction
// marks and U+FEFF in names (git's CVE-2014-9390: ".g\u200cit" is ".git").
func dangerFold(r rune) rune {
	switch {
	case r == '\u017f':
		return 's'
	case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
		return -1
	}
	return r
}

// windowsName is the name Windows opens for c: without a stream name
// (".env:secret:$DATA") and without trailing dots and spaces (".env. ").
func windowsName(c string) string {
	if c == "." || c == ".." {
		return c
	}
	if i := strings.IndexByte(c, ':'); i > 1 { // not a drive letter "c:"
		c = c[:i]
	}
	return strings.TrimRight(c, ". ")
}
