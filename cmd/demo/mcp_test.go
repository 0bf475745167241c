package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestDemoServesMCP: the demo's page listener answers an MCP client at
// /mcp (the official Go SDK's client over streamable HTTP, as a desktop
// app would connect): it lists the tour's tools with their annotations and
// runs a call through the toolkit, whose events show under an mcp- session.
func TestDemoServesMCP(t *testing.T) {
	addr := freeAddr(t)
	ctx, stop := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	exited := make(chan error, 1)
	go func() {
		exited <- run(ctx, []string{"-dir", "../..", "-listen", addr, "-nats-listen", "", "-speed", "0", "-once=false", "-session", "mcp-tour"}, &out, &errOut)
	}()
	defer func() {
		stop()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("demo: %v\n%s", err, errOut.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("the demo did not stop")
		}
	}()
	// The tour runs first; the page stays up after it.
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(out.String(), "The page stays up") {
		select {
		case err := <-exited:
			t.Fatalf("the demo exited: %v\n%s\n%s", err, out.String(), errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tour did not finish:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "demo-test", Version: "1"}, nil)
	cs, err := client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(cctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var count *mcp.Tool
	names := map[string]bool{}
	for _, tool := range tools.Tools {
		names[tool.Name] = true
		if tool.Name == "count_lines" {
			count = tool
		}
	}
	for _, want := range []string{"count_lines", "write_note", "reset_tools", "tool_search"} {
		if !names[want] {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}
	if count == nil || count.Annotations == nil || !count.Annotations.ReadOnlyHint {
		t.Fatalf("count_lines: %+v", count)
	}
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "count_lines", Arguments: json.RawMessage(`{"dir":"internal"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError || !strings.Contains(text.String(), `"language":"Go"`) {
		t.Fatalf("count_lines over MCP: error %v, %q", res.IsError, text.String())
	}
	bad, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "count_lines", Arguments: json.RawMessage(`{"dir":7}`)})
	if err != nil || !bad.IsError {
		t.Fatalf("invalid arguments over MCP: %v %+v", err, bad)
	}
	// The call is one of the toolkit's: it is in /api/info's sessions.
	resp, err := http.Get("http://" + addr + "/api/info")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	if !strings.Contains(body.String(), `"mcp-`) {
		t.Errorf("no mcp- session in %s", body.String())
	}
}
