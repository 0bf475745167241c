package mcpbridge_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// envConformance makes TestClientConformance run (and fail when the suite
// is missing); .ci/run sets it for a step of its own, so the suite's timed
// scenario (sse-retry) does not run beside the whole test suite's load.
const envConformance = "TOOLSTREAM_MCP_CONFORMANCE"

// TestClientConformance runs the official MCP conformance suite's client
// scenarios (clients/mcp: @modelcontextprotocol/conformance, on the Node 22
// that npm ci installs there) against testdata/conformanceclient, which
// connects with mcpbridge.Connect over mcpbridge.HTTP and its OAuth option.
// The suite judges each scenario; the scenarios listed in
// testdata/conformance-expected-failures.yml are the known failures
// (docs/mcp.md says why): another failure fails the test, and so does one
// of those passing (the list must then shrink).
func TestClientConformance(t *testing.T) {
	if os.Getenv(envConformance) == "" {
		t.Skipf("set %s=1 to run the MCP conformance suite's client scenarios (after `npm ci` in clients/mcp)", envConformance)
	}
	dir, err := filepath.Abs(filepath.Join("..", "clients", "mcp"))
	if err != nil {
		t.Fatal(err)
	}
	suite := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	if _, err := os.Stat(suite); err != nil {
		t.Fatalf("%s is set but the suite is missing (run `npm ci` in clients/mcp): %v", envConformance, err)
	}
	// The suite needs Node 22 (fs.globSync): the one npm ci brought, else
	// the machine's.
	node := filepath.Join(dir, "node_modules", ".bin", "node")
	if _, err := os.Stat(node); err != nil {
		if node, err = exec.LookPath("node"); err != nil {
			t.Fatal("no node: run `npm ci` in clients/mcp (it brings Node 22 on linux/x64) or install Node 22")
		}
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "conformanceclient")
	if out, err := exec.Command(goBin, "build", "-o", bin, "./testdata/conformanceclient").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	baseline, err := filepath.Abs(filepath.Join("testdata", "conformance-expected-failures.yml"))
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, suite, "client", "--command", bin, "--suite", "all",
		"--expected-failures", baseline, "-o", t.TempDir())
	cmd.Dir = t.TempDir() // the suite writes nothing else, but not into the repository
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()

	// "✓ name: 14 passed, 0 failed" per scenario in the summary.
	lines := regexp.MustCompile(`(?m)^([✓✗]) (\S+): \d+ passed`).FindAllStringSubmatch(out.String(), -1)
	passed := 0
	for _, l := range lines {
		if l[1] == "✓" {
			passed++
		}
	}
	t.Logf("MCP conformance, client scenarios: %d of %d pass", passed, len(lines))
	summary := out.Bytes()
	if i := bytes.Index(summary, []byte("=== SUITE SUMMARY ===")); i >= 0 {
		summary = summary[i:]
	}
	if runErr != nil {
		t.Fatalf("the suite's verdict against the expected failures: %v\n%s", runErr, summary)
	}
	if len(lines) < 26 {
		t.Fatalf("the suite ran %d scenarios, fewer than the 26 of 0.1.16:\n%s", len(lines), summary)
	}
}
