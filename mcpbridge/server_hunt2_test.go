package mcpbridge_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// TestServerSchemaTheSDKRefuses: a toolkit tool whose input schema the
// go-sdk's AddTool refuses (an x-mcp-header annotation on an object
// property, as an imported MCP server may send it) does not panic NewServer
// or Sync: NewServer fails with an error that names the tool, and Sync
// reports it without panicking.
func TestServerSchemaTheSDKRefuses(t *testing.T) {
	bad := json.RawMessage(`{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"A"}}}`)
	tool, err := toolkit.NewRawTool(toolkit.Spec{Name: "headed", Description: "Has a bad header annotation."}, bad,
		func(context.Context, json.RawMessage) ([]toolkit.Part, error) { return nil, nil })
	if err != nil {
		t.Skipf("the toolkit refuses the schema itself: %v", err)
	}
	want := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), `tool "headed" cannot be served over MCP`) || !strings.Contains(err.Error(), "x-mcp-header") {
			t.Fatalf("%s = %v, want an error naming the tool and its x-mcp-header", what, err)
		}
		t.Log(err)
	}
	noPanic := func(what string, f func() error) error {
		t.Helper()
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("%s panicked: %v", what, r)
			}
		}()
		return f()
	}

	// Registered before NewServer.
	tk := srvToolkit(t)
	if err := tk.Add(tool); err != nil {
		t.Fatal(err)
	}
	want("NewServer", noPanic("NewServer", func() error { _, err := mcpbridge.NewServer(tk); return err }))

	// Registered after: Sync refuses the new list, the old one stays.
	tk = srvToolkit(t)
	s := srvNew(t, tk)
	cs := srvConnect(t, s, nil, "2025-11-25")
	before := srvToolNames(t, cs)
	if err := tk.Add(tool); err != nil {
		t.Fatal(err)
	}
	want("Sync", noPanic("Sync", s.Sync))
	if after := srvToolNames(t, cs); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Fatalf("tools/list after a refused Sync = %v, want %v", after, before)
	}
	if text, isErr := srvCallText(t, cs, "weather", map[string]any{"city": "Paris"}); isErr {
		t.Fatalf("a call after a refused Sync: %s", text)
	}
}

// TestServerHugeProgressMessage: a progress message larger than the
// client's frame (17 MiB, over the go-sdk client's 16 MiB) does not close
// the client's connection: what goes out is the message cut short, the call
// returns its result, and the connection serves the next call.
func TestServerHugeProgressMessage(t *testing.T) {
	tk := srvToolkit(t)
	big := strings.Repeat("p", 17<<20)
	if err := tk.Add(toolkit.MustTool(toolkit.Spec{Name: "chatty", Description: "Reports a huge progress message."},
		func(ctx context.Context, _ struct{}) (string, error) {
			stream.From(ctx).Progress(big, 0.5)
			return "ok", nil
		})); err != nil {
		t.Fatal(err)
	}
	got := make(chan *mcp.ProgressNotificationParams, 4)
	cs := srvConnect(t, srvNew(t, tk), &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			got <- req.Params
		},
	}, "2025-11-25")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	params := &mcp.CallToolParams{Name: "chatty", Arguments: map[string]any{}}
	params.SetProgressToken("tok")
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("the call failed: %v", err)
	}
	if res.IsError || srvText(res) != "ok" {
		t.Fatalf("result = %q (isError %v)", srvText(res), res.IsError)
	}
	select {
	case p := <-got:
		if len(p.Message) > 64<<10 || !strings.HasPrefix(p.Message, "ppp") || !strings.Contains(p.Message, "cut") || p.Progress != 50 {
			t.Fatalf("progress: %d bytes, progress %v, ends %q", len(p.Message), p.Progress, p.Message[max(0, len(p.Message)-80):])
		}
		t.Logf("progress message sent: %d bytes, ends %q", len(p.Message), p.Message[len(p.Message)-60:])
	case <-time.After(10 * time.Second):
		t.Fatal("no progress notification")
	}
	srvStillServes(t, cs)
}
