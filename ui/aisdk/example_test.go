package aisdk_test

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
	"github.com/toolstream/toolstream/ui/aisdk"
)

// place is the weather tool's input.
type place struct {
	City string `json:"city"`
}

// One chat request, as useChat posts it: the agent (a scripted model that
// calls a tool, then answers) streams its turns as steps, the call as a
// dynamic tool part (a tool that returns its result, without streaming
// it, has one final output, as the AI SDK's own tools do) and the answer
// as text. The message id is random per chat,
// so this prints each chunk's type, text delta and output only.
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
	chat := aisdk.NewHandler(host)
	mux := http.NewServeMux()
	mux.Handle("/api/chat", chat)
	mux.Handle("/api/chat/{id}/stream", chat) // useChat's resume, after a reload
	srv := httptest.NewServer(mux)
	defer srv.Close()

	in := `{"id":"c1","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"Weather in Oslo?"}]}]}`
	resp, err := http.Post(srv.URL+"/api/chat", "application/json", strings.NewReader(in))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
		var c struct{ Type, Delta, Output string }
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && json.Unmarshal([]byte(data), &c) == nil {
			fmt.Println(strings.TrimSpace(c.Type + " " + c.Delta + c.Output))
		}
	}
	// Output:
	// start
	// start-step
	// tool-input-start
	// tool-input-delta
	// tool-input-available
	// tool-output-available sunny in Oslo
	// finish-step
	// start-step
	// text-start
	// text-delta It is sunny in Oslo.
	// text-end
	// finish-step
	// finish
}
