package main

import (
	"os/exec"
	"strings"
	"testing"
)

// runAppJS runs checks on the page's web/app.js in Node (the test is
// skipped without it): the script runs after app.js is loaded with a
// stand-in window and document, prints "FAIL ..." for each check that
// fails and "done" at its end.
func runAppJS(t *testing.T, checks string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node")
	}
	script := `
globalThis.window = { addEventListener() {} };
globalThis.document = { readyState: 'loading', addEventListener() {} };
eval(require('fs').readFileSync('web/app.js', 'utf8'));
` + checks + "\nconsole.log('done');\n"
	out, err := exec.Command(node, "-e", script).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	if s := string(out); !strings.HasSuffix(s, "done\n") || strings.Contains(s, "FAIL") {
		t.Fatalf("%s", s)
	}
}
