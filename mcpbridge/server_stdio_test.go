package mcpbridge_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServerStdio runs a program that serves a toolkit with Serve over mcp.StdioTransport and
// talks to it over its standard input and output with the go-sdk client.
func TestServerStdio(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	bin := filepath.Join(t.TempDir(), "stdioserver")
	if out, err := exec.Command(goBin, "build", "-o", bin, "./testdata/stdioserver").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	progressed := make(chan float64, 4)
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progressed <- req.Params.Progress
		},
	})
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.InitializeResult().ServerInfo; got == nil || got.Name != "stdioserver" {
		t.Fatalf("server info %+v", got)
	}
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "over stdio"}}
	params.SetProgressToken(1)
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "over stdio" {
		t.Fatalf("echo: %+v %v", res, err)
	}
	select {
	case p := <-progressed:
		if p != 50 {
			t.Errorf("progress %v, want 50", p)
		}
	case <-time.After(5 * time.Second):
		t.Error("no progress over stdio")
	}
	// Closing stdin ends Serve and the program exits cleanly (the
	// transport reports a non-zero exit).
	if err := cs.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}
