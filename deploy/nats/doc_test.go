package natsdeploy_test

import (
	"os"
	"strings"
	"testing"
)

// TestSecurityDocQuotesTheConfig: docs/security.md quotes each configuration
// file of this folder whole, as it is, after a "quote:" marker naming it.
func TestSecurityDocQuotesTheConfig(t *testing.T) {
	doc, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"toolstream.conf", "worker-responses.conf", "worker-inbox-prefix.conf"} {
		file, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		marker := "<!-- quote: deploy/nats/" + name + " -->\n```\n"
		_, rest, ok := strings.Cut(string(doc), marker)
		if !ok {
			t.Errorf("docs/security.md does not quote deploy/nats/%s (no line %q before a code block)", name, strings.TrimSpace(marker))
			continue
		}
		quote, _, ok := strings.Cut(rest, "```")
		if !ok {
			t.Errorf("docs/security.md: the quote of %s does not end", name)
			continue
		}
		if quote != string(file) {
			t.Errorf("docs/security.md's quote of deploy/nats/%s differs from the file: copy the file into it again", name)
		}
	}
}
