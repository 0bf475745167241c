package mcpbridge_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/mcpbridge"
)

// listHijack makes ts answer tools/list with f's result instead of its own.
func listHijack(ts *testServer, f func(cursor string) *mcp.ListToolsResult) {
	ts.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/list" {
				return next(ctx, method, req)
			}
			var cursor string
			if p, ok := req.GetParams().(*mcp.ListToolsParams); ok && p != nil {
				cursor = p.Cursor
			}
			return f(cursor), nil
		}
	})
}

// TestClientEndlessPagination: a server whose tools/list never ends (its
// next cursor is the one it was asked for, with a cache lifetime, or a
// cycle) makes Connect fail at once with an error that says so; it does
// not spin, and the listing does not grow without bound.
func TestClientEndlessPagination(t *testing.T) {
	for _, tc := range []struct {
		name string
		ttl  int
		next func(cursor string) string
		want string
	}{
		{"same cursor, cached", 60_000, func(string) string { return "again" }, `never ends: page 2 gives the cursor "again" of an earlier page`},
		{"same cursor", 0, func(string) string { return "again" }, `never ends: page 2 gives the cursor "again" of an earlier page`},
		{"cycle", 0, func(c string) string {
			if c == "a" {
				return "b"
			}
			return "a"
		}, `never ends: page 3 gives the cursor "a" of an earlier page`},
		{"new cursors", 0, func(c string) string { return c + "x" }, "goes on past 20 pages (20 tools)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer mcpbridge.SetMaxListPages(mcpbridge.SetMaxListPages(20))
			ts := newTestServer(t)
			var lists atomic.Int64
			listHijack(ts, func(cursor string) *mcp.ListToolsResult {
				lists.Add(1)
				res := &mcp.ListToolsResult{NextCursor: tc.next(cursor), Tools: []*mcp.Tool{
					{Name: "echo", InputSchema: objectSchema},
				}}
				res.TTLMs = tc.ttl
				return res
			})
			tk := testutil.Kit(t)
			done := make(chan error, 1)
			go func() {
				c, err := mcpbridge.Connect(context.Background(), tk, "srv", ts.endpoint(), mcpbridge.WithDialTimeout(10*time.Second))
				if err == nil {
					_ = c.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), `listing the tools of MCP server "srv": the server's list `+tc.want) {
					t.Fatalf("Connect = %v, want an error saying %s", err, tc.want)
				}
				t.Logf("%v (%d listings)", err, lists.Load())
			case <-time.After(5 * time.Second):
				t.Fatalf("Connect still listing after 5 s (%d listings sent)", lists.Load())
			}
		})
	}
}

// TestClientToolTheSDKDrops: a listed tool the go-sdk client drops from
// tools/list (an x-mcp-header annotation it refuses) is not silently lost:
// Problems names it and says why; the server's other tools are registered.
func TestClientToolTheSDKDrops(t *testing.T) {
	ts := newTestServer(t)
	listHijack(ts, func(string) *mcp.ListToolsResult {
		return &mcp.ListToolsResult{Tools: []*mcp.Tool{
			{Name: "echo", InputSchema: objectSchema},
			{Name: "headed", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"A"}}}`)},
		}}
	})
	tk := testutil.Kit(t)
	c := connect(t, tk, "srv", ts.endpoint())
	if got := names(tk); !slices.Contains(got, "mcp__srv__echo") || slices.Contains(got, "mcp__srv__headed") {
		t.Fatalf("tools = %v", got)
	}
	probs := c.Problems()
	if len(probs) != 1 || probs[0].Tool != "headed" || probs[0].Name != "mcp__srv__headed" || probs[0].Registered ||
		!strings.Contains(probs[0].Error(), "x-mcp-header") {
		t.Fatalf("problems = %v, want the dropped tool with its reason", probs)
	}
	t.Log(probs[0])
}
