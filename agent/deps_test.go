package agent_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestLoopDependencies: the loop links what the engine links and nothing
// more: no LLM SDK (the adapters are packages of their own), no NATS, no
// MCP SDK.
func TestLoopDependencies(t *testing.T) {
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	deps := func(pkg string) map[string]bool {
		out, err := exec.Command(goCmd, "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		m := map[string]bool{}
		for _, p := range strings.Fields(string(out)) {
			m[p] = true
		}
		return m
	}
	engine := deps("github.com/toolstream/toolstream/toolkit")
	for p := range deps("github.com/toolstream/toolstream/agent") {
		first, _, _ := strings.Cut(p, "/")
		if strings.Contains(first, ".") && !engine[p] && p != "github.com/toolstream/toolstream/agent" {
			t.Errorf("the loop links %s, which the engine does not", p)
		}
	}
}
