package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// TestRunStreamedIDsMatchTheCalls: a streaming server that numbers calls
// per reply (call_0 every turn, as some compatible servers do) announces
// turn 2's call as call_0 again; the loop gives it an id of its own, and
// the args_delta events that announced it must name that id too: a UI
// keys argument pieces by call (docs/events.md), and pieces under call_0
// would join turn 1's call and never meet the call that starts.
func TestRunStreamedIDsMatchTheCalls(t *testing.T) {
	ctx := context.Background()
	tk, rec := record(t, "ids")
	tk.Add(weatherTool(t))
	sess, _ := tk.Session("ids")
	turn := func(city string) step {
		args := `{"city":"` + city + `"}`
		return step{
			chunks: []agent.Chunk{
				{Kind: agent.ChunkCall, Index: 0, CallID: "call_0", Name: "weather"},
				{Kind: agent.ChunkArgs, Index: 0, Text: args},
				{Kind: agent.ChunkCall, Index: 1, CallID: "call_0", Name: "weather"}, // repeated in the reply too
				{Kind: agent.ChunkArgs, Index: 1, Text: `{"city":"Bern"}`},
			},
			reply: &agent.Reply{Calls: []toolkit.Call{call("call_0", "weather", args), call("call_0", "weather", `{"city":"Bern"}`)}, Finish: agent.FinishToolCalls},
		}
	}
	m := &script{steps: []step{turn("Oslo"), turn("Rome"), {reply: &agent.Reply{Text: "Sunny."}}}}
	conv := agent.NewConversation("", "Weather?")
	if _, err := agent.New(m).Run(ctx, sess, conv); err != nil {
		t.Fatal(err)
	}
	evs := rec.waitFor(t, agent.EventAnswer)
	args := map[string]string{}  // call id -> arguments streamed
	ended := map[string]string{} // call id -> arguments in turn_end
	started := map[string]bool{}
	for _, ev := range evs {
		switch ev.Type {
		case agent.EventArgs:
			d := body[agent.ArgsDelta](t, ev)
			args[d.Call] += d.Delta
		case agent.EventTurnEnd:
			for _, c := range body[agent.TurnEnd](t, ev).Calls {
				ended[c.ID] = string(c.Args)
			}
		case events.TypeStart:
			started[ev.Call] = true
		}
	}
	if len(ended) != 4 {
		t.Fatalf("turn_end events name %d calls, want 4: %v", len(ended), ended)
	}
	for id, a := range ended {
		if args[id] != a {
			t.Errorf("call %s: args_delta pieces add up to %q, turn_end says %q\n%s", id, args[id], a, describe(evs))
		}
		if !started[id] {
			t.Errorf("call %s never started", id)
		}
	}
	for id := range args {
		if _, ok := ended[id]; !ok {
			t.Errorf("args_delta events name call %q, which no turn_end has (%q)", id, args[id])
		}
	}
}

// TestRunNamelessCallAskedAgain: a reply with a call that names no tool
// can be neither run nor recorded (Conversation.Check refuses it, the
// providers' APIs refuse it in a history). It is a malformed reply, asked
// again like a stream cut short; when the retries run out, the run ends
// with the error and the conversation is as it was, valid.
func TestRunNamelessCallAskedAgain(t *testing.T) {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Add(weatherTool(t))
	sess, _ := tk.Session("x")
	nameless := step{reply: &agent.Reply{Calls: []toolkit.Call{call("c1", "weather", `{"city":"Oslo"}`), call("c2", "", `{}`)}}}
	m := &script{steps: []step{nameless, {reply: &agent.Reply{Text: "Sunny."}}}}
	conv := agent.NewConversation("", "Weather?")
	fast := agent.WithRetry(agent.RetryPolicy{Attempts: 2, Backoff: time.Millisecond})
	out, err := agent.New(m, fast).Run(ctx, sess, conv)
	if err != nil || out.Answer != "Sunny." || len(out.Results) != 0 {
		t.Fatalf("outcome %+v, %v; want the second reply's answer, no call run", out, err)
	}
	if err := conv.Check(); err != nil {
		t.Fatal(err)
	}

	m = &script{steps: []step{nameless, nameless}}
	conv = agent.NewConversation("", "Weather?")
	out, err = agent.New(m, fast).Run(ctx, sess, conv)
	var api *agent.APIError
	if !errors.As(err, &api) || !strings.Contains(err.Error(), `call 1 (id "c2") has no tool name`) || out.End != agent.EndError {
		t.Fatalf("outcome %+v, %v; want an error naming the call", out, err)
	}
	if err := conv.Check(); err != nil || len(conv.Messages) != 1 {
		t.Fatalf("conversation of %d messages after the failed run: %v", len(conv.Messages), err)
	}
}

// TestRunStreamedOutOfOrder: a server that began the model's second call
// before its first (chunks number calls in the order they began, the reply
// has them in the model's order) and streamed no arguments for the other
// (a call without parameters, {} in the reply): the args_delta events of
// each call add up to its arguments, neither doubled nor missing.
func TestRunStreamedOutOfOrder(t *testing.T) {
	ctx := context.Background()
	tk, rec := record(t, "order")
	tk.Add(weatherTool(t))
	sess, _ := tk.Session("order")
	m := &script{steps: []step{
		{
			chunks: []agent.Chunk{
				{Kind: agent.ChunkCall, Index: 0, CallID: "b", Name: "weather"},
				{Kind: agent.ChunkArgs, Index: 0, Text: `{"city":"Rome"}`},
				{Kind: agent.ChunkCall, Index: 1, CallID: "a", Name: "weather"},
			},
			reply: &agent.Reply{Calls: []toolkit.Call{call("a", "weather", `{}`), call("b", "weather", `{"city":"Rome"}`)}, Finish: agent.FinishToolCalls},
		},
		{reply: &agent.Reply{Text: "Sunny."}},
	}}
	if _, err := agent.New(m).Run(ctx, sess, agent.NewConversation("", "Weather?")); err != nil {
		t.Fatal(err)
	}
	evs := rec.waitFor(t, agent.EventAnswer)
	args := map[string]string{}
	for _, ev := range evs {
		if ev.Type == agent.EventArgs {
			d := body[agent.ArgsDelta](t, ev)
			args[d.Call] += d.Delta
		}
	}
	if args["a"] != `{}` || args["b"] != `{"city":"Rome"}` {
		t.Errorf("args_delta pieces add up to a=%q b=%q, want {} and the streamed ones\n%s", args["a"], args["b"], describe(evs))
	}
}

// TestRunInvalidArgumentsReported: a model that writes arguments that are
// not JSON (a mistake, or a call cut at the token limit) is answered by
// the toolkit, and the turn is reported like any other: its turn_end
// event carries the call, the arguments as a JSON string holding the text
// (as a call's start event does). json.Marshal refuses such arguments as a
// json.RawMessage, and the event was dropped.
func TestRunInvalidArgumentsReported(t *testing.T) {
	ctx := context.Background()
	tk, rec := record(t, "bad")
	tk.Add(weatherTool(t))
	sess, _ := tk.Session("bad")
	m := &script{steps: []step{
		{reply: &agent.Reply{Calls: []toolkit.Call{call("c1", "weather", `{"city":"Ro`), call("c2", "weather", `{"city":"Bern"}`)}, Finish: agent.FinishToolCalls}},
		{reply: &agent.Reply{Text: "Sunny."}},
	}}
	if _, err := agent.New(m).Run(ctx, sess, agent.NewConversation("", "Weather?")); err != nil {
		t.Fatal(err)
	}
	evs := rec.waitFor(t, agent.EventAnswer)
	var ends []agent.TurnEnd
	for _, ev := range evs {
		if ev.Type == agent.EventTurnEnd {
			ends = append(ends, body[agent.TurnEnd](t, ev))
		}
	}
	if len(ends) != 2 || len(ends[0].Calls) != 2 {
		t.Fatalf("turn_end events %+v, want 2, the first with both calls\n%s", ends, describe(evs))
	}
	var text string
	if err := json.Unmarshal(ends[0].Calls[0].Args, &text); err != nil || text != `{"city":"Ro` {
		t.Errorf("the invalid arguments in turn_end: %s (%v), want a JSON string of the text", ends[0].Calls[0].Args, err)
	}
	if string(ends[0].Calls[1].Args) != `{"city":"Bern"}` {
		t.Errorf("the valid arguments in turn_end: %s", ends[0].Calls[1].Args)
	}
}

// TestRunManyCallsWithRepeatedIDs: a reply of more than 8 calls (where the
// loop checks ids against a set, not in place) that repeats ids gets an id
// of its own for each call, runs them all, and leaves a conversation Check
// accepts. With the set not updated as ids were given, the repeats stayed
// and Run returned no error.
func TestRunManyCallsWithRepeatedIDs(t *testing.T) {
	ctx := context.Background()
	tk, _ := record(t, "many")
	tk.Add(weatherTool(t))
	sess, _ := tk.Session("many")
	var calls []toolkit.Call
	for i := range 12 {
		calls = append(calls, call([]string{"a", "b", "a"}[i%3], "weather", `{"city":"Oslo"}`))
	}
	m := &script{steps: []step{
		{reply: &agent.Reply{Calls: calls, Finish: agent.FinishToolCalls}},
		{reply: &agent.Reply{Text: "Sunny."}},
	}}
	conv := agent.NewConversation("", "Weather?")
	if _, err := agent.New(m).Run(ctx, sess, conv); err != nil {
		t.Fatal(err)
	}
	if err := conv.Check(); err != nil {
		t.Fatalf("the conversation after Run: %v", err)
	}
	ids := map[string]bool{}
	results := 0
	for _, msg := range conv.Messages {
		for _, c := range msg.Calls {
			if ids[c.ID] {
				t.Errorf("call id %q is used twice", c.ID)
			}
			ids[c.ID] = true
		}
		if msg.CallID != "" && !msg.IsError {
			results++
		}
	}
	if len(ids) != 12 || results != 12 {
		t.Fatalf("%d distinct call ids and %d results, want 12 of each", len(ids), results)
	}
}
