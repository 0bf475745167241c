package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/toolkit"
)

// TestDemoServesMCP: the demo's page listener answers an MCP client at
// /mcp (the official Go SDK's client over streamable HTTP, as a desktop
// app would connect): it lists the tour's tools with their annotations and
// runs a call through the toolkit, whose events show under an mcp- session.
// A request from a browser page on another origin is refused (403).
func TestDemoServesMCP(t *testing.T) {
	ctx, addr, _ := startDemoPage(t)
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
	// Browsers: the page's own origin may use /mcp, a page elsewhere may
	// not (the client above, like desktop apps, sends no Origin).
	for origin, want := range map[string]int{"http://" + addr: http.StatusOK, "http://evil.example": http.StatusForbidden} {
		req, err := http.NewRequestWithContext(cctx, http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"page","version":"1"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Origin", origin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("/mcp with Origin %s: %s, want %d", origin, resp.Status, want)
		}
	}
}

// startDemoPage runs the demo with its page on a free port and extra
// flags, and waits until the tour is over and the page stays up.
func startDemoPage(t *testing.T, extra ...string) (context.Context, string, *syncBuffer) {
	t.Helper()
	d := startDemo(t, append([]string{"-dir", "../..", "-speed", "0", "-once=false", "-session", "mcp-tour"}, extra...)...)
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(d.stdout.String(), "The page stays up") {
		if msg := d.Failed(); msg != "" {
			t.Fatal(msg)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tour did not finish:\n%s", d.stdout.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx, d.addr, &d.stdout
}

// TestDemoRegistersMCPServer: -mcp starts an MCP server (a toolkit served
// over stdio by mcpbridge, built here) and its tools join the demo's
// toolkit in a group named after it; an outside MCP client calls one
// through the demo's /mcp: client -> demo -> MCP server and back.
func TestDemoRegistersMCPServer(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "mcp-echo")
	build := exec.Command("go", "build", "-o", bin, "../../mcpbridge/testdata/stdioserver")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the MCP server: %v\n%s", err, out)
	}
	ctx, addr, demoOut := startDemoPage(t, "-mcp", bin)
	out := demoOut.String()
	if !strings.Contains(out, `mcp: 1 tools from mcp-echo (`+bin+`), in the group "mcp-echo"`) {
		t.Fatalf("the demo did not register the server's tools:\n%s", out)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// echo declares no hints, so the demo's permissions ask: the question
	// comes to this client as an elicitation, which it accepts.
	var mu sync.Mutex
	var asked []string
	client := mcp.NewClient(&mcp.Implementation{Name: "demo-test", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params.Message)
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		},
	})
	cs, err := client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "mcp__mcp-echo__echo", Arguments: json.RawMessage(`{"text":"through two bridges"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || res.IsError {
		t.Fatalf("echo: %+v", res)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "through two bridges" {
		t.Fatalf("echo: %+v", res.Content[0])
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || !strings.Contains(asked[0], "mcp__mcp-echo__echo") {
		t.Fatalf("elicitations: %q", asked)
	}
}

// TestAnswerMCPElicitationOnPage: an MCP server registered like -mcp's asks
// for the user's input in the middle of a call; the request waits on the
// demo's elicitation desk and the page's approve endpoint answers it, the
// form's content as the approval's args (a rejection declines).
func TestAnswerMCPElicitationOnPage(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	// The protocol's newest revision asks through the result (multi
	// round-trip requests): the client answers and calls again.
	srv.AddTool(&mcp.Tool{Name: "greet", Description: "Asks the user's name, then greets.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult)
			if !ok {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{
					Message:         "Your name?",
					RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
				}}}, nil
			}
			if r.Action != "accept" {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "no name: " + r.Action}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("hello %v", r.Content["name"])}}}, nil
		})
	tk := toolkit.New()
	defer closeWithin(5*time.Second, tk.Close)
	desk := mcpbridge.NewElicitations(time.Minute)
	c, err := mcpbridge.Connect(context.Background(), tk, "asker", mcpbridge.TransportFunc(func(ctx context.Context) (mcp.Transport, error) {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}), mcpbridge.WithElicitations(desk))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	app := &webApp{desk: &approvalDesk{view: newTermView(io.Discard, false)}, elicit: desk}
	post := func(body string) (int, string) { return postApprove(app, body) }
	sess, _ := tk.Session("p")
	for _, tc := range []struct{ answer, want string }{
		{`"approve":true,"args":{"name":"Ada"}`, "hello Ada"},
		{`"approve":false`, "no name: decline"},
	} {
		b := sess.Start(context.Background(), []toolkit.Call{{ID: "g", Name: "mcp__asker__greet", Args: []byte(`{}`)}})
		for deadline := time.Now().Add(10 * time.Second); len(desk.Pending("p")) == 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no elicitation waits on the desk")
			}
		}
		if code, body := post(`{"session":"p","call":"g",` + tc.answer + `}`); code != http.StatusOK {
			t.Fatalf("answer %s: %d %s", tc.answer, code, body)
		}
		if rs := b.Wait(); rs[0].State != events.StateSuccess || rs[0].Text() != tc.want {
			t.Fatalf("answer %s: %s %q, want %q", tc.answer, rs[0].State, rs[0].Text(), tc.want)
		}
	}
}

// TestListFilesSkipsInstalledPackages: the demo's file tools look at the
// folder's own files, not at hidden folders or installed npm packages (CI
// installs clients/*/node_modules before the tour runs on the repository).
func TestListFilesSkipsInstalledPackages(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"main.go", "web/app.js", "node_modules/pkg/index.js", "web/node_modules/x.js", ".git/config"} {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, err := listFiles(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, filepath.ToSlash(strings.TrimPrefix(f, dir+string(filepath.Separator))))
	}
	if strings.Join(got, ",") != "main.go,web/app.js" {
		t.Fatalf("files %v", got)
	}
}
