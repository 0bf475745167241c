package interceptors

import (
	"path"
	"slices"
	"strings"
	"unicode"
)

// Dangerous files: a ready-made set of rules, the way the seeds ship them
// (AgentScope's dangerous files and folders, checked case-insensitively).

// dangerClass is one kind of dangerous file, with the reason a person
// reads in the approval request.
type dangerClass struct {
	reason string
	dirs   []string // a component with one of these names (lower case)
	names  []string // a last component with one of these names
	prefix []string // ... or starting with one of these
	suffix []string // ... or ending with one of these
	tails  []string // the path ends with these components
}

var dangerClasses = []dangerClass{
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
		tails:  []string{".config/gcloud"},
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
		tails: []string{"fish/config.fish"},
	},
	{
		reason: "the arguments name an editor's settings folder (.vscode, .idea), whose tasks can run code",
		dirs:   []string{".vscode", ".idea"},
	},
}

// DangerousFiles returns rules that ask a person before any tool touches a
// dangerous file: secrets (.env, .netrc, credentials), private keys (id_rsa,
// *.pem, *.key), folders of keys and cloud credentials (.ssh, .gnupg, .aws,
// .kube), git's own files (.git/, .gitconfig), shell startup files (.bashrc,
// .zshrc, .profile) and editor settings (.vscode, .idea). Add them with
// WithRules; they are firm, so their place in the list does not matter.
//
// They ask rather than deny: editing .bashrc or reading a key can be the
// task, and a person who sees the exact arguments can say so; but no
// grant a person added for the session ("always allow write_file")
// silences them, so every such call is seen. To refuse outright, set
// Decision to Deny on the rules returned.
//
// Every string argument is checked (see [DangerousPath]) when it is named
// or looks like a path, or is a single word; the words of command
// arguments (command, cmd, script) are checked one by one. This is a
// tripwire, not a sandbox: a shell command can spell a file in ways no
// pattern sees, and symbolic links are not followed.
func DangerousFiles() []Rule {
	rules := make([]Rule, len(dangerClasses))
	for i := range dangerClasses {
		c := &dangerClasses[i]
		rules[i] = Rule{Decision: Ask, Firm: true, Reason: c.reason, When: func(args map[string]any) bool {
			return anyString(args, "", func(key, s string) bool {
				for _, cand := range dangerCandidates(key, s) {
					if c.matches(dangerComponents(cand)) {
						return true
					}
				}
				return false
			})
		}}
	}
	return rules
}

// DangerousPath reports whether p names a dangerous file (see
// DangerousFiles) and why, for a tool's own permission check. It reads p
// the widest way: case-insensitively, with both slashes as separators,
// before and after resolving "..", with Windows' trailing dots and
// spaces and stream names (":$DATA") dropped, up to a NUL.
func DangerousPath(p string) (reason string, ok bool) {
	comps := dangerComponents(p)
	for i := range dangerClasses {
		if dangerClasses[i].matches(comps) {
			return dangerClasses[i].reason, true
		}
	}
	return "", false
}

// anyString calls f on every string in v, with the nearest key above it,
// until f returns true.
func anyString(v any, key string, f func(key, s string) bool) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
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

// dangerCandidates are the strings of an argument to check as paths.
func dangerCandidates(key, s string) []string {
	var out []string
	if isPathKey(key) || looksLikePath(s) || !strings.ContainsFunc(s, unicode.IsSpace) {
		out = append(out, s)
	}
	if slices.Contains(commandKeys, strings.ToLower(key)) {
		out = append(out, strings.FieldsFunc(s, func(r rune) bool {
			return unicode.IsSpace(r) || strings.ContainsRune(";|&<>()'\"`=,$", r)
		})...)
	}
	return out
}

// dangerComponents are a path's components as the dangerous-file check
// reads them: both the raw ones and those after resolving "..", so that
// neither "a/../.env" nor ".git/../x" read one way hides from the other.
func dangerComponents(p string) []string {
	if i := strings.IndexByte(p, 0); i >= 0 {
		p = p[:i]
	}
	p = strings.ToLower(strings.ReplaceAll(p, `\`, "/"))
	raw := strings.Split(p, "/")
	for i, c := range raw {
		raw[i] = windowsName(c)
	}
	cleaned := strings.Split(path.Clean(strings.Join(raw, "/")), "/")
	return append(raw, append([]string{"\x00"}, cleaned...)...) // NUL: where one reading ends and the other starts
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

func (d *dangerClass) matches(comps []string) bool {
	// Two readings, separated by a NUL component: each is checked whole.
	for len(comps) > 0 {
		n := slices.Index(comps, "\x00")
		reading := comps
		if n >= 0 {
			reading, comps = comps[:n], comps[n+1:]
		} else {
			comps = nil
		}
		if d.matchReading(reading) {
			return true
		}
	}
	return false
}

func (d *dangerClass) matchReading(comps []string) bool {
	// Drop empty components (a trailing slash, "//").
	comps = slices.DeleteFunc(slices.Clone(comps), func(c string) bool { return c == "" || c == "." })
	if len(comps) == 0 {
		return false
	}
	for _, c := range comps {
		if slices.Contains(d.dirs, c) {
			return true
		}
	}
	base := comps[len(comps)-1]
	if slices.Contains(d.names, base) {
		return true
	}
	for _, p := range d.prefix {
		if strings.HasPrefix(base, p) {
			return true
		}
	}
	for _, s := range d.suffix {
		if strings.HasSuffix(base, s) && len(base) > len(s) {
			return true
		}
	}
	joined := strings.Join(comps, "/")
	for _, t := range d.tails {
		if joined == t || strings.HasSuffix(joined, "/"+t) {
			return true
		}
	}
	return false
}
