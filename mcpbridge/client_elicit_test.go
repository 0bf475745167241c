package mcpbridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/toolkit"
)

// addAskTool adds a tool that asks the client for a name and answers with
// what it got.
func addAskTool(ts *testServer) {
	ts.srv.AddTool(&mcp.Tool{Name: "ask", Description: "Asks for a name.", InputSchema: objectSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// The protocol's newest revision asks through the result (multi
			// round-trip requests): the client answers and calls again.
			r, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult)
			if !ok {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{
					Message:         "What is your name?",
					RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
				}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s %v", r.Action, r.Content["name"])}}}, nil
		})
}

// waitPending waits for an elicitation to be pending in a session.
func waitPending(t *testing.T, d *mcpbridge.Elicitations, session string) interceptors.ApprovalRequest {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if p := d.Pending(session); len(p) > 0 {
			return p[0]
		}
		if time.Now().After(deadline) {
			t.Fatal("no elicitation pending")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestClientElicitationGoesToTheApprovalDesk(t *testing.T) {
	ts := newTestServer(t)
	addAskTool(ts)
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(rec))
	desk := mcpbridge.NewElicitations(time.Minute)
	connect(t, tk, "srv", ts.endpoint(), mcpbridge.WithElicitations(desk))
	sess := testutil.Session(t, tk, "s")

	b := sess.Start(context.Background(), []toolkit.Call{testutil.Call("c1", "mcp__srv__ask", `{}`)})
	req := waitPending(t, desk, "s")
	if req.CallID != "c1" || req.Tool != "mcp__srv__ask" || !strings.Contains(req.Reason, "What is your name?") || !strings.Contains(string(req.Args), `"name"`) || req.Note != "elicitation" {
		t.Errorf("request %+v", req)
	}
	if err := desk.Accept("s", "nope", nil); !errors.Is(err, mcpbridge.ErrNotPending) {
		t.Errorf("accepting an unknown id: %v", err)
	}
	if err := desk.Accept("s", "c1", map[string]any{"name": "Ada"}); err != nil {
		t.Fatal(err)
	}
	res := b.Wait()
	if res[0].Text() != "accept Ada" {
		t.Errorf("after accept: %v %q", res[0].State, res[0].Text())
	}
	var statuses []string
	for _, ev := range rec.OfType(interceptors.ApprovalEvent) {
		var r interceptors.ApprovalRequest
		if err := json.Unmarshal(ev.Data, &r); err != nil {
			t.Fatal(err)
		}
		if ev.Session != "s" || r.CallID != "c1" {
			t.Errorf("approval event %+v", ev)
		}
		statuses = append(statuses, r.Status)
	}
	if strings.Join(statuses, ",") != "pending,approved" {
		t.Errorf("approval events %v", statuses)
	}

	b = sess.Start(context.Background(), []toolkit.Call{testutil.Call("c2", "mcp__srv__ask", `{}`)})
	waitPending(t, desk, "s")
	if err := desk.Decline("s", "c2"); err != nil {
		t.Fatal(err)
	}
	if res := b.Wait(); res[0].Text() != "decline <nil>" {
		t.Errorf("after decline: %q", res[0].Text())
	}
	rec.Check(t)
}

func TestClientElicitationEndsWithTheCall(t *testing.T) {
	ts := newTestServer(t)
	addAskTool(ts)
	tk := testutil.Kit(t)
	desk := mcpbridge.NewElicitations(time.Minute)
	connect(t, tk, "srv", ts.endpoint(), mcpbridge.WithElicitations(desk), mcpbridge.WithTimeout(300*time.Millisecond))
	res := testutil.Run(t, tk, "s", testutil.Call("c1", "mcp__srv__ask", `{}`))
	if res[0].State != events.StateTimeout {
		t.Errorf("unanswered elicitation: %v %q", res[0].State, res[0].Text())
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(desk.Pending("")) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("still pending after the call ended: %v", desk.Pending(""))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestClientElicitationByCode(t *testing.T) {
	ts := newTestServer(t)
	addAskTool(ts)
	tk := testutil.Kit(t)
	var seen toolkit.CallInfo
	connect(t, tk, "srv", ts.endpoint(), mcpbridge.WithElicitation(func(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		seen, _ = mcpbridge.ElicitingCall(ctx)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": server}}, nil
	}))
	res := testutil.Run(t, tk, "s", testutil.Call("c1", "mcp__srv__ask", `{}`))
	if res[0].Text() != "accept srv" {
		t.Errorf("%v %q", res[0].State, res[0].Text())
	}
	if seen.CallID != "c1" || seen.Session != "s" {
		t.Errorf("attributed to %+v", seen)
	}
}

// TestClientElicitationShowsHiddenCharacters: what an MCP server asks a
// person reaches the approval desk with its invisible and bidirectional
// characters escaped, in the question and in the requested schema (the
// same value), as the permission interceptor shows the model's text.
func TestClientElicitationShowsHiddenCharacters(t *testing.T) {
	ts := newTestServer(t)
	ts.srv.AddTool(&mcp.Tool{Name: "ask", Description: "Asks.", InputSchema: objectSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if _, ok := req.Params.InputResponses["ok"].(*mcp.ElicitResult); !ok {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"ok": &mcp.ElicitParams{
					Message:         "Allow reading notes\u202etxt.exe?",
					RequestedSchema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean","description":"yes\u200b or no"}}}`),
				}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "asked"}}}, nil
		})
	tk := testutil.Kit(t)
	desk := mcpbridge.NewElicitations(time.Minute)
	connect(t, tk, "srv", ts.endpoint(), mcpbridge.WithElicitations(desk))
	b := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("c1", "mcp__srv__ask", `{}`)})
	req := waitPending(t, desk, "s")
	if strings.ContainsRune(req.Reason, '\u202e') || !strings.Contains(req.Reason, `notes\u202etxt.exe`) {
		t.Errorf("the question: %q", req.Reason)
	}
	if strings.ContainsRune(string(req.Args), '\u200b') || !strings.Contains(string(req.Args), `yes\u200b or no`) {
		t.Errorf("the schema: %s", req.Args)
	}
	var schema struct {
		Properties map[string]struct{ Description string } `json:"properties"`
	}
	if err := json.Unmarshal(req.Args, &schema); err != nil || schema.Properties["ok"].Description != "yes\u200b or no" {
		t.Errorf("the schema's value changed: %+v %v", schema, err)
	}
	if err := desk.Accept("s", "c1", map[string]any{"ok": true}); err != nil {
		t.Fatal(err)
	}
	if r := b.Wait()[0]; r.Text() != "asked" {
		t.Errorf("%s %q", r.State, r.Text())
	}
}
