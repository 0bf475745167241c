package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/agent/internal/other"
	"github.com/toolstream/toolstream/toolkit"
)

// doc:begin (docs/llm-sdk.md cuts "Any other SDK" from here)

type myModel struct{ client *other.Client }

func (m myModel) Generate(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
	// req.System, req.Messages (user / assistant with Calls / tool with CallID, IsError),
	// req.Tools (name, description, JSON Schema as json.RawMessage: send it as is).
	stream, err := m.client.Stream(ctx, toOther(req))
	if err != nil {
		var e *other.HTTPError
		if errors.As(err, &e) { // tell the loop whether to retry, and how long to wait
			return nil, &agent.APIError{Provider: "other", StatusCode: e.Status, Message: e.Msg,
				RetryAfter: agent.RetryAfter(e.Header, time.Now()), Retryable: agent.RetryableStatus(e.Status), Err: err}
		}
		return nil, err
	}
	reply := &agent.Reply{}
	for ev := range stream.Events() { // optional: a model that does not stream just returns
		switch ev.Kind {
		case "text":
			req.Send(agent.Chunk{Kind: agent.ChunkText, Text: ev.Text})
			reply.Text += ev.Text
		case "tool_start": // the id goes in the chunk and in the call: make one if there is none
			req.Send(agent.Chunk{Kind: agent.ChunkCall, Index: ev.Index, CallID: ev.ID, Name: ev.Name})
			reply.Calls = append(reply.Calls, toolkit.Call{ID: ev.ID, Name: ev.Name})
		case "tool_args":
			req.Send(agent.Chunk{Kind: agent.ChunkArgs, Index: ev.Index, Text: ev.Delta})
			reply.Calls[ev.Index].Args = append(reply.Calls[ev.Index].Args, ev.Delta...)
		}
	}
	return reply, stream.Err()
}

// doc:end

// toOther maps the loop's request to the SDK's (a toy API: texts only).
func toOther(req *agent.Request) other.Request {
	r := other.Request{System: req.System}
	for _, m := range req.Messages {
		r.Messages = append(r.Messages, string(m.Role)+": "+m.Text())
	}
	for _, t := range req.Tools {
		r.Tools = append(r.Tools, t.Name)
	}
	return r
}

// A Model on an SDK that toolstream has no adapter for: the first request
// is refused (503, retried after the server's Retry-After), then the
// model calls a tool, its arguments streamed in two pieces, and answers.
func ExampleModel() {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "weather", Description: "Weather in a city."},
		func(ctx context.Context, in struct {
			City string `json:"city"`
		}) (string, error) {
			return "sunny in " + in.City, nil
		}))
	busy := &other.HTTPError{Status: 503, Msg: "overloaded", Header: http.Header{"Retry-After": {"0"}}}
	model := myModel{client: other.NewClient(
		other.Reply{Err: busy},
		other.Reply{Events: []other.Event{
			{Kind: "tool_start", Index: 0, ID: "call_1", Name: "weather"},
			{Kind: "tool_args", Index: 0, Delta: `{"city":`},
			{Kind: "tool_args", Index: 0, Delta: `"Oslo"}`},
		}},
		other.Reply{Events: []other.Event{{Kind: "text", Text: "It is sunny "}, {Kind: "text", Text: "in Oslo."}}},
	)}

	sess, _ := tk.Session("conversation-1")
	conv := agent.NewConversation("You are brief.", "Weather in Oslo?")
	out, err := agent.New(model, agent.WithRetry(agent.RetryPolicy{Backoff: time.Millisecond})).Run(ctx, sess, conv)
	if err != nil {
		fmt.Println(err)
		return
	}
	args, _ := json.Marshal(out.Results[0].Call.Args)
	fmt.Println(out.Answer, "|", out.Turns, "turns |", strings.TrimSpace(string(args)), "|", out.Results[0].Text())
	// Output:
	// It is sunny in Oslo. | 2 turns | {"city":"Oslo"} | sunny in Oslo
}
