package mcpbridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/toolkit"
)

// envPeers, set by .ci/run after `npm ci` in clients/mcp, makes the tests
// against the Node.js peers fail instead of skipping when node or the
// packages are missing.
const envPeers = "TOOLSTREAM_MCP_PEERS"

// everything returns the stdio endpoint of @modelcontextprotocol/server-everything
// from clients/mcp, skipping (or failing, under TOOLSTREAM_MCP_PEERS) when
// node or the package is missing.
func everything(t *testing.T) mcpbridge.Stdio {
	t.Helper()
	script, err := filepath.Abs("../clients/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	node, nodeErr := exec.LookPath("node")
	_, scriptErr := os.Stat(script)
	if nodeErr != nil || scriptErr != nil {
		msg := fmt.Sprintf("needs node in PATH and `npm ci` in clients/mcp (node: %v; server-everything: %v)", nodeErr, scriptErr)
		if os.Getenv(envPeers) != "" {
			t.Fatalf("%s is set but the peer is missing: %s", envPeers, msg)
		}
		t.Skip(msg)
	}
	return mcpbridge.Stdio{Command: node, Args: []string{script, "stdio"}}
}

// TestClientEverythingServer registers the reference server as a toolstream
// MCP client over stdio: its tools validate and run, and its long-running
// operation's progress arrives as toolstream progress events on a real NATS
// bus.
func TestClientEverythingServer(t *testing.T) {
	ep := everything(t)
	bus := natstest.Bus(t)
	var mu sync.Mutex
	var got []*events.Event
	sub, err := bus.Subscribe(bus.Subjects().Session("peer"), func(ev *events.Event) {
		mu.Lock()
		got = append(got, ev)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	tk := testutil.Kit(t, toolkit.WithInlineObserver(bus.Publisher()))
	c := connect(t, tk, "everything", ep)

	for _, p := range c.Problems() {
		t.Errorf("problem: %v", p)
	}
	reg := map[string]bool{}
	for _, ti := range c.Tools() {
		reg[ti.Tool] = true
	}
	for _, n := range []string{"echo", "get-sum", "get-tiny-image", "get-structured-content", "get-resource-links", "trigger-long-running-operation"} {
		if !reg[n] {
			t.Errorf("tool %q not registered; got %v", n, c.Tools())
		}
	}

	res := testutil.Run(t, tk, "peer",
		testutil.Call("echo", "mcp__everything__echo", `{"message":"hi"}`),
		testutil.Call("bad", "mcp__everything__echo", `{"message":5}`),
		testutil.Call("sum", "mcp__everything__get-sum", `{"a":2,"b":3}`),
		testutil.Call("img", "mcp__everything__get-tiny-image", `{}`),
		testutil.Call("st", "mcp__everything__get-structured-content", `{"location":"Chicago"}`),
		testutil.Call("long", "mcp__everything__trigger-long-running-operation", `{"duration":1,"steps":4}`),
	)
	if r := res[0]; r.IsError() || !strings.Contains(r.Text(), "hi") {
		t.Errorf("echo: %v %q", r.State, r.Text())
	}
	if r := res[1]; !r.IsError() || !strings.Contains(r.Text(), "message") {
		t.Errorf("echo with a number (the engine validates the server's schema): %v %q", r.State, r.Text())
	}
	if r := res[2]; r.IsError() || !strings.Contains(r.Text(), "5") {
		t.Errorf("get-sum: %v %q", r.State, r.Text())
	}
	var image bool
	for _, p := range res[3].Content {
		image = image || (p.MediaType == "image/png" && len(p.Data) > 0)
	}
	if res[3].IsError() || !image {
		t.Errorf("get-tiny-image: %v %v", res[3].State, res[3].Content)
	}
	if r := res[4]; r.IsError() || len(r.Content) == 0 || r.Content[len(r.Content)-1].Type != events.PartJSON {
		t.Errorf("get-structured-content: %v %v", r.State, r.Content)
	} else {
		var w struct{ Temperature, Humidity *float64 }
		if err := json.Unmarshal(r.Content[len(r.Content)-1].JSON, &w); err != nil || w.Temperature == nil {
			t.Errorf("structured content %s: %v", r.Content[len(r.Content)-1].JSON, err)
		}
	}
	if r := res[5]; r.IsError() || !strings.Contains(r.Text(), "completed") {
		t.Errorf("long-running operation: %v %q", r.State, r.Text())
	}

	// The progress, as a subscriber on NATS sees it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		var fr []float64
		var result bool
		for _, ev := range got {
			if ev.Call != "long" {
				continue
			}
			switch ev.Type {
			case events.TypeProgress:
				if ev.Progress.Fraction != nil {
					fr = append(fr, *ev.Progress.Fraction)
				}
			case events.TypeResult:
				result = true
			}
		}
		mu.Unlock()
		if result {
			if fmt.Sprint(fr) != "[0.25 0.5 0.75 1]" {
				t.Errorf("progress fractions on NATS %v, want [0.25 0.5 0.75 1]", fr)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no result event on NATS; progress %v", fr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestClientEverythingElicitation: the reference server asks for input with
// elicitation/create on the wire (its trigger-elicitation-request tool, which
// it adds after initialization when the client can elicit: list_changed);
// the request reaches the approval desk as an approval event on NATS and an
// answer given by code reaches the server.
func TestClientEverythingElicitation(t *testing.T) {
	ep := everything(t)
	bus := natstest.Bus(t)
	approvals := make(chan interceptors.ApprovalRequest, 8)
	sub, err := bus.Subscribe(bus.Subjects().Call("peer", "", string(interceptors.ApprovalEvent)), func(ev *events.Event) {
		var r interceptors.ApprovalRequest
		if json.Unmarshal(ev.Data, &r) == nil {
			approvals <- r
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	tk := testutil.Kit(t, toolkit.WithInlineObserver(bus.Publisher()))
	desk := mcpbridge.NewElicitations(time.Minute)
	connect(t, tk, "everything", ep, mcpbridge.WithElicitations(desk))
	const tool = "mcp__everything__trigger-elicitation-request"
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := tk.Tool(tool); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never registered", tool)
		}
		time.Sleep(10 * time.Millisecond)
	}
	b := testutil.Session(t, tk, "peer").Start(context.Background(), []toolkit.Call{testutil.Call("ask", tool, `{}`)})
	var req interceptors.ApprovalRequest
	select {
	case req = <-approvals:
	case <-time.After(10 * time.Second):
		t.Fatal("no approval event on NATS")
	}
	if req.Status != "pending" || req.CallID != "ask" || req.Note != "elicitation" || !strings.Contains(string(req.Args), `"name"`) {
		t.Errorf("approval request %+v", req)
	}
	if err := desk.Accept(req.Session, req.CallID, map[string]any{"name": "Ada Lovelace"}); err != nil {
		t.Fatal(err)
	}
	res := b.Wait()
	if res[0].IsError() || !strings.Contains(res[0].Text(), "Ada Lovelace") || !strings.Contains(res[0].Text(), "provided the requested information") {
		t.Errorf("elicitation result: %v %q", res[0].State, res[0].Text())
	}
	select {
	case r := <-approvals:
		if r.Status != "approved" {
			t.Errorf("decision event %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no decision event on NATS")
	}
}

// TestClientEverythingStreamableHTTP: the reference server over streamable
// HTTP (its own Express transport): tools run and the long-running
// operation's progress, read from the response's event stream, arrives
// before the result.
func TestClientEverythingStreamableHTTP(t *testing.T) {
	ep := everything(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(ep.Command, ep.Args[0], "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprint("PORT=", port))
	stderr := &lockedWriter{w: &strings.Builder{}}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := fmt.Sprint("127.0.0.1:", port)
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything did not listen on %s: %v; its standard error: %s", addr, err, stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(rec))
	c := connect(t, tk, "everything", mcpbridge.HTTP{URL: "http://" + addr + "/mcp"})
	for _, p := range c.Problems() {
		t.Errorf("problem: %v", p)
	}
	res := testutil.Run(t, tk, "s",
		testutil.Call("echo", "mcp__everything__echo", `{"message":"over http"}`),
		testutil.Call("long", "mcp__everything__trigger-long-running-operation", `{"duration":1,"steps":4}`))
	if !strings.Contains(res[0].Text(), "over http") {
		t.Errorf("echo: %v %q", res[0].State, res[0].Text())
	}
	if !strings.Contains(res[1].Text(), "completed") {
		t.Errorf("long-running operation: %v %q", res[1].State, res[1].Text())
	}
	var fr []float64
	for _, ev := range rec.Of("long") {
		if ev.Type == events.TypeProgress && ev.Progress.Fraction != nil {
			fr = append(fr, *ev.Progress.Fraction)
		}
	}
	if fmt.Sprint(fr) != "[0.25 0.5 0.75 1]" {
		t.Errorf("progress over HTTP %v, want [0.25 0.5 0.75 1]", fr)
	}
}

// lockedWriter serializes writes from a process's output copier and reads
// by the test.
type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}
