package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestScriptedTourUsesMCPServer: with -mcp, the scripted tour keeps the
// server's group on in turn 1's reset_tools (its tool_search result says
// to) and calls one of the server's tools in a turn of its own, whose
// result the answer quotes. Before, reset_tools {"notes":true} switched the
// server's group off and the tour never called its tools. The server is
// mcpbridge's test server (a toolkit over MCP on stdio, tool echo).
func TestScriptedTourUsesMCPServer(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "mcp-echo")
	if out, err := exec.Command("go", "build", "-o", bin, "../../mcpbridge/testdata/stdioserver").CombinedOutput(); err != nil {
		t.Fatalf("building the MCP server: %v\n%s", err, out)
	}
	p := runPiped(t, "-listen", "", "-nats-listen", "", "-dir", ".", "-speed", "0", "-plain", "-once", "-mcp", bin)
	p.wait(t, "=== Summary")
	if err := p.stop(); err != nil {
		t.Fatalf("the demo: %v\n%s", err, p.out)
	}
	s := p.out.String()
	for _, want := range []string{
		`call_0   reset_tools {"mcp-echo":true,"notes":true}`,
		`Active tool groups: mcp-echo, notes.`,
		`call_m1  mcp__mcp-echo__echo {"text":"hello from the toolstream tour"}`,
		`[call_m1] mcp__mcp-echo__echo -> success`,
		`The MCP server answered: hello from the toolstream tour`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the tour lacks %q:\n%s", want, s)
		}
	}
	// The call asks for approval (echo declares no hints): its lines in
	// the order they happen.
	start, asks, approved := strings.Index(s, "start       call_m1"), strings.Index(s, "approval call_m1"), strings.Index(s, "approved call_m1")
	if start < 0 || !(start < asks && asks < approved) {
		t.Errorf("want call_m1's start, its approval request, then who approved it:\n%s", s)
	}
	if regexp.MustCompile(`deactivated[^\n]*mcp-echo`).MatchString(s) {
		t.Errorf("the server's group was switched off:\n%s", s)
	}
}
