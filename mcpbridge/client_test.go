package mcpbridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/toolkit"
)

// testServer is an MCP server in the test process; each connection of the
// client gets a new in-memory pair, so the server can "go away" and be
// reached again.
type testServer struct {
	srv      *mcp.Server
	mu       sync.Mutex
	sessions []*mcp.ServerSession
	refuse   atomic.Bool
	dials    atomic.Int32

	blockStarted   chan struct{}
	blockCancelled chan struct{}
	release        chan struct{} // closed by kill: handlers that block return
	releaseOnce    sync.Once
}

var objectSchema = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)

func newTestServer(t *testing.T) *testServer {
	t.Helper()
	ts := &testServer{
		srv:            mcp.NewServer(&mcp.Implementation{Name: "test", Title: "Test server", Version: "1"}, &mcp.ServerOptions{Instructions: "Use the test tools."}),
		blockStarted:   make(chan struct{}),
		blockCancelled: make(chan struct{}),
		release:        make(chan struct{}),
	}
	ts.srv.AddTool(&mcp.Tool{Name: "echo", Description: "Echoes text.", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, Title: "Echo"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Text string }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil
		})
	ts.srv.AddTool(&mcp.Tool{Name: "steps", Description: "Reports progress.", InputSchema: objectSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tok := req.Params.GetProgressToken()
			if tok == nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no progress token"}}}, nil
			}
			for i := 1; i <= 4; i++ {
				p := &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Message: "step"}
				if i <= 3 {
					p.Total = 4
				} else {
					p.Message = "no total"
				}
				if err := req.Session.NotifyProgress(ctx, p); err != nil {
					return nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	ts.srv.AddTool(&mcp.Tool{Name: "kinds", Description: "Returns every kind of content.", InputSchema: objectSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{
				Content: []mcp.Content{
					&mcp.TextContent{Text: "hello"},
					&mcp.ImageContent{MIMEType: "image/png", Data: []byte{1, 2, 3}},
					&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte{4, 5}},
					&mcp.ResourceLink{URI: "file:///a.txt", Name: "a.txt", MIMEType: "text/plain"},
					&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://t", MIMEType: "text/plain", Text: "inside"}},
					&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://b", MIMEType: "application/x-bin", Blob: []byte{9, 8}}},
					&mcp.TextContent{Text: `{"n": 1}`},
				},
				StructuredContent: map[string]any{"n": 1},
			}, nil
		})
	ts.srv.AddTool(&mcp.Tool{Name: "fail", Description: "Fails.", InputSchema: objectSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "disk full"}}}, nil
		})
	var once sync.Once
	ts.srv.AddTool(&mcp.Tool{Name: "block", Description: "Blocks until cancelled.", InputSchema: objectSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			once.Do(func() { close(ts.blockStarted) })
			select {
			case <-ctx.Done():
				close(ts.blockCancelled)
				return nil, ctx.Err()
			case <-ts.release:
				return nil, errors.New("the server is going away")
			}
		})
	t.Cleanup(ts.kill)
	return ts
}

func (ts *testServer) endpoint() mcpbridge.Endpoint {
	return mcpbridge.TransportFunc(func(ctx context.Context) (mcp.Transport, error) {
		ts.dials.Add(1)
		if ts.refuse.Load() {
			return nil, errors.New("connection refused")
		}
		ct, st := mcp.NewInMemoryTransports()
		ss, err := ts.srv.Connect(ctx, st, nil)
		if err != nil {
			return nil, err
		}
		ts.mu.Lock()
		ts.sessions = append(ts.sessions, ss)
		ts.mu.Unlock()
		return ct, nil
	})
}

// kill ends every connection from the server's side: the server went away.
func (ts *testServer) kill() {
	ts.mu.Lock()
	ts.sessions = nil
	ts.mu.Unlock()
	var ss []*mcp.ServerSession // in memory and over HTTP
	for s := range ts.srv.Sessions() {
		ss = append(ss, s)
	}
	// The connections close first, so that a blocked handler released
	// below cannot answer on one (in memory it sometimes did, and the
	// client saw an error response instead of a server gone). A
	// streamable HTTP session may wait for its handlers to return: they
	// are released once the closing is done, or after 100 ms.
	closed := make(chan struct{})
	go func() {
		for _, s := range ss {
			_ = s.Close()
		}
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(100 * time.Millisecond):
	}
	ts.releaseOnce.Do(func() { close(ts.release) })
	<-closed
	for _, s := range ss {
		_ = s.Wait()
	}
}

func connect(t *testing.T, tk *toolkit.Toolkit, name string, ep mcpbridge.Endpoint, opts ...mcpbridge.ClientOption) *mcpbridge.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := mcpbridge.Connect(ctx, tk, name, ep, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("closing the client: %v", err)
		}
	})
	return c
}

func names(tk *toolkit.Toolkit) []string {
	var out []string
	for _, tl := range tk.Tools() {
		out = append(out, tl.Spec().Name)
	}
	return out
}

func TestClientRegistersToolsWithNamingRuleAndFilters(t *testing.T) {
	ts := newTestServer(t)
	ts.srv.AddTool(&mcp.Tool{Name: "weird.name/ü", Description: "A name models refuse.", InputSchema: objectSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "weird"}}}, nil
		})
	long := strings.Repeat("x", 80)
	ts.srv.AddTool(&mcp.Tool{Name: long, Description: "A long name.", InputSchema: objectSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "long"}}}, nil
		})
	tk := testutil.Kit(t)
	c := connect(t, tk, "srv", ts.endpoint(), mcpbridge.Exclude("block", "kinds"))

	got := names(tk)
	want := map[string]bool{
		"mcp__srv__echo": true, "mcp__srv__steps": true, "mcp__srv__fail": true,
		mcpbridge.ToolName("mcp__srv__", "weird.name/ü"): true,
		mcpbridge.ToolName("mcp__srv__", long):           true,
	}
	if len(got) != len(want) {
		t.Fatalf("registered %v, want %v", got, want)
	}
	for _, n := range got {
		if !want[n] {
			t.Errorf("unexpected tool %q", n)
		}
		if err := toolkit.CheckToolName(n); err != nil {
			t.Errorf("%q: %v", n, err)
		}
	}
	if n := mcpbridge.ToolName("mcp__srv__", "weird.name/ü"); !strings.HasPrefix(n, "mcp__srv__weird_name__") || len(n) != len("mcp__srv__weird_name__")+9 {
		t.Errorf("sanitized name %q", n)
	}
	// The examples of docs/mcp.md.
	if n := mcpbridge.ToolName("mcp__srv__", "weird.name/ü"); n != "mcp__srv__weird_name___bb7d6bb5" {
		t.Errorf("docs/mcp.md's example is %q", n)
	}
	if n := mcpbridge.ToolName("mcp__srv__", long); n != "mcp__srv__"+strings.Repeat("x", 45)+"_d929cdee" {
		t.Errorf("docs/mcp.md's long example is %q", n)
	}
	if a, b := mcpbridge.ToolName("mcp__srv__", "a.b"), mcpbridge.ToolName("mcp__srv__", "a/b"); a == b {
		t.Errorf("a.b and a/b both named %q", a)
	}
	if n := mcpbridge.ToolName("mcp__srv__", long); len(n) != 64 {
		t.Errorf("long name %q is %d characters", n, len(n))
	}
	if len(c.Problems()) != 0 {
		t.Errorf("problems: %v", c.Problems())
	}

	// Include keeps only what matches; Exclude wins.
	tk2 := testutil.Kit(t)
	connect(t, tk2, "two", ts.endpoint(), mcpbridge.Include("e*", "f*", "kinds"), mcpbridge.Exclude("fail"), mcpbridge.WithPrefix("x_"))
	if got := names(tk2); strings.Join(got, ",") != "x_echo,x_kinds" && strings.Join(got, ",") != "x_kinds,x_echo" {
		t.Errorf("filtered tools %v", got)
	}

	// The engine validates arguments against the server's schema.
	res := testutil.Run(t, tk, "s", testutil.Call("1", "mcp__srv__echo", `{"text": 5}`), testutil.Call("2", "mcp__srv__echo", `{"text":"hi"}`))
	if !res[0].IsError() || !strings.Contains(res[0].Text(), "text") {
		t.Errorf("invalid arguments: %v %q", res[0].State, res[0].Text())
	}
	if res[1].IsError() || res[1].Text() != "echo: hi" {
		t.Errorf("echo: %v %q", res[1].State, res[1].Text())
	}
}

func TestClientSkipsToolWhoseSchemaDoesNotCompile(t *testing.T) {
	ts := newTestServer(t)
	ts.srv.AddTool(&mcp.Tool{Name: "broken", Description: "Bad schema.", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"$ref":"#/$defs/nowhere"}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	ts.srv.AddTool(&mcp.Tool{Name: "badtype", Description: "Unknown type.", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"nonsense"}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	tk := testutil.Kit(t)
	c := connect(t, tk, "srv", ts.endpoint())
	ps := c.Problems()
	skipped := map[string]string{}
	for _, p := range ps {
		if !p.Registered {
			skipped[p.Tool] = p.Error()
		}
	}
	for _, n := range []string{"broken", "badtype"} {
		msg, ok := skipped[n]
		if !ok {
			t.Errorf("tool %q not reported as skipped; problems: %v", n, ps)
			continue
		}
		if !strings.Contains(msg, n) {
			t.Errorf("problem does not name the tool: %s", msg)
		}
		if _, ok := tk.Tool("mcp__srv__" + n); ok {
			t.Errorf("%q registered", n)
		}
	}
	if _, ok := tk.Tool("mcp__srv__echo"); !ok {
		t.Error("a bad schema elsewhere kept echo out")
	}
}

func TestClientProgressAndContent(t *testing.T) {
	ts := newTestServer(t)
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(rec))
	connect(t, tk, "srv", ts.endpoint())

	res := testutil.Run(t, tk, "s", testutil.Call("p", "mcp__srv__steps", `{}`), testutil.Call("k", "mcp__srv__kinds", `{}`), testutil.Call("f", "mcp__srv__fail", `{}`))
	if res[0].IsError() || res[0].Text() != "done" {
		t.Fatalf("steps: %v %q", res[0].State, res[0].Text())
	}
	var prog []events.Progress
	for _, ev := range rec.Of("p") {
		if ev.Type == events.TypeProgress {
			prog = append(prog, *ev.Progress)
		}
	}
	if len(prog) != 4 {
		t.Fatalf("%d progress events, want 4: %+v", len(prog), prog)
	}
	for i, p := range prog[:3] {
		if p.Fraction == nil || *p.Fraction != float64(i+1)/4 || p.Message != "step" {
			t.Errorf("progress %d: %+v", i, p)
		}
	}
	if prog[3].Fraction != nil || prog[3].Message != "no total" {
		t.Errorf("progress without a total: %+v", prog[3])
	}

	k := res[1]
	if k.IsError() {
		t.Fatalf("kinds: %q", k.Text())
	}
	// The text blocks beside structuredContent are its copy for older
	// clients: out of what the model sees, "hello" kept in Meta.
	if got := k.Meta["mcp_text"]; got != "hello" {
		t.Errorf("Meta[mcp_text] = %#v", got)
	}
	c := k.Content
	if len(c) != 6 {
		t.Fatalf("kinds: %d parts: %v", len(c), c)
	}
	if c[0].MediaType != "image/png" || string(c[0].Data) != "\x01\x02\x03" {
		t.Errorf("image: %v", c[0])
	}
	if c[1].MediaType != "audio/wav" || string(c[1].Data) != "\x04\x05" {
		t.Errorf("audio: %v", c[1])
	}
	var link struct{ Type, URI, Name string }
	if err := json.Unmarshal(c[2].JSON, &link); err != nil || link.Type != "resource_link" || link.URI != "file:///a.txt" || link.Name != "a.txt" {
		t.Errorf("resource link: %s", c[2].JSON)
	}
	var emb struct {
		Type     string
		Resource struct{ URI, Text string }
	}
	if err := json.Unmarshal(c[3].JSON, &emb); err != nil || emb.Type != "resource" || emb.Resource.URI != "mem://t" || emb.Resource.Text != "inside" {
		t.Errorf("embedded text resource: %s", c[3].JSON)
	}
	if c[4].MediaType != "application/x-bin" || string(c[4].Data) != "\x09\x08" {
		t.Errorf("embedded blob: %v", c[4])
	}
	// The text copy of the structured content is dropped; the structured
	// content comes last as JSON.
	if c[5].Type != events.PartJSON || string(c[5].JSON) != `{"n":1}` {
		t.Errorf("structured content: %v", c[5])
	}
	testutil.CheckDeltasAddUp(t, rec, k)

	if !res[2].IsError() || res[2].Text() != "Error: disk full" {
		t.Errorf("isError: %v %q", res[2].State, res[2].Text())
	}
	rec.Check(t)
}

func TestClientCancelSendsNotificationsCancelled(t *testing.T) {
	ts := newTestServer(t)
	tk := testutil.Kit(t)
	connect(t, tk, "srv", ts.endpoint())
	sess := testutil.Session(t, tk, "s")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := sess.Start(ctx, []toolkit.Call{testutil.Call("b", "mcp__srv__block", `{}`)})
	testutil.WaitFor(t, ts.blockStarted, "the server's handler to start")
	cancel()
	// The server's handler sees its context end only when
	// notifications/cancelled arrives.
	testutil.WaitFor(t, ts.blockCancelled, "notifications/cancelled at the server")
	res := b.Wait()
	if !res[0].IsError() {
		t.Errorf("cancelled call: %v %q", res[0].State, res[0].Text())
	}
}

func TestClientDeadlineSendsNotificationsCancelled(t *testing.T) {
	ts := newTestServer(t)
	tk := testutil.Kit(t)
	connect(t, tk, "srv", ts.endpoint(), mcpbridge.WithTimeout(300*time.Millisecond))
	res := testutil.Run(t, tk, "s", testutil.Call("b", "mcp__srv__block", `{}`))
	testutil.WaitFor(t, ts.blockCancelled, "notifications/cancelled at the server")
	if res[0].State != events.StateTimeout {
		t.Errorf("call past its deadline: %v %q", res[0].State, res[0].Text())
	}
}

func TestClientAnnotationsPolicy(t *testing.T) {
	ts := newTestServer(t)
	tk := testutil.Kit(t)
	connect(t, tk, "srv", ts.endpoint())
	echo, _ := tk.Tool("mcp__srv__echo")
	if s := echo.Spec(); s.ReadOnly || s.ConcurrencySafe || s.Title != "Echo" {
		t.Errorf("untrusted hints: ReadOnly %v ConcurrencySafe %v Title %q", s.ReadOnly, s.ConcurrencySafe, s.Title)
	}
	tk2 := testutil.Kit(t)
	connect(t, tk2, "srv", ts.endpoint(), mcpbridge.TrustHints())
	echo, _ = tk2.Tool("mcp__srv__echo")
	if s := echo.Spec(); !s.ReadOnly || !s.ConcurrencySafe {
		t.Errorf("trusted readOnlyHint: ReadOnly %v ConcurrencySafe %v", s.ReadOnly, s.ConcurrencySafe)
	}
}

func TestClientGroupPerServer(t *testing.T) {
	ts := newTestServer(t)
	tk := testutil.Kit(t)
	m, err := groups.Install(tk)
	if err != nil {
		t.Fatal(err)
	}
	connect(t, tk, "srv", ts.endpoint(), mcpbridge.WithGroup(m, false), mcpbridge.Include("echo", "fail"))
	if got := m.ToolsOf("srv"); strings.Join(got, ",") != "mcp__srv__echo,mcp__srv__fail" {
		t.Fatalf("group tools %v", got)
	}
	g := m.Groups()[0]
	if g.Instructions != "Use the test tools." || !strings.Contains(g.Description, "Test server") {
		t.Errorf("group %+v", g)
	}
	res := testutil.Run(t, tk, "s", testutil.Call("1", "mcp__srv__echo", `{"text":"a"}`))
	if !res[0].IsError() {
		t.Errorf("inactive group's tool ran: %q", res[0].Text())
	}
	res = testutil.Run(t, tk, "s", testutil.Call("r", groups.MetaTool, `{"srv": true}`), testutil.Call("2", "mcp__srv__echo", `{"text":"a"}`))
	if res[1].IsError() || res[1].Text() != "echo: a" {
		t.Errorf("after reset_tools: %v %q", res[1].State, res[1].Text())
	}
}

func TestClientListChangedResyncs(t *testing.T) {
	ts := newTestServer(t)
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(rec))
	m, err := groups.Install(tk)
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, tk, "srv", ts.endpoint(), mcpbridge.WithGroup(m, true))
	testutil.Session(t, tk, "watcher")

	wait := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; tools %v", what, names(tk))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	ts.srv.AddTool(&mcp.Tool{Name: "added", Description: "New.", InputSchema: objectSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "new"}}}, nil
		})
	wait("the added tool", func() bool { _, ok := tk.Tool("mcp__srv__added"); return ok })
	ts.srv.RemoveTools("fail")
	wait("the removed tool to go", func() bool { _, ok := tk.Tool("mcp__srv__fail"); return !ok })
	ts.srv.AddTool(&mcp.Tool{Name: "echo", Description: "Echoes louder.", InputSchema: objectSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "LOUD"}}}, nil
		})
	wait("the changed tool", func() bool {
		tl, _ := tk.Tool("mcp__srv__echo")
		return tl != nil && tl.Spec().Description == "Echoes louder."
	})
	if got := m.ToolsOf("srv"); len(got) != 5 || !containsStr(got, "mcp__srv__added") || containsStr(got, "mcp__srv__fail") {
		t.Errorf("group after changes: %v", got)
	}
	if len(c.Tools()) != 5 {
		t.Errorf("client tools %v", c.Tools())
	}
	res := testutil.Run(t, tk, "s", testutil.Call("1", "mcp__srv__added", `{}`), testutil.Call("2", "mcp__srv__echo", `{}`))
	if res[0].Text() != "new" || res[1].Text() != "LOUD" {
		t.Errorf("results %q %q", res[0].Text(), res[1].Text())
	}
	var changes []mcpbridge.ToolsChange
	for _, ev := range rec.OfType(mcpbridge.ToolsEvent) {
		if ev.Session != "watcher" {
			continue
		}
		var ch mcpbridge.ToolsChange
		if err := json.Unmarshal(ev.Data, &ch); err != nil {
			t.Fatal(err)
		}
		changes = append(changes, ch)
	}
	var added, removed, changed bool
	for _, ch := range changes {
		added = added || containsStr(ch.Added, "mcp__srv__added")
		removed = removed || containsStr(ch.Removed, "mcp__srv__fail")
		changed = changed || containsStr(ch.Changed, "mcp__srv__echo")
		if ch.Server != "srv" {
			t.Errorf("change names server %q", ch.Server)
		}
	}
	if !added || !removed || !changed {
		t.Errorf("session events %+v", changes)
	}
	rec.Check(t)
}

func containsStr(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestClientServerGoneFailsInFlightThenUnavailableThenReconnects(t *testing.T) {
	ts := newTestServer(t)
	tk := testutil.Kit(t)
	c := connect(t, tk, "srv", ts.endpoint(), mcpbridge.WithReconnect(2, 200*time.Millisecond))
	sess := testutil.Session(t, tk, "s")
	b := sess.Start(context.Background(), []toolkit.Call{testutil.Call("b", "mcp__srv__block", `{}`)})
	testutil.WaitFor(t, ts.blockStarted, "the server's handler to start")
	start := time.Now()
	ts.refuse.Store(true)
	ts.kill()
	res := b.Wait()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("in-flight call failed after %v", d)
	}
	if !res[0].IsError() || !strings.Contains(res[0].Text(), `MCP server "srv" went away`) {
		t.Errorf("in-flight call: %v %q", res[0].State, res[0].Text())
	}
	if c.Err() == nil {
		t.Error("client says connected")
	}
	// Down and refusing: the first call tries once and fails, the next
	// answers at once without a new attempt (backoff).
	dials := ts.dials.Load()
	r := testutil.Run(t, tk, "s", testutil.Call("1", "mcp__srv__echo", `{"text":"a"}`))
	if !r[0].IsError() || !strings.Contains(r[0].Text(), `MCP server "srv" is unavailable`) {
		t.Errorf("while down: %q", r[0].Text())
	}
	r = testutil.Run(t, tk, "s", testutil.Call("2", "mcp__srv__echo", `{"text":"a"}`))
	if !strings.Contains(r[0].Text(), "next attempt to reconnect in") {
		t.Errorf("during backoff: %q", r[0].Text())
	}
	if got := ts.dials.Load() - dials; got != 1 {
		t.Errorf("%d dials while down, want 1", got)
	}
	time.Sleep(250 * time.Millisecond)
	r = testutil.Run(t, tk, "s", testutil.Call("3", "mcp__srv__echo", `{"text":"a"}`))
	if !strings.Contains(r[0].Text(), "gave up after 2 attempts") {
		t.Errorf("after the last attempt: %q", r[0].Text())
	}
	// Back up: Reconnect starts over; calls work again.
	ts.refuse.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Reconnect(ctx); err != nil {
		t.Fatal(err)
	}
	r = testutil.Run(t, tk, "s", testutil.Call("4", "mcp__srv__echo", `{"text":"back"}`))
	if r[0].Text() != "echo: back" {
		t.Errorf("after reconnecting: %q", r[0].Text())
	}
}

func TestClientReconnectsOnNextCall(t *testing.T) {
	ts := newTestServer(t)
	tk := testutil.Kit(t)
	connect(t, tk, "srv", ts.endpoint())
	ts.kill()
	// The next call reconnects at once (no failed attempt yet).
	var r []toolkit.Result
	deadline := time.Now().Add(5 * time.Second)
	for {
		r = testutil.Run(t, tk, "s", testutil.Call("1", "mcp__srv__echo", `{"text":"again"}`))
		if r[0].Text() == "echo: again" || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond) // the loss may not be noticed yet
	}
	if r[0].Text() != "echo: again" {
		t.Errorf("after the server came back: %q", r[0].Text())
	}
	if ts.dials.Load() != 2 {
		t.Errorf("%d dials, want 2", ts.dials.Load())
	}
}

func TestClientCloseUnregisters(t *testing.T) {
	ts := newTestServer(t)
	tk := testutil.Kit(t)
	m, err := groups.Install(tk)
	if err != nil {
		t.Fatal(err)
	}
	c, err := mcpbridge.Connect(context.Background(), tk, "srv", ts.endpoint(), mcpbridge.WithGroup(m, true))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, n := range names(tk) {
		if strings.HasPrefix(n, "mcp__") {
			t.Errorf("%q still registered", n)
		}
	}
	if m.Has("srv") {
		t.Error("group still there")
	}
}

func TestConnectErrors(t *testing.T) {
	tk := testutil.Kit(t)
	ts := newTestServer(t)
	ts.refuse.Store(true)
	if _, err := mcpbridge.Connect(context.Background(), tk, "srv", ts.endpoint()); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("refused: %v", err)
	}
	if _, err := mcpbridge.Connect(context.Background(), tk, "a b", ts.endpoint()); err == nil {
		t.Error("bad server name accepted")
	}
	if _, err := mcpbridge.Connect(context.Background(), tk, "srv", ts.endpoint(), mcpbridge.WithPrefix(strings.Repeat("p", 60))); err == nil {
		t.Error("over-long prefix accepted")
	}
	if _, err := mcpbridge.Connect(context.Background(), tk, "srv", ts.endpoint(), mcpbridge.Include("[")); err == nil {
		t.Error("bad pattern accepted")
	}
	if _, err := mcpbridge.Connect(context.Background(), tk, "srv", mcpbridge.Stdio{Command: "/nonexistent/mcp-server"}); err == nil {
		t.Error("missing program accepted")
	}
}

func TestClientNameTakenByLocalTool(t *testing.T) {
	ts := newTestServer(t)
	tk := testutil.Kit(t)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "mcp__srv__echo", Description: "local"}, func(context.Context, struct{}) (string, error) { return "local", nil }))
	c := connect(t, tk, "srv", ts.endpoint())
	tl, _ := tk.Tool("mcp__srv__echo")
	if tl.Spec().Description != "local" {
		t.Error("the local tool was replaced")
	}
	found := false
	for _, p := range c.Problems() {
		found = found || (p.Tool == "echo" && !p.Registered && strings.Contains(p.Error(), "already registered"))
	}
	if !found {
		t.Errorf("problems %v", c.Problems())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := tk.Tool("mcp__srv__echo"); !ok {
		t.Error("Close removed the local tool")
	}
}

func TestParseCommand(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		bad  bool
	}{
		{in: "node server.js stdio", want: []string{"node", "server.js", "stdio"}},
		{in: `  npx -y "a b"  'c "d"' `, want: []string{"npx", "-y", "a b", `c "d"`}},
		{in: `x ""`, want: []string{"x", ""}},
		{in: "", bad: true},
		{in: `x "open`, bad: true},
	} {
		s, err := mcpbridge.ParseCommand(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: no error", tc.in)
			}
			continue
		}
		got := append([]string{s.Command}, s.Args...)
		if err != nil || strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%q: %q, %v", tc.in, got, err)
		}
	}
}

func TestClientErrorResponseAndOutputSchema(t *testing.T) {
	ts := newTestServer(t)
	ts.srv.AddTool(&mcp.Tool{Name: "rpcerr", Description: "Answers with a protocol error.", InputSchema: objectSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("bad things")
		})
	ts.srv.AddTool(&mcp.Tool{Name: "weather", Description: "Typed output.", InputSchema: objectSchema,
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"t":{"type":"number"}},"required":["t"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Text string }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			if in.Text == "wrong" {
				return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"t": "warm"}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"t": 21.5}}, nil
		})
	ts.srv.AddTool(&mcp.Tool{Name: "oddout", Description: "An output schema the engine cannot compile.", InputSchema: objectSchema,
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"nonsense"}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "odd"}}}, nil
		})
	tk := testutil.Kit(t)
	c := connect(t, tk, "srv", ts.endpoint())
	var odd bool
	for _, p := range c.Problems() {
		odd = odd || (p.Tool == "oddout" && p.Registered && strings.Contains(p.Error(), "output schema ignored"))
	}
	if !odd {
		t.Errorf("problems %v", c.Problems())
	}
	res := testutil.Run(t, tk, "s",
		testutil.Call("1", "mcp__srv__rpcerr", `{}`),
		testutil.Call("2", "mcp__srv__weather", `{}`),
		testutil.Call("3", "mcp__srv__weather", `{"text":"wrong"}`),
		testutil.Call("4", "mcp__srv__oddout", `{}`))
	if !res[0].IsError() || !strings.Contains(res[0].Text(), `MCP server "srv" refused the call: bad things`) {
		t.Errorf("error response: %v %q", res[0].State, res[0].Text())
	}
	if res[1].IsError() || len(res[1].Content) != 1 || string(res[1].Content[0].JSON) != `{"t":21.5}` {
		t.Errorf("structured: %v %v", res[1].State, res[1].Content)
	}
	if !res[2].IsError() || !strings.Contains(res[2].Text(), "output schema") {
		t.Errorf("structured content against the output schema: %v %q", res[2].State, res[2].Text())
	}
	if res[3].IsError() || res[3].Text() != "odd" {
		t.Errorf("tool registered without its output schema: %v %q", res[3].State, res[3].Text())
	}
}

// TestClientEveryProgressBeforeTheResult: a server that sends many progress
// notifications right before its response; each one reaches the call before
// it ends. (Taken from the SDK's notification handler, the last ones came
// after the response and were refused.)
func TestClientEveryProgressBeforeTheResult(t *testing.T) {
	ts := newTestServer(t)
	const n = 200
	ts.srv.AddTool(&mcp.Tool{Name: "burst", Description: "Many progress notifications.", InputSchema: objectSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for i := 1; i <= n; i++ {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: n}); err != nil {
					return nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(rec))
	connect(t, tk, "srv", ts.endpoint())
	for round := range 5 {
		id := fmt.Sprint("b", round)
		res := testutil.Run(t, tk, "s", testutil.Call(id, "mcp__srv__burst", `{}`))
		if res[0].Text() != "done" {
			t.Fatalf("burst: %q", res[0].Text())
		}
		got := 0
		for _, ev := range rec.Of(id) {
			if ev.Type == events.TypeProgress {
				got++
				if f := *ev.Progress.Fraction; f != float64(got)/n {
					t.Fatalf("progress %d: fraction %v", got, f)
				}
			}
		}
		if got != n {
			t.Fatalf("round %d: %d progress events, want %d", round, got, n)
		}
	}
}
