package mcpbridge_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/mcpbridge"
)

// TestServerProgressOnlyWithAToken: a call whose request has no progress
// token gets no progress notification, also on the path that relays the
// call while it runs (permissions on and a client that answers
// elicitations), where the token is checked. A second call with a token,
// on the same session, is the barrier: once its last notification is in,
// any of the first call's would be too.
func TestServerProgressOnlyWithAToken(t *testing.T) {
	perms := interceptors.NewPermissions(interceptors.WithMode(interceptors.AllowAll))
	tk := srvToolkit(t)
	tk.Use(perms.Interceptor())
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	cs := srvConnect(t, srvNew(t, tk, mcpbridge.WithPermissions(perms)), &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, req.Params)
			mu.Unlock()
		},
	}, "2025-11-25")
	ctx := context.Background()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("the call without a token: %+v %v", res, err)
	}
	with := &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{}}
	with.SetProgressToken("tok-2")
	if res, err := cs.CallTool(ctx, with); err != nil || res.IsError {
		t.Fatalf("the call with a token: %+v %v", res, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		end := len(got) > 0 && got[len(got)-1].Message == "all"
		mu.Unlock()
		if end {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the call with a token sent no last progress notification")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range got {
		if p.ProgressToken != "tok-2" {
			t.Errorf("a progress notification with token %#v (%q): the call without a token sent it", p.ProgressToken, p.Message)
		}
	}
}
