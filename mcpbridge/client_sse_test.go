package mcpbridge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/toolkit"
)

// progressCount counts the progress events of call id.
func progressCount(rec *testutil.Recorder, id string) int {
	n := 0
	for _, ev := range rec.Of(id) {
		if ev.Type == events.TypeProgress {
			n++
		}
	}
	return n
}

// TestClientSSEGoServer connects to the go-sdk's own HTTP+SSE server
// (mcp.NewSSEHandler): the tools register, calls run with their progress,
// the headers go with the GET and the POSTs, a cancelled call reaches the
// server, and a call after the server went away fails promptly, naming it.
func TestClientSSEGoServer(t *testing.T) {
	ts := newTestServer(t)
	var mu sync.Mutex
	var auth []string
	h := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return ts.srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Method+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(rec))
	c := connect(t, tk, "old", mcpbridge.SSE{URL: hs.URL + "/sse", Headers: http.Header{"Authorization": {"Bearer t0ken"}}})
	if len(c.Tools()) == 0 || len(c.Problems()) > 0 {
		t.Fatalf("tools %v, problems %v", c.Tools(), c.Problems())
	}
	res := testutil.Run(t, tk, "s", testutil.Call("p", "mcp__old__steps", `{}`), testutil.Call("e", "mcp__old__echo", `{"text":"over sse"}`))
	if res[0].Text() != "done" || res[1].Text() != "echo: over sse" {
		t.Fatalf("results %v %q, %v %q", res[0].State, res[0].Text(), res[1].State, res[1].Text())
	}
	if n := progressCount(rec, "p"); n != 4 {
		t.Errorf("%d progress events over SSE, want 4", n)
	}
	mu.Lock()
	if len(auth) < 2 {
		t.Errorf("requests %q: want the GET and POSTs", auth)
	}
	for _, a := range auth {
		if !strings.HasSuffix(a, " Bearer t0ken") {
			t.Errorf("a request without the header: %q (all: %q)", a, auth)
		}
	}
	mu.Unlock()

	ctx, cancel := context.WithCancel(context.Background())
	b := testutil.Session(t, tk, "s").Start(ctx, []toolkit.Call{testutil.Call("b", "mcp__old__block", `{}`)})
	testutil.WaitFor(t, ts.blockStarted, "the server's handler to start")
	cancel()
	testutil.WaitFor(t, ts.blockCancelled, "notifications/cancelled over SSE")
	b.Wait()

	hs.CloseClientConnections()
	hs.Close()
	start := time.Now()
	r := testutil.Run(t, tk, "s", testutil.Call("x", "mcp__old__echo", `{"text":"x"}`))[0]
	if !r.IsError() || !strings.Contains(r.Text(), `MCP server "old"`) {
		t.Errorf("server gone: %v %q", r.State, r.Text())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a call to a stopped server took %v", d)
	}
}

// TestClientSSEMaxEventSize: an event of the stream larger than
// SSE.MaxEventSize ends the connection, and the call's error says which
// bound it crossed; the next call dials again.
func TestClientSSEMaxEventSize(t *testing.T) {
	ts := newTestServer(t)
	ts.srv.AddTool(&mcp.Tool{Name: "blob", Description: "n bytes.", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ N int }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("b", in.N)}}}, nil
		})
	hs := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return ts.srv }, nil))
	t.Cleanup(hs.Close)
	tk := testutil.Kit(t)
	connect(t, tk, "old", mcpbridge.SSE{URL: hs.URL, MaxEventSize: 64 << 10}, mcpbridge.WithReconnect(5, 10*time.Millisecond))
	r := testutil.Run(t, tk, "s", testutil.Call("1", "mcp__old__blob", `{"n":100000}`))[0]
	if r.State == events.StateSuccess || !strings.Contains(r.Text(), "exceeded 65536 bytes, the bound SSE.MaxEventSize sets") {
		t.Fatalf("over the bound: %s %.400s", r.State, r.Text())
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := testutil.Run(t, tk, "s", testutil.Call("2", "mcp__old__blob", `{"n":5}`))[0]
		if r.Text() == "bbbbb" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no call served after the failure: %s %.300s", r.State, r.Text())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClientSSENotAnSSEServer: a URL that does not serve the HTTP+SSE
// transport fails Connect at once with an error that names the server's URL
// (without its query) and says what it answered and what to use instead,
// instead of the SDK's bare "failed to connect: Not Found" or a wait for an
// event that never comes.
func TestClientSSENotAnSSEServer(t *testing.T) {
	ts := newTestServer(t)
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ts.srv }, nil)
	var other *httptest.Server
	mux := http.NewServeMux()
	mux.Handle("/mcp", streamable)
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"hello":"world"}`)
	})
	mux.HandleFunc("/silent", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s/steal\n\n", other.URL)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	var stolen atomic.Int32
	other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
	}))
	t.Cleanup(other.Close)

	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/nothing?key=s3cret", []string{hs.URL + "/nothing (HTTP+SSE)", "404 Not Found", "not an MCP server of the HTTP+SSE transport", "mcpbridge.HTTP"}},
		{"/mcp", []string{hs.URL + "/mcp", "answered 4", "mcpbridge.HTTP"}},
		{"/json", []string{"Content-Type application/json, not an event stream", "mcpbridge.HTTP"}},
		{"/silent", []string{"did not answer within 300ms", "no endpoint event came"}},
		{"/elsewhere", []string{"another origin", other.URL, "refused"}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			c, err := mcpbridge.Connect(ctx, testutil.Kit(t), "old", mcpbridge.SSE{URL: hs.URL + tc.path, Headers: http.Header{"Authorization": {"Bearer t0ken"}}},
				mcpbridge.WithDialTimeout(300*time.Millisecond))
			if err == nil {
				c.Close()
				t.Fatal("connected")
			}
			t.Logf("%v", err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the URL's query is in the error: %v", err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
	if n := stolen.Load(); n > 0 {
		t.Errorf("%d requests went to the other origin", n)
	}
}

// TestClientSSETypeScriptServer connects to a server made with the
// official TypeScript SDK's SSEServerTransport (clients/mcp/sse-server-peer.mjs):
// tools and their hints, calls, progress, the event size bound, and the
// server's process killed under the client.
func TestClientSSETypeScriptServer(t *testing.T) {
	node, dir := serverPeerNode(t)
	cmd := exec.Command(node, "sse-server-peer.mjs")
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	kill := func() { _ = cmd.Process.Kill(); <-exited }
	t.Cleanup(kill)
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var hello struct{ URL string }
	select {
	case line := <-lines:
		if err := json.Unmarshal([]byte(line), &hello); err != nil || hello.URL == "" {
			t.Fatalf("node said %q (%v); stderr: %s", line, err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the TypeScript server did not start; stderr: %s", stderr.String())
	}

	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(rec))
	c := connect(t, tk, "ts", mcpbridge.SSE{URL: hello.URL}, mcpbridge.TrustHints(), mcpbridge.WithReconnect(1, time.Hour))
	got := map[string]bool{}
	for _, ti := range c.Tools() {
		got[ti.Tool] = true
	}
	if !got["echo"] || !got["steps"] || !got["big"] || len(c.Problems()) > 0 {
		t.Fatalf("tools %v, problems %v", c.Tools(), c.Problems())
	}
	if tl, _ := tk.Tool("mcp__ts__echo"); !tl.Spec().ReadOnly {
		t.Errorf("the trusted server's readOnlyHint did not make echo read-only")
	}
	res := testutil.Run(t, tk, "s",
		testutil.Call("e", "mcp__ts__echo", `{"text":"from go"}`),
		testutil.Call("p", "mcp__ts__steps", `{}`),
		testutil.Call("b", "mcp__ts__big", `{"n":100000}`),
		testutil.Call("bad", "mcp__ts__echo", `{"text":5}`),
	)
	if r := res[0]; r.IsError() || r.Text() != "echo: from go" {
		t.Errorf("echo: %v %q", r.State, r.Text())
	}
	if r := res[1]; r.IsError() || r.Text() != "done" {
		t.Errorf("steps: %v %q", r.State, r.Text())
	}
	if n := progressCount(rec, "p"); n != 3 {
		t.Errorf("%d progress events from the TypeScript server, want 3", n)
	}
	if r := res[2]; r.IsError() || len(r.Text()) != 100000 {
		t.Errorf("big: %v %d bytes", r.State, len(r.Text()))
	}
	if r := res[3]; !r.IsError() || !strings.Contains(r.Text(), "text") {
		t.Errorf("a number for a string (the engine checks the server's schema): %v %q", r.State, r.Text())
	}

	// A second client with a small event bound: the big result ends its
	// connection, and the error says why.
	tk2 := testutil.Kit(t)
	connect(t, tk2, "ts", mcpbridge.SSE{URL: hello.URL, MaxEventSize: 4096})
	if r := testutil.Run(t, tk2, "s", testutil.Call("b", "mcp__ts__big", `{"n":10000}`))[0]; !r.IsError() || !strings.Contains(r.Text(), "exceeded 4096 bytes") {
		t.Errorf("over the event bound: %v %.300s", r.State, r.Text())
	}

	// The server's process dies: a call fails promptly, naming the server.
	kill()
	start := time.Now()
	r := testutil.Run(t, tk, "s", testutil.Call("x", "mcp__ts__echo", `{"text":"x"}`))[0]
	if !r.IsError() || !strings.Contains(r.Text(), `MCP server "ts"`) {
		t.Errorf("server gone: %v %q", r.State, r.Text())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a call to a killed server took %v", d)
	}
}

// TestClientHTTPToAnSSEServerSaysUseSSE: HTTP (streamable) pointed at a
// server of the older HTTP+SSE transport fails Connect saying what the
// POST got and that SSE may reach it; a server that simply fails (500)
// gets no such advice.
func TestClientHTTPToAnSSEServerSaysUseSSE(t *testing.T) {
	ts := newTestServer(t)
	mux := http.NewServeMux()
	mux.Handle("/sse", mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return ts.srv }, nil))
	mux.HandleFunc("/broken", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "oops", http.StatusInternalServerError) })
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	for _, tc := range []struct {
		path, want string
		hint       bool
	}{
		{"/sse", "the server answered a POST with 400 Bad Request: if it speaks the older HTTP+SSE transport (MCP 2024-11-05), reach it with mcpbridge.SSE", true},
		{"/nothing", "the server answered a POST with 404 Not Found: if it speaks the older HTTP+SSE transport", true},
		{"/broken", "Internal Server Error", false},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		c, err := mcpbridge.Connect(ctx, testutil.Kit(t), "x", mcpbridge.HTTP{URL: hs.URL + tc.path}, mcpbridge.WithDialTimeout(5*time.Second))
		cancel()
		if err == nil {
			c.Close()
			t.Fatalf("%s: connected", tc.path)
		}
		t.Logf("%s: %v", tc.path, err)
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "mcpbridge.SSE") != tc.hint {
			t.Errorf("%s: %v", tc.path, err)
		}
	}
}
