package mcpbridge_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/toolkit"
)

// askWeather is a toolkit whose weather calls need a person's approval.
func srvAskWeather(t *testing.T) (*toolkit.Toolkit, *interceptors.Permissions) {
	tk := srvToolkit(t)
	perms := interceptors.NewPermissions(
		interceptors.WithRules(interceptors.Rule{Tool: "weather", Decision: interceptors.Ask, Reason: "it looks outside"}),
		interceptors.WithMode(interceptors.AllowAll),
		interceptors.WithApprovalTimeout(30*time.Second),
	)
	tk.Use(perms.Interceptor())
	return tk, perms
}

func TestServerElicitsApproval(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  *mcp.ElicitResult
		wantErr bool
	}{
		{"accept", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, false},
		{"accept-no", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": false}}, true},
		{"decline", &mcp.ElicitResult{Action: "decline"}, true},
		{"cancel", &mcp.ElicitResult{Action: "cancel"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk, perms := srvAskWeather(t)
			var asked string
			cs := srvConnect(t, srvNew(t, tk, mcpbridge.WithPermissions(perms)), &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = req.Params.Message
					return tc.answer, nil
				},
			}, "2025-11-25")
			text, isErr := srvCallText(t, cs, "weather", map[string]any{"city": "Oslo"})
			if isErr != tc.wantErr {
				t.Fatalf("isError %v: %q", isErr, text)
			}
			if tc.wantErr && !strings.Contains(text, "rejected") {
				t.Fatalf("rejection text %q", text)
			}
			if !strings.Contains(asked, `"weather"`) || !strings.Contains(asked, "Oslo") || !strings.Contains(asked, "it looks outside") {
				t.Fatalf("elicitation message %q", asked)
			}
		})
	}
}

// TestServerApprovalDeskFallback: without elicitation (a client that does
// not offer it, or the newest revision, which forbids server requests in a
// call), the call waits on the approval desk; and when the desk answers while
// an elicitation is open, the elicitation is withdrawn and the call goes on.
func TestServerApprovalDeskFallback(t *testing.T) {
	approveFromDesk := func(t *testing.T, perms *interceptors.Permissions, tk *toolkit.Toolkit) {
		deadline := time.Now().Add(10 * time.Second)
		for {
			for _, id := range tk.Sessions() {
				for _, p := range perms.Pending(id) {
					if err := perms.Approve(id, p.CallID); err != nil {
						t.Error(err)
					}
					return
				}
			}
			if time.Now().After(deadline) {
				t.Error("no pending approval")
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	cases := []struct {
		name    string
		version string
		copts   func(withdrawn chan<- struct{}) *mcp.ClientOptions
	}{
		{"no-elicitation", "2025-11-25", func(chan<- struct{}) *mcp.ClientOptions { return nil }},
		{"newest-revision", "", func(chan<- struct{}) *mcp.ClientOptions {
			return &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				t.Error("elicitation under the newest revision")
				return &mcp.ElicitResult{Action: "decline"}, nil
			}}
		}},
		{"desk-first", "2025-11-25", func(withdrawn chan<- struct{}) *mcp.ClientOptions {
			return &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				<-ctx.Done() // nobody answers here
				withdrawn <- struct{}{}
				return nil, ctx.Err()
			}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tk, perms := srvAskWeather(t)
			withdrawn := make(chan struct{}, 1)
			cs := srvConnect(t, srvNew(t, tk, mcpbridge.WithPermissions(perms)), tc.copts(withdrawn), tc.version)
			go approveFromDesk(t, perms, tk)
			text, isErr := srvCallText(t, cs, "weather", map[string]any{"city": "Oslo"})
			if isErr || !strings.Contains(text, "Oslo") {
				t.Fatalf("after the desk approved: %v %q", isErr, text)
			}
			if tc.name == "desk-first" {
				select {
				case <-withdrawn:
				case <-time.After(10 * time.Second):
					t.Fatal("the elicitation was not withdrawn")
				}
			}
		})
	}
}
