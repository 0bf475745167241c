package agent_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// askPerson stands for the application's UI: a dialog, a chat message.
func askPerson(req interceptors.ApprovalRequest) bool {
	fmt.Printf("asked: may %s run with %s? yes\n", req.Tool, req.Args)
	return true
}

// runInBrowser stands for a tool that runs elsewhere: in the user's
// browser, on their phone, in another system.
func runInBrowser(c toolkit.Call) string { return "it is 09:41 in the browser" }

// A call that waits for a person's approval and a call of an external
// tool: both suspend, and the loop hands each to WithSuspended as it does
// (docs/llm-sdk.md cuts its example from here).
func ExampleWithSuspended() {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "delete_file", Description: "Delete a file."},
		func(ctx context.Context, in struct {
			Path string `json:"path"`
		}) (string, error) {
			return "deleted " + in.Path, nil
		}))
	clock, _ := toolkit.NewExternalTool(toolkit.Spec{Name: "browser_time", Description: "The user's local time.", ReadOnly: true},
		json.RawMessage(`{"type":"object"}`))
	tk.Add(clock)
	model := agent.ModelFunc(func(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == agent.RoleTool {
			return &agent.Reply{Text: req.Messages[len(req.Messages)-2].Text() + "; " + last.Text() + "."}, nil
		}
		return &agent.Reply{Calls: []toolkit.Call{
			{ID: "call_1", Name: "delete_file", Args: json.RawMessage(`{"path":"old.txt"}`)},
			{ID: "call_2", Name: "browser_time", Args: json.RawMessage(`{}`)},
		}}, nil
	})

	perms := interceptors.NewPermissions(interceptors.WithMode(interceptors.ReadOnly))
	tk.Use(perms.Interceptor())
	loop := agent.New(model, agent.WithSuspended(func(ctx context.Context, s *toolkit.Session, r toolkit.Result) error {
		for _, req := range perms.Pending(s.ID()) {
			if req.CallID == r.Call.ID {
				if askPerson(req) { // your UI
					return perms.Approve(s.ID(), req.CallID)
				}
				return perms.Reject(s.ID(), req.CallID, "the user said no")
			}
		}
		// A tool registered with toolkit.NewExternalTool: run it elsewhere, then
		return s.Submit(r.Call.ID, []events.Part{events.Text(runInBrowser(r.Call))}, nil)
	}))

	sess, _ := tk.Session("conversation-1")
	out, err := loop.Run(ctx, sess, agent.NewConversation("", "Delete old.txt. What time is it?"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Answer)
	// Output:
	// asked: may delete_file run with {"path":"old.txt"}? yes
	// deleted old.txt; it is 09:41 in the browser.
}
