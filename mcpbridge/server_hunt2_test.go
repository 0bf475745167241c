package mcpbridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
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
		func(context.Context, json.RawMessage) ([]events.Part, error) { return nil, nil })
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
		if len(p.Message) > 64<<10 || !strings.HasPrefix(p.Message, "ppp") || !strings.HasSuffix(p.Message, fmt.Sprintf("… (cut: %d bytes in all)", len(big))) || p.Progress != 50 {
			t.Fatalf("progress: %d bytes, progress %v, ends %q", len(p.Message), p.Progress, p.Message[max(0, len(p.Message)-80):])
		}
		t.Logf("progress message sent: %d bytes, ends %q", len(p.Message), p.Message[len(p.Message)-60:])
	case <-time.After(10 * time.Second):
		t.Fatal("no progress notification")
	}
	srvStillServes(t, cs)
}

// TestServerElicitationOfHugeArguments: the elicitation that asks about a
// call quotes its arguments; 6 MiB of quotes (24 MiB once the question is
// encoded, over the go-sdk client's 16 MiB frame) closed the client's
// connection. The arguments in the question are cut; the person answers and
// the call runs on its whole arguments. It takes 20 s under the race
// detector (the SDK's JSON): TestApprovalQuestionIsBounded checks the
// question there.
func TestServerElicitationOfHugeArguments(t *testing.T) {
	if testutil.Race {
		t.Skip("20 s under the race detector; TestApprovalQuestionIsBounded runs instead")
	}
	tk := srvToolkit(t)
	if err := tk.Add(toolkit.MustTool(toolkit.Spec{Name: "store", Description: "Stores a blob."},
		func(ctx context.Context, in struct {
			Blob string `json:"blob"`
		}) (string, error) {
			return fmt.Sprintf("stored %d bytes", len(in.Blob)), nil
		})); err != nil {
		t.Fatal(err)
	}
	perms := interceptors.NewPermissions(
		interceptors.WithRules(interceptors.Rule{Tool: "store", Decision: interceptors.Ask, Reason: "it writes"}),
		interceptors.WithMode(interceptors.AllowAll),
		interceptors.WithApprovalTimeout(time.Minute),
	)
	tk.Use(perms.Interceptor())
	asked := make(chan string, 1)
	cs := srvConnect(t, srvNew(t, tk, mcpbridge.WithPermissions(perms)), &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- req.Params.Message
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		},
	}, "2025-11-25")
	blob := strings.Repeat(`"`, 6<<20)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "store", Arguments: map[string]any{"blob": blob}})
	if err != nil {
		t.Fatalf("the call failed: %v", err)
	}
	if res.IsError || srvText(res) != fmt.Sprintf("stored %d bytes", len(blob)) {
		t.Fatalf("result: isError %v, %.200s", res.IsError, srvText(res))
	}
	msg := <-asked
	if len(msg) > 64<<10 || !strings.HasPrefix(msg, `Allow the tool "store" to run with {"blob":"\"\"`) || !strings.Contains(msg, "bytes in all") || !strings.Contains(msg, "it writes") {
		t.Fatalf("elicitation message: %d bytes, %.120q ... %q", len(msg), msg, msg[max(0, len(msg)-120):])
	}
	t.Logf("asked: %d bytes, ends %q", len(msg), msg[len(msg)-80:])
	srvStillServes(t, cs)
}
