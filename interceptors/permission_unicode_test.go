package interceptors_test

import (
	"encoding/json"
	"testing"

	"github.com/toolstream/toolstream/interceptors"
)

// TestDangerousFilesUnicodeSpellings: the dangerous-file check reads
// names case-insensitively as Unicode folds case (U+017F LONG S is an s,
// U+212A KELVIN SIGN a k: strings.EqualFold(".zſhrc", ".zshrc")), and
// drops the code points HFS+ ignores in names (zero-width joiners,
// direction marks, U+FEFF: ".g\u200cit" is ".git" there, git's
// CVE-2014-9390), so that a spelling the disk opens as the file does not
// pass the tripwire.
func TestDangerousFilesUnicodeSpellings(t *testing.T) {
	for _, p := range []string{
		".zſhrc", "~/.ſsh/config", "/home/u/.aws/credentialſ", "tls/site.\u212aey", "~/.bash_profile\u200e",
		".g\u200cit/config", "repo/.git\u200d/hooks/pre-commit", ".\u200dbashrc", ".en\ufeffv", "~/.s\u202esh/config", "x/.npm\u206arc",
		`C:\Users\me\.ſsh\config`, "notes/../.\u200cenv",
	} {
		if _, ok := interceptors.DangerousPath(p); !ok {
			t.Errorf("DangerousPath(%q) = false; the file it names on a case-insensitive or HFS+ disk is dangerous", p)
		}
		b, _ := json.Marshal(map[string]string{"path": p})
		if args := string(b); !dangerous(t, args) {
			t.Errorf("DangerousFiles did not ask about %s", args)
		}
	}
	for _, p := range []string{"notes/ſummary.md", "docs/\u200cssh.md", "a\u200cb.txt", "env\u200c.md"} {
		if _, ok := interceptors.DangerousPath(p); ok {
			t.Errorf("DangerousPath(%q) = true", p)
		}
	}
}
