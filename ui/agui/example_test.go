package agui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/toolkit"
	"github.com/toolstream/toolstream/ui"
	"github.com/toolstream/toolstream/ui/agui"
)

// place is the weather tool's input.
type place struct {
	City string `json:"city"`
}

// One AG-UI run, as HttpAgent posts it: the agent (a scripted model that
// calls a tool, then answers) streams its turns, the tool call and its
// result, and the answer. The ids of text messages are random per thread,
// so this prints each event's type and delta only.
func Example() {
	tk := toolkit.New()
	defer tk.Close(context.Background())
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "weather", Description: "Weather in a city.", ReadOnly: true},
		func(ctx context.Context, in place) (string, error) { return "sunny in " + in.City, nil }))
	model := agent.ModelFunc(func(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == agent.RoleTool {
			return &agent.Reply{Text: "It is " + last.Text() + "."}, nil
		}
		return &agent.Reply{Calls: []toolkit.Call{{ID: "call_1", Name: "weather", Args: json.RawMessage(`{"city":"Oslo"}`)}}}, nil
	})
	host := ui.NewHost(tk, agent.New(model))
	defer host.Close()
	srv := httptest.NewServer(agui.NewHandler(host)) // HttpAgent's url
	defer srv.Close()

	in := `{"threadId":"t1","runId":"r1","messages":[{"id":"u1","role":"user","content":"Weather in Oslo?"}]}`
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(in))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
		var ev struct{ Type, Delta string }
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && json.Unmarshal([]byte(data), &ev) == nil {
			fmt.Println(strings.TrimSpace(ev.Type + " " + ev.Delta))
		}
	}
	// Output:
	// RUN_STARTED
	// STATE_SNAPSHOT
	// STEP_STARTED
	// TOOL_CALL_START
	// TOOL_CALL_ARGS {"city":"Oslo"}
	// TOOL_CALL_END
	// ACTIVITY_SNAPSHOT
	// ACTIVITY_DELTA
	// ACTIVITY_DELTA
	// TOOL_CALL_RESULT
	// STEP_FINISHED
	// STEP_STARTED
	// TEXT_MESSAGE_START
	// TEXT_MESSAGE_CONTENT It is sunny in Oslo.
	// TEXT_MESSAGE_END
	// STEP_FINISHED
	// RUN_FINISHED
}
