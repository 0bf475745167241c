package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// A run with a scripted model: it calls a tool, reads the result and
// answers. A real model comes from agent/openaimodel or
// agent/anthropicmodel.
func ExampleLoop_Run() {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "weather", Description: "Weather in a city."},
		func(ctx context.Context, in struct {
			City string `json:"city"`
		}) (string, error) {
			return "sunny in " + in.City, nil
		}))

	model := agent.ModelFunc(func(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == agent.RoleTool { // the tool answered: so does the model
			return &agent.Reply{Text: "It is " + last.Text() + "."}, nil
		}
		return &agent.Reply{Calls: []toolkit.Call{{ID: "call_1", Name: "weather", Args: json.RawMessage(`{"city":"Oslo"}`)}}}, nil
	})

	sess, _ := tk.Session("conversation-1")
	conv := agent.NewConversation("You are brief.", "What is the weather in Oslo?")
	out, err := agent.New(model).Run(ctx, sess, conv)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Answer)
	fmt.Println(out.Turns, "turns,", len(out.Results), "call,", len(conv.Messages), "messages")
	// Output:
	// It is sunny in Oslo.
	// 2 turns, 1 call, 4 messages
}

// What a streaming UI sees: the loop's session-level events beside the
// call's own (here from an inline observer; on NATS the same events go to
// toolstream.<session>.>).
func ExampleLoop_Run_events() {
	ctx := context.Background()
	var seen []string
	tk := toolkit.New(toolkit.WithInlineObserver(toolkit.ObserverFunc(func(ev *events.Event) {
		switch ev.Type {
		case agent.EventText, agent.EventArgs:
			seen = append(seen, string(ev.Type)+" "+string(ev.Data))
		default:
			seen = append(seen, string(ev.Type))
		}
	})))
	defer tk.Close(ctx)
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "now"}, func(ctx context.Context, _ struct{}) (string, error) { return "noon", nil }))

	model := agent.ModelFunc(func(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
		if len(req.Messages) > 1 {
			req.Send(agent.Chunk{Kind: agent.ChunkText, Text: "It is "})
			req.Send(agent.Chunk{Kind: agent.ChunkText, Text: "noon."})
			return &agent.Reply{Text: "It is noon."}, nil
		}
		req.Send(agent.Chunk{Kind: agent.ChunkCall, Index: 0, CallID: "c1", Name: "now"})
		req.Send(agent.Chunk{Kind: agent.ChunkArgs, Index: 0, Text: "{}"})
		return &agent.Reply{Calls: []toolkit.Call{{ID: "c1", Name: "now", Args: json.RawMessage("{}")}}}, nil
	})
	sess, _ := tk.Session("s")
	agent.New(model).Run(ctx, sess, agent.NewConversation("", "Time?"))
	fmt.Println(strings.Join(seen, "\n"))
	// Output:
	// turn_start
	// args_delta {"turn":1,"index":0,"call":"c1","tool":"now","delta":""}
	// args_delta {"turn":1,"index":0,"call":"c1","tool":"now","delta":"{}"}
	// turn_end
	// start
	// delta
	// result
	// turn_start
	// text_delta {"turn":2,"delta":"It is "}
	// text_delta {"turn":2,"delta":"noon."}
	// turn_end
	// answer
}
