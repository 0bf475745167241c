package mcpbridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/toolkit"
)

const envStdioServer = "MCPBRIDGE_TEST_STDIO_SERVER"

// serveStdio is the MCP server a stdio test spawns: this test binary, run
// again with envStdioServer set.
func serveStdio() int {
	slowStart()
	srv := mcp.NewServer(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "pid", Description: "The server's process id.", InputSchema: objectSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half"})
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(os.Getpid())}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "env", Description: "An environment variable.", InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Name string }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: os.Getenv(in.Name)}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "crash", Description: "Exits while answering.", InputSchema: objectSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "fatal: the test server crashed on purpose")
			time.Sleep(100 * time.Millisecond)
			os.Exit(3)
			return nil, nil
		})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func TestClientStdioProcess(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(rec))
	c := connect(t, tk, "proc", mcpbridge.Stdio{Command: exe, Env: []string{envStdioServer + "=1", "MCPBRIDGE_GREETING=hello"}})

	res := testutil.Run(t, tk, "s", testutil.Call("1", "mcp__proc__pid", `{}`), testutil.Call("2", "mcp__proc__env", `{"name":"MCPBRIDGE_GREETING"}`))
	pid := res[0].Text()
	if res[0].IsError() || pid == fmt.Sprint(os.Getpid()) || pid == "" {
		t.Fatalf("pid: %v %q", res[0].State, pid)
	}
	if res[1].Text() != "hello" {
		t.Errorf("env: %q", res[1].Text())
	}
	var got []string
	for _, ev := range rec.Of("1") {
		if ev.Type == events.TypeProgress {
			got = append(got, fmt.Sprintf("%s %v", ev.Progress.Message, *ev.Progress.Fraction))
		}
	}
	if strings.Join(got, ",") != "half 0.5" {
		t.Errorf("progress over stdio: %v", got)
	}

	// The process dies in the middle of a call: the call fails at once,
	// saying so with the end of the server's standard error.
	res = testutil.Run(t, tk, "s", testutil.Call("3", "mcp__proc__crash", `{}`))
	if !res[0].IsError() || !strings.Contains(res[0].Text(), `MCP server "proc" went away`) || !strings.Contains(res[0].Text(), "crashed on purpose") {
		t.Errorf("crash: %v %q", res[0].State, res[0].Text())
	}
	if c.Err() == nil {
		t.Error("client says connected after the crash")
	}
	// The next call starts a new process.
	res = testutil.Run(t, tk, "s", testutil.Call("4", "mcp__proc__pid", `{}`))
	if res[0].IsError() || res[0].Text() == pid {
		t.Errorf("after restart: %v %q (old pid %s)", res[0].State, res[0].Text(), pid)
	}
}

// httpServer serves the test server over streamable HTTP on a fixed
// address, so that it can stop and start again.
type httpServer struct {
	ts     *testServer
	addr   string
	srv    *http.Server
	header atomic.Value // the Authorization header last seen
}

func (h *httpServer) start(t *testing.T) {
	t.Helper()
	addr := h.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	mh := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return h.ts.srv }, nil)
	h.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.header.Store(r.Header.Get("Authorization"))
		mh.ServeHTTP(w, r)
	})}
	go func() { _ = h.srv.Serve(ln) }()
}

func (h *httpServer) stop() {
	if h.srv != nil {
		_ = h.srv.Close()
		h.srv = nil
	}
}

func TestClientStreamableHTTP(t *testing.T) {
	ts := newTestServer(t)
	h := &httpServer{ts: ts}
	h.start(t)
	t.Cleanup(h.stop)
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(rec))
	c := connect(t, tk, "web", mcpbridge.HTTP{URL: "http://" + h.addr + "/mcp", Headers: http.Header{"Authorization": {"Bearer t0ken"}}},
		mcpbridge.WithReconnect(5, 50*time.Millisecond))
	if got, _ := h.header.Load().(string); got != "Bearer t0ken" {
		t.Errorf("Authorization header %q", got)
	}
	res := testutil.Run(t, tk, "s", testutil.Call("p", "mcp__web__steps", `{}`), testutil.Call("e", "mcp__web__echo", `{"text":"over http"}`))
	if res[0].Text() != "done" || res[1].Text() != "echo: over http" {
		t.Fatalf("results %q %q", res[0].Text(), res[1].Text())
	}
	n := 0
	for _, ev := range rec.Of("p") {
		if ev.Type == events.TypeProgress {
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d progress events over HTTP, want 4", n)
	}

	// list_changed arrives over the standalone stream.
	ts.srv.AddTool(&mcp.Tool{Name: "later", Description: "Added later.", InputSchema: objectSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "later"}}}, nil
		})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := tk.Tool("mcp__web__later"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("list_changed over HTTP did not add the tool")
		}
		time.Sleep(5 * time.Millisecond)
	}

	// Cancellation reaches the server.
	ctx, cancel := context.WithCancel(context.Background())
	b := testutil.Session(t, tk, "s").Start(ctx, []toolkit.Call{testutil.Call("b", "mcp__web__block", `{}`)})
	testutil.WaitFor(t, ts.blockStarted, "the server's handler to start")
	cancel()
	testutil.WaitFor(t, ts.blockCancelled, "notifications/cancelled over HTTP")
	b.Wait()

	// The server goes away: calls fail with "unavailable" or "went away",
	// promptly; once it is back, a call reconnects.
	h.stop()
	ts.kill()
	start := time.Now()
	res = testutil.Run(t, tk, "s", testutil.Call("x", "mcp__web__echo", `{"text":"x"}`))
	if !res[0].IsError() || !strings.Contains(res[0].Text(), `MCP server "web"`) {
		t.Errorf("server down: %v %q", res[0].State, res[0].Text())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a call to a stopped server took %v", d)
	}
	h.start(t)
	deadline = time.Now().Add(10 * time.Second)
	for {
		res = testutil.Run(t, tk, "s", testutil.Call("y", "mcp__web__echo", `{"text":"back"}`))
		if res[0].Text() == "echo: back" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reconnection: %q (client: %v)", res[0].Text(), c.Err())
		}
		time.Sleep(60 * time.Millisecond)
	}
}

func TestClientStreamableHTTPServerGoneDuringCall(t *testing.T) {
	ts := newTestServer(t)
	h := &httpServer{ts: ts}
	h.start(t)
	t.Cleanup(h.stop)
	tk := testutil.Kit(t)
	c := connect(t, tk, "web", mcpbridge.HTTP{URL: "http://" + h.addr + "/mcp"})
	b := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("b", "mcp__web__block", `{}`)})
	testutil.WaitFor(t, ts.blockStarted, "the server's handler to start")
	start := time.Now()
	h.stop() // the handler keeps blocking: only the connection goes
	res := b.Wait()
	d := time.Since(start)
	if !res[0].IsError() || !strings.Contains(res[0].Text(), `MCP server "web"`) {
		t.Errorf("in-flight call: %v %q", res[0].State, res[0].Text())
	}
	if d > 5*time.Second {
		t.Errorf("in-flight call failed after %v", d)
	}
	if !strings.Contains(res[0].Text(), "went away during the call") {
		t.Errorf("in-flight call: %q", res[0].Text())
	}
	if c.Err() == nil {
		t.Error("client says connected")
	}
}
