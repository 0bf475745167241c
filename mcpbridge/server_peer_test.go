package mcpbridge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/toolkit"
)

// serverPeerNode returns the node binary and the clients/mcp folder for the
// real-peer tests, skipping when they are missing, unless
// TOOLSTREAM_MCP_PEERS is set (CI), where missing peers are a failure.
func serverPeerNode(t *testing.T) (node, dir string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "clients", "mcp"))
	if err != nil {
		t.Fatal(err)
	}
	missing := func(what string) {
		if os.Getenv("TOOLSTREAM_MCP_PEERS") != "" {
			t.Fatalf("TOOLSTREAM_MCP_PEERS is set but %s", what)
		}
		t.Skipf("skipping the real-peer test: %s (run `npm ci` in clients/mcp; TOOLSTREAM_MCP_PEERS=1 makes this a failure)", what)
	}
	node, err = exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		missing("clients/mcp/node_modules has no @modelcontextprotocol/sdk")
	}
	return node, dir
}

// TestServerTypeScriptPeer runs the official TypeScript SDK's client
// (clients/mcp/server-peer.mjs) against the Server over streamable HTTP.
func TestServerTypeScriptPeer(t *testing.T) {
	node, dir := serverPeerNode(t)
	rs := &srvResults{ch: make(chan *events.Event, 64)}
	tk := srvToolkit(t, toolkit.WithInlineObserver(rs))
	srvNilOutputTools(t, tk)
	perms := interceptors.NewPermissions(
		interceptors.WithRules(
			interceptors.Rule{Tool: "noop", Decision: interceptors.Ask, Reason: "a test"},
			interceptors.Rule{Tool: "weather", When: func(args map[string]any) bool { return args["city"] == "Quito" }, Decision: interceptors.Ask},
		),
		interceptors.WithMode(interceptors.AllowAll),
		interceptors.WithApprovalTimeout(30*time.Second),
	)
	tk.Use(perms.Interceptor())
	srvRedactedContact(t, tk)
	s := srvNew(t, tk, mcpbridge.WithPermissions(perms))
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.Handler(nil))
	hs := httptest.NewServer(mux)
	defer hs.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stdout := runPeer(ctx, t, node, dir, "server-peer.mjs", hs.URL+"/mcp")
	var report struct {
		OK              bool
		ProtocolVersion string
		Tools           []string
		Progress        []struct{ Progress, Total float64 }
		Structured      map[string]any `json:"structuredContent"`
		Elicited        []string
		NoStructured    map[string]string
		Redacted        string
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout), &report); err != nil || !report.OK {
		t.Fatalf("report %s: %v", stdout, err)
	}
	if len(report.Tools) != 7 || report.Redacted == "" || len(report.NoStructured) != 2 || len(report.Progress) == 0 || report.Structured["temp_c"] != 21.5 || len(report.Elicited) != 2 {
		t.Fatalf("report = %+v", report)
	}
	// The cancelled call ended interrupted in the toolkit, and the
	// client's DELETE closed the toolstream session.
	deadline := time.Now().Add(10 * time.Second)
	for {
		rs.mu.Lock()
		var state events.State
		for _, ev := range rs.evs {
			if ev.Tool == "slow" {
				state = ev.Result.State
			}
		}
		rs.mu.Unlock()
		if state == events.StateInterrupted && len(tk.Sessions()) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slow ended %q; sessions open: %v", state, tk.Sessions())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runPeer runs a script of clients/mcp with node and returns what it wrote
// on its standard output; a script that fails fails the test, with its
// standard error.
func runPeer(ctx context.Context, t *testing.T, node, dir, script string, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("node: %s", stdout.Bytes())
	if err != nil {
		t.Fatalf("node %s: %v\nstderr: %s", script, err, stderr.Bytes())
	}
	return stdout.Bytes()
}
