package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/toolkit"
)

type cart struct {
	Items []string `json:"items"`
}

var cartState = agent.NewState[cart]("cart")

// cartKit has "add" (concurrency-safe: a batch's adds run at once), which
// puts its item in the run's cart, and "show", which lists it; an
// interceptor notes the cart's size before each call in the result's meta.
func cartKit(t *testing.T) *toolkit.Toolkit {
	t.Helper()
	tk := toolkit.New(toolkit.WithMaxParallel(8))
	t.Cleanup(func() { _ = tk.Close(context.Background()) })
	add := toolkit.MustTool(toolkit.Spec{Name: "add", ConcurrencySafe: true}, func(ctx context.Context, in struct {
		Item string `json:"item"`
	}) (string, error) {
		err := cartState.Update(ctx, func(c *cart) { c.Items = append(c.Items, in.Item) })
		return "added", err
	})
	show := toolkit.MustTool(toolkit.Spec{Name: "show"}, func(ctx context.Context, _ struct{}) (string, error) {
		c, ok := cartState.Get(ctx)
		if !ok {
			return "no cart", nil
		}
		return fmt.Sprint(len(c.Items), " items"), nil
	})
	if err := tk.Add(add, show); err != nil {
		t.Fatal(err)
	}
	if err := tk.Use(toolkit.Interceptor{Name: "peek", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		c, _ := cartState.Get(ctx)
		inv.Meta("cart_before", len(c.Items))
		return next(ctx, inv)
	}}); err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestStateToolsUpdateConcurrently: the 20 adds of one batch, running at
// once, each land in the run's state; the next turn's tool and the
// interceptors read it; the conversation holds it as JSON, brings it back
// unchanged, and a run of the restored conversation in another toolkit
// sees it.
func TestStateToolsUpdateConcurrently(t *testing.T) {
	ctx := context.Background()
	const n = 20
	adds := make([]toolkit.Call, n)
	for i := range adds {
		adds[i] = call(fmt.Sprint("a", i), "add", fmt.Sprintf(`{"item":"i%02d"}`, i))
	}
	run := func(tk *toolkit.Toolkit, conv *agent.Conversation, steps ...step) *agent.Outcome {
		sess, err := tk.Session("cart")
		if err != nil {
			t.Fatal(err)
		}
		out, err := agent.New(&script{steps: steps}).Run(ctx, sess, conv)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	conv := agent.NewConversation("", "fill the cart")
	out := run(cartKit(t), conv,
		step{reply: &agent.Reply{Calls: adds}},
		step{reply: &agent.Reply{Calls: []toolkit.Call{call("s", "show", `{}`)}}},
		step{reply: &agent.Reply{Text: "done"}})
	show := out.Results[n]
	if show.Text() != "20 items" || show.Meta["cart_before"] != 20 {
		t.Fatalf("show says %q, the interceptor saw %v items", show.Text(), show.Meta["cart_before"])
	}
	var c cart
	if err := json.Unmarshal(conv.State["cart"], &c); err != nil || len(c.Items) != n {
		t.Fatalf("the conversation's state: %s (%v)", conv.State["cart"], err)
	}
	seen := map[string]bool{}
	for _, it := range c.Items {
		seen[it] = true
	}
	if len(seen) != n {
		t.Fatalf("items %v: some update was lost", c.Items)
	}
	data, err := json.Marshal(conv)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"state":{"cart":{"items":[`) {
		t.Fatalf("the conversation's JSON: %s", data)
	}
	back := &agent.Conversation{}
	if err := json.Unmarshal(data, back); err != nil {
		t.Fatal(err)
	}
	back.Add(agent.UserText("and one more"))
	out = run(cartKit(t), back,
		step{reply: &agent.Reply{Calls: []toolkit.Call{call("a20", "add", `{"item":"last"}`)}}},
		step{reply: &agent.Reply{Calls: []toolkit.Call{call("s2", "show", `{}`)}}},
		step{reply: &agent.Reply{Text: "done"}})
	if got := out.Results[1].Text(); got != "21 items" || out.Results[0].Meta["cart_before"] != 20 {
		t.Fatalf("the restored run's show: %q, its add saw %v items before", got, out.Results[0].Meta["cart_before"])
	}
}

// TestStateSavedAfterEachBatch: a store that saves the conversation when
// a turn's calls start (durable.SaveEachTurn) finds the state the turns
// before wrote, not a state the running calls are changing.
func TestStateSavedAfterEachBatch(t *testing.T) {
	ctx := context.Background()
	tk := cartKit(t)
	sess, _ := tk.Session("s")
	var saved []string
	conv := agent.NewConversation("", "go")
	store := agent.WithHooks(agent.Hooks{BatchStart: func(ctx context.Context, _ *agent.RunInfo, b *toolkit.Batch) {
		data, err := json.Marshal(conv) // while the turn's calls run (-race watches)
		if err != nil {
			t.Error(err)
		}
		var c agent.Conversation
		if err := json.Unmarshal(data, &c); err != nil {
			t.Error(err)
		}
		saved = append(saved, string(c.State["cart"]))
	}})
	m := &script{steps: []step{
		{reply: &agent.Reply{Calls: []toolkit.Call{call("1", "add", `{"item":"a"}`)}}},
		{reply: &agent.Reply{Calls: []toolkit.Call{call("2", "add", `{"item":"b"}`)}}},
		{reply: &agent.Reply{Text: "done"}},
	}}
	if _, err := agent.New(m, store).Run(ctx, sess, conv); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(saved, " | "); got != ` | {"items":["a"]}` {
		t.Fatalf("state at each turn's start: %s", got)
	}
	if got := string(conv.State["cart"]); got != `{"items":["a","b"]}` {
		t.Fatalf("state at the end: %s", got)
	}
}

// TestStateErrors: an update whose value does not marshal, or over a
// value that does not decode, says so and keeps the value held; so does
// one outside a run, or after its run ended.
func TestStateErrors(t *testing.T) {
	ctx := context.Background()
	ratio := agent.NewState[float64]("ratio")
	count := agent.NewState[int]("count")
	if err := ratio.Set(ctx, 1); !errors.Is(err, agent.ErrNoState) {
		t.Fatalf("outside a run: %v", err)
	}
	if _, ok := ratio.Get(ctx); ok {
		t.Fatal("Get outside a run reports a value")
	}
	conv := agent.NewConversation("", "hi")
	conv.State = map[string]json.RawMessage{"count": json.RawMessage(`"many"`)}
	run, end := agent.WithState(ctx, conv)
	if err := ratio.Set(run, 0.5); err != nil {
		t.Fatal(err)
	}
	err := ratio.Set(run, math.NaN())
	if err == nil || !strings.Contains(err.Error(), `state "ratio": the new value (float64) does not marshal to JSON, so the old one stays`) {
		t.Fatalf("a NaN: %v", err)
	}
	if v, ok := ratio.Get(run); !ok || v != 0.5 {
		t.Fatalf("after the failed update: %v %v", v, ok)
	}
	err = count.Update(run, func(n *int) { *n++ })
	if err == nil || !strings.Contains(err.Error(), `state "count" holds "many", which does not decode as int`) {
		t.Fatalf("over a value of another type: %v", err)
	}
	if _, ok := count.Get(run); ok {
		t.Fatal("Get reports a value that does not decode")
	}
	if err := agent.NewState[int]("").Set(run, 1); err == nil {
		t.Fatal("a state without a key was kept")
	}
	end()
	if string(conv.State["ratio"]) != "0.5" || string(conv.State["count"]) != `"many"` {
		t.Fatalf("the conversation's state: %v", conv.State)
	}
	if err := ratio.Set(run, 2); err == nil || !strings.Contains(err.Error(), "the run is over") {
		t.Fatalf("after the run ended: %v", err)
	}
	if string(conv.State["ratio"]) != "0.5" {
		t.Fatalf("a late update changed the conversation: %s", conv.State["ratio"])
	}
}

// TestStateOfASubAgent: a sub-agent's run inside a call has its own
// conversation's state; the parent's is untouched by it and still there
// after it.
func TestStateOfASubAgent(t *testing.T) {
	ctx := context.Background()
	n := agent.NewState[int]("n")
	tk := toolkit.New()
	defer tk.Close(ctx)
	subConv := agent.NewConversation("", "sub task")
	set := toolkit.MustTool(toolkit.Spec{Name: "set"}, func(ctx context.Context, in struct {
		N int `json:"n"`
	}) (string, error) {
		before, ok := n.Get(ctx)
		return fmt.Sprint("before ", before, " ", ok), n.Set(ctx, in.N)
	})
	sub := toolkit.MustTool(toolkit.Spec{Name: "sub"}, func(ctx context.Context, _ struct{}) (string, error) {
		sess, err := tk.Session("child")
		if err != nil {
			return "", err
		}
		out, err := agent.New(&script{steps: []step{
			{reply: &agent.Reply{Calls: []toolkit.Call{call("c1", "set", `{"n":5}`)}}},
			{reply: &agent.Reply{Text: "sub done"}},
		}}).Run(ctx, sess, subConv)
		if err != nil {
			return "", err
		}
		return out.Results[0].Text(), nil
	})
	if err := tk.Add(set, sub); err != nil {
		t.Fatal(err)
	}
	sess, _ := tk.Session("parent")
	conv := agent.NewConversation("", "task")
	out, err := agent.New(&script{steps: []step{
		{reply: &agent.Reply{Calls: []toolkit.Call{call("p1", "set", `{"n":1}`)}}},
		{reply: &agent.Reply{Calls: []toolkit.Call{call("p2", "sub", `{}`)}}},
		{reply: &agent.Reply{Calls: []toolkit.Call{call("p3", "set", `{"n":2}`)}}},
		{reply: &agent.Reply{Text: "done"}},
	}}).Run(ctx, sess, conv)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{out.Results[0].Text(), out.Results[1].Text(), out.Results[2].Text()}
	if want := "[before 0 false before 0 false before 1 true]"; fmt.Sprint(got) != want {
		t.Fatalf("the tools read %v, want %s", got, want)
	}
	if string(conv.State["n"]) != "2" || string(subConv.State["n"]) != "5" {
		t.Fatalf("parent's state %s, sub-agent's %s", conv.State["n"], subConv.State["n"])
	}
}

// TestStateFromRunHooks: a Start hook loads the run's state for its tools
// (seed 004's place to load data), and the End hook finds what they wrote
// both on its context and in the conversation.
func TestStateFromRunHooks(t *testing.T) {
	ctx := context.Background()
	tk := cartKit(t)
	sess, _ := tk.Session("s")
	var atEnd, inConv string
	hooks := agent.WithHooks(agent.Hooks{
		Start: func(ctx context.Context, run *agent.RunInfo) (context.Context, error) {
			return nil, cartState.Set(ctx, cart{Items: []string{"loaded"}})
		},
		End: func(ctx context.Context, run *agent.RunInfo, out *agent.Outcome, err error) {
			c, _ := cartState.Get(ctx)
			atEnd, inConv = fmt.Sprint(c.Items), string(run.Conversation().State["cart"])
		},
	})
	m := &script{steps: []step{
		{reply: &agent.Reply{Calls: []toolkit.Call{call("1", "add", `{"item":"a"}`)}}},
		{reply: &agent.Reply{Text: "done"}},
	}}
	conv := agent.NewConversation("", "go")
	out, err := agent.New(m, hooks).Run(ctx, sess, conv)
	if err != nil {
		t.Fatal(err)
	}
	if out.Results[0].Meta["cart_before"] != 1 || atEnd != "[loaded a]" || inConv != `{"items":["loaded","a"]}` {
		t.Fatalf("the add saw %v items; End read %s from its context, %s from the conversation", out.Results[0].Meta["cart_before"], atEnd, inConv)
	}
}
