package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/toolkit"
)

// Hooks at the run's timing points: a dynamic instruction added to each
// model call (not stored), a reply checked before its calls run, each call
// and each batch seen as it ends, and the run's end whatever it was
// (docs/llm-sdk.md cuts its example from here).
func ExampleWithHooks() {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "weather", Description: "Weather in a city.", ConcurrencySafe: true},
		func(ctx context.Context, in cityIn) (string, error) { return "sunny in " + in.City, nil }))
	model := agent.ModelFunc(func(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == agent.RoleTool {
			return &agent.Reply{Text: "It is " + last.Text() + "."}, nil
		}
		return &agent.Reply{Calls: []toolkit.Call{
			{ID: "c1", Name: "weather", Args: json.RawMessage(`{"city":"Oslo"}`)},
			{ID: "c2", Name: "weather", Args: json.RawMessage(`{"city":"Atlantis"}`)},
		}}, nil
	})

	hooks := agent.Hooks{
		Start: func(ctx context.Context, run *agent.RunInfo) (context.Context, error) {
			fmt.Println("start:", run.Conversation().Messages[0].Text())
			return ctx, nil // or a context with the run's values, a span
		},
		BeforeModel: func(ctx context.Context, run *agent.RunInfo, req *agent.Request) error {
			req.System += fmt.Sprintf(" Turn %d of at most 5.", run.Turn()) // this call only
			return nil
		},
		AfterReply: func(ctx context.Context, run *agent.RunInfo, reply *agent.Reply) error {
			kept := reply.Calls[:0]
			for _, c := range reply.Calls {
				if !strings.Contains(string(c.Args), "Atlantis") { // dropped calls never run
					kept = append(kept, c)
				}
			}
			reply.Calls = kept
			return nil
		},
		CallEnd: func(ctx context.Context, run *agent.RunInfo, r toolkit.Result) {
			fmt.Println("call end:", r.Call.ID, r.State)
		},
		BatchEnd: func(ctx context.Context, run *agent.RunInfo, results []toolkit.Result, stop *toolkit.Stop) {
			fmt.Println("batch end: turn", run.Turn(), len(results), "result")
		},
		End: func(ctx context.Context, run *agent.RunInfo, out *agent.Outcome, err error) {
			fmt.Println("end:", out.End, out.Turns, "turns,", len(run.Conversation().Messages), "messages, error", err)
		},
	}
	loop := agent.New(model, agent.WithHooks(hooks))

	sess, _ := tk.Session("conversation-1")
	out, _ := loop.Run(ctx, sess, agent.NewConversation("You are brief.", "Weather in Oslo and Atlantis?"))
	fmt.Println(out.Answer)
	// Output:
	// start: Weather in Oslo and Atlantis?
	// call end: c1 success
	// batch end: turn 1 1 result
	// end: answer 2 turns, 4 messages, error <nil>
	// It is sunny in Oslo.
}

// auditTrail is one Go value that is both a model and a tool interceptor
// (Spring AI Alibaba's ModelInterceptor and ToolInterceptor in one), by its
// method values: it counts what a run costs on both sides and answers for
// the model once a budget is spent. Tool calls run in parallel: its
// counters are atomic.
type auditTrail struct {
	modelCalls, toolCalls atomic.Int64
	budget                int64
}

// Model wraps each model call.
func (a *auditTrail) Model(ctx context.Context, req *agent.Request, next agent.Model) (*agent.Reply, error) {
	if a.modelCalls.Add(1)+a.toolCalls.Load() > a.budget { // short-circuit: the model is not asked
		return &agent.Reply{Text: "(the budget is spent)"}, nil
	}
	return next.Generate(ctx, req)
}

// Tool wraps each tool call.
func (a *auditTrail) Tool(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
	a.toolCalls.Add(1)
	return next(ctx, inv)
}

// One value as a model interceptor and a tool interceptor.
func ExampleModelInterceptor() {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "now"}, func(ctx context.Context, _ struct{}) (string, error) { return "noon", nil }))
	model := agent.ModelFunc(func(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == agent.RoleTool {
			return &agent.Reply{Text: "It is " + last.Text() + "."}, nil
		}
		return &agent.Reply{Calls: []toolkit.Call{{ID: "c1", Name: "now", Args: json.RawMessage(`{}`)}}}, nil
	})

	trail := &auditTrail{budget: 10}
	tk.Use(toolkit.Interceptor{Name: "audit", Intercept: trail.Tool}) // every tool call
	loop := agent.New(model, agent.WithModelInterceptor(trail.Model)) // every model call

	sess, _ := tk.Session("conversation-1")
	out, _ := loop.Run(ctx, sess, agent.NewConversation("", "Time?"))
	fmt.Println(out.Answer)
	fmt.Println(trail.modelCalls.Load(), "model calls,", trail.toolCalls.Load(), "tool call")
	// Output:
	// It is noon.
	// 2 model calls, 1 tool call
}
