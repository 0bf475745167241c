package interceptors

import (
	"encoding/json"
	"path"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/toolkit"
)

// FuzzGrantUnder: whatever path a call carries, a grant for paths under
// "notes" covers it only if the path, read either way (a backslash as a
// separator or as a character), is inside notes; and never with a NUL.
func FuzzGrantUnder(f *testing.F) {
	for _, s := range []string{"notes/a", "./notes/../etc", "./notes-evil", `notes\..\x`, "notes/./../../x", "/notes/a",
		"notes", "notes/..", "notes/a/../../notes/b", "notes/\x00/../../x", "notes/a\x00", "Notes/a"} {
		f.Add(s)
	}
	g := &sessionGrants{}
	g.add(Grant{Tool: "write", Under: "notes"})
	f.Fuzz(func(t *testing.T, p string) {
		args, err := json.Marshal(map[string]string{"path": p})
		if err != nil {
			return
		}
		_, ok := g.covering("write", args)
		if !ok {
			return
		}
		for _, reading := range []string{p, strings.ReplaceAll(p, `\`, "/")} {
			c := path.Clean(reading)
			if c != "notes" && !strings.HasPrefix(c, "notes/") {
				t.Fatalf("%q is covered by a grant under notes, but reads as %q", p, c)
			}
		}
		if strings.ContainsRune(p, 0) {
			t.Fatalf("%q (with a NUL) is covered", p)
		}
	})
}

// FuzzDangerCannot: the raw-text shortcut of the dangerous-file rule never
// passes over arguments the rule matches once decoded (escapes, case,
// non-ASCII letters that lower-case to ASCII ones).
func FuzzDangerCannot(f *testing.F) {
	for _, s := range []string{`{"path":".env"}`, `{"path":"\u002eenv"}`, `{"path":".\u0065nv"}`, `{"path":"server.\u212aey"}`,
		`{"path":"server.` + "\u212a" + `ey"}`, `{"path":"A/.GIT/x"}`, `{"command":"cat ~/.ssh/id_rsa"}`, `{"path":"notes/a.md"}`,
		`{"x":["\\.bashrc"]}`, `{"p":"c:\\users\\me\\.aws\\config"}`, `{"command":"cat .e''nv"}`, `{"cmd":"cat .e\"\"nv"}`,
		`{"script":"cat .e\\nv"}`} {
		f.Add(s)
	}
	rule := DangerousFiles()[0]
	f.Fuzz(func(t *testing.T, raw string) {
		var m map[string]any
		if json.Unmarshal([]byte(raw), &m) != nil {
			return
		}
		if dangerCannot(json.RawMessage(raw)) && rule.When(m) {
			t.Fatalf("%s: skipped, but the rule matches it", raw)
		}
	})
}

// FuzzSuggestedPathGrant: whatever paths a call carries, a path rule the
// default suggestions offer for it covers that call (accepting it must
// not leave the person asked again about the very call), and covers it
// because every path argument, read either way (a backslash as a
// separator or a character), is inside the rule's folder, which is
// neither the working folder, the root nor above the working one.
func FuzzSuggestedPathGrant(f *testing.F) {
	for _, s := range [][2]string{{"notes/a", "notes/b"}, {"./notes/x/y", "notes/x/z"}, {"/srv/a/b", "/srv/a/c/d"}, {"a/b", "../c"},
		{"notes/../etc/x", "etc/y"}, {"~/n/a", "~/n/b"}, {"/a", "/b"}, {"x//y/", "x/./y/z"}, {"..", "../a/b"}, {"n\\a", "n/b"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, p1, p2 string) {
		args, err := json.Marshal(map[string]any{"path": p1, "dst": p2, "note": "x"})
		if err != nil {
			return
		}
		for _, s := range DefaultSuggestions(toolkit.Spec{Name: "write"}, args) {
			g := s.Grant
			if g.Under == "" {
				continue
			}
			if g.Under == "." || g.Under == "/" || g.Under == ".." || strings.HasPrefix(g.Under, "../") && strings.Trim(g.Under, "./") == "" {
				t.Fatalf("%q, %q: a rule for %q", p1, p2, g.Under)
			}
			gs := &sessionGrants{}
			gs.add(g)
			if _, ok := gs.covering("write", args); !ok {
				t.Fatalf("%q, %q: the rule for %q offered for the call does not cover it", p1, p2, g.Under)
			}
			for _, p := range []string{p1, p2} {
				for _, reading := range []string{p, strings.ReplaceAll(p, `\`, "/")} {
					c := path.Clean(reading)
					if c != g.Under && !strings.HasPrefix(c, g.Under+"/") && !(g.Under == "/" && strings.HasPrefix(c, "/")) {
						t.Fatalf("%q, %q: covered by a rule for %q, but %q reads as %q", p1, p2, g.Under, p, c)
					}
				}
			}
		}
	})
}

// FuzzDangerousPathSpellings: a path that names a dangerous file still
// does spelled another way that opens the same file somewhere: upper
// case, backslashes, a "./" or "x/../" in front, a trailing dot or space
// (Windows), a NUL and more after it (C).
func FuzzDangerousPathSpellings(f *testing.F) {
	for _, s := range []string{".env", "~/.ssh/id_rsa", "a/.git/config", "/home/u/.config/fish/config.fish", "keys/x.pem", ".aws", "id_rsa.pub"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if _, ok := DangerousPath(p); !ok {
			return
		}
		variants := []string{strings.ToUpper(p), strings.ReplaceAll(p, "/", `\`), "./" + p, "x/../" + p, p + "\x00.txt"}
		if !strings.HasSuffix(p, "/") && !strings.HasSuffix(p, `\`) && !strings.HasSuffix(p, ":") {
			variants = append(variants, p+".", p+" ")
		}
		for _, v := range variants {
			if _, ok := DangerousPath(v); !ok {
				t.Fatalf("DangerousPath(%q) but not %q", p, v)
			}
		}
	})
}
