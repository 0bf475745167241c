package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

type runKey struct{}

// Start runs before the first model call and its context is the run's;
// End is called exactly once whatever ended the run, with what Run
// returned, and a failing Start ends the run before any model call.
func TestHooksStartAndEnd(t *testing.T) {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Add(weatherTool(t))
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "report", ReturnDirect: true},
		func(ctx context.Context, _ struct{}) (string, error) { return "The report.", nil }))
	running := make(chan struct{}, 1)
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "slow"}, func(ctx context.Context, _ struct{}) (string, error) {
		running <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	}))
	calls := func(cs ...toolkit.Call) step { return step{reply: &agent.Reply{Calls: cs}} }
	answer := step{reply: &agent.Reply{Text: "Sunny."}}
	for _, tc := range []struct {
		name      string
		steps     []step
		startErr  error
		cancel    bool // cancel the run once the slow tool runs
		eligible  bool // an Eligible hook refuses
		maxTurns  int
		end       agent.End
		errIs     error
		requested int
	}{
		{name: "answer", steps: []step{calls(call("w", "weather", `{"city":"Oslo"}`)), answer}, end: agent.EndAnswer, requested: 2},
		{name: "stopped", steps: []step{calls(call("r", "report", `{}`))}, end: agent.EndStopped, requested: 1},
		{name: "turn limit", steps: []step{calls(call("w1", "weather", `{"city":"Oslo"}`)), calls(call("w2", "weather", `{"city":"Rome"}`))},
			maxTurns: 1, end: agent.EndMaxTurns, errIs: agent.ErrMaxTurns, requested: 1},
		{name: "model error", steps: []step{{err: &agent.APIError{Provider: "test", StatusCode: 401, Message: "bad key"}}}, end: agent.EndError, requested: 1},
		{name: "cancelled", steps: []step{calls(call("s", "slow", `{}`))}, cancel: true, end: agent.EndError, errIs: context.Canceled, requested: 1},
		{name: "not eligible", steps: []step{calls(call("w", "weather", `{"city":"Oslo"}`))}, eligible: true, end: agent.EndNotEligible, requested: 1},
		{name: "start fails", startErr: errors.New("no profile"), end: agent.EndError, requested: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			if tc.cancel {
				go func() { <-running; cancel() }()
			}
			sess, _ := tk.Session("start-end")
			var ends []string
			var endOut *agent.Outcome
			var endErr error
			m := &script{steps: tc.steps}
			valueSeen := true
			model := agent.ModelFunc(func(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
				valueSeen = valueSeen && ctx.Value(runKey{}) == "run-1"
				return m.Generate(ctx, req)
			})
			hooks := agent.Hooks{
				Start: func(ctx context.Context, run *agent.RunInfo) (context.Context, error) {
					if run.Turn() != 0 || run.Session() != sess || len(run.Conversation().Messages) != 1 {
						t.Errorf("Start sees turn %d, %d messages", run.Turn(), len(run.Conversation().Messages))
					}
					return context.WithValue(ctx, runKey{}, "run-1"), tc.startErr
				},
				End: func(ctx context.Context, run *agent.RunInfo, out *agent.Outcome, err error) {
					if ctx.Err() != nil {
						t.Errorf("End's context is done: %v", ctx.Err())
					}
					ends = append(ends, fmt.Sprint(ctx.Value(runKey{})))
					endOut, endErr = out, err
				},
			}
			if tc.eligible {
				hooks.Eligible = func(context.Context, *agent.RunInfo, *agent.Reply) bool { return false }
			}
			opts := []agent.Option{agent.WithHooks(hooks)}
			if tc.maxTurns > 0 {
				opts = append(opts, agent.WithMaxTurns(tc.maxTurns))
			}
			conv := agent.NewConversation("", "Go")
			out, err := agent.New(model, opts...).Run(runCtx, sess, conv)
			if tc.startErr == nil && len(ends) == 1 && ends[0] != "run-1" {
				t.Errorf("End's context lacks Start's value: %q", ends)
			}
			if len(ends) != 1 || endOut != out || endErr != err {
				t.Fatalf("End called %d times, with (%p, %v); Run returned (%p, %v)", len(ends), endOut, endErr, out, err)
			}
			if out.End != tc.end || len(m.requests()) != tc.requested || !valueSeen {
				t.Errorf("end %q after %d requests (value seen by the model: %v), want %q after %d", out.End, len(m.requests()), valueSeen, tc.end, tc.requested)
			}
			if tc.errIs != nil && !errors.Is(err, tc.errIs) {
				t.Errorf("error %v, want %v", err, tc.errIs)
			}
			if tc.startErr != nil && !errors.Is(err, tc.startErr) {
				t.Errorf("error %v, want the Start hook's", err)
			}
			if err := conv.Check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// Ends run in reverse order, each once; a run refused at once calls no
// hook.
func TestHooksOrder(t *testing.T) {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	sess, _ := tk.Session("x")
	var seen []string
	h := func(name string) agent.Option {
		return agent.WithHooks(agent.Hooks{
			Start: func(ctx context.Context, _ *agent.RunInfo) (context.Context, error) {
				seen = append(seen, "start "+name)
				return nil, nil
			},
			BeforeModel: func(ctx context.Context, _ *agent.RunInfo, req *agent.Request) error {
				req.System += name
				seen = append(seen, "before "+req.System)
				return nil
			},
			End: func(context.Context, *agent.RunInfo, *agent.Outcome, error) { seen = append(seen, "end "+name) },
		})
	}
	l := agent.New(&script{steps: []step{{reply: &agent.Reply{Text: "hi"}}}}, h("a"), h("b"))
	if _, err := l.Run(ctx, sess, agent.NewConversation("", "Hi")); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(seen, ", "); got != "start a, start b, before a, before ab, end b, end a" {
		t.Fatalf("order: %s", got)
	}
	seen = nil
	if _, err := l.Run(ctx, sess, &agent.Conversation{}); err == nil || len(seen) != 0 {
		t.Fatalf("a refused run: err %v, hooks %q", err, seen)
	}
}

// BeforeModel rewrites what one model call is sent, not what is stored;
// RunInfo.Replace stores a rewrite, and refuses one that breaks the
// conversation or comes while a batch runs.
func TestHooksBeforeModel(t *testing.T) {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Add(weatherTool(t))
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "search"}, func(context.Context, struct{}) (string, error) { return "found", nil }))
	sess, _ := tk.Session("x")

	t.Run("for this call only", func(t *testing.T) {
		m := &script{steps: []step{
			{reply: &agent.Reply{Calls: []toolkit.Call{call("w", "weather", `{"city":"Oslo"}`)}}},
			{reply: &agent.Reply{Text: "Sunny."}},
		}}
		hooks := agent.Hooks{BeforeModel: func(ctx context.Context, run *agent.RunInfo, req *agent.Request) error {
			req.System += fmt.Sprintf(" (turn %d)", run.Turn())
			req.Messages = append(req.Messages[len(req.Messages)-1:], agent.UserText("Be quick."))
			req.Tools = req.Tools[:1]
			return nil
		}}
		conv := agent.NewConversation("Be brief.", "Weather in Oslo?")
		if _, err := agent.New(m, agent.WithHooks(hooks)).Run(ctx, sess, conv); err != nil {
			t.Fatal(err)
		}
		reqs := m.requests()
		if len(reqs) != 2 || reqs[1].System != "Be brief. (turn 2)" || len(reqs[1].Messages) != 2 ||
			reqs[1].Messages[0].Role != agent.RoleTool || reqs[1].Messages[1].Text() != "Be quick." || len(reqs[1].Tools) != 1 {
			t.Fatalf("requests %+v", reqs)
		}
		if conv.System != "Be brief." || len(conv.Messages) != 4 || conv.Messages[3].Text() != "Sunny." {
			t.Fatalf("the stored conversation changed: %+v", conv)
		}
		if err := conv.Check(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("stored on request", func(t *testing.T) {
		m := &script{steps: []step{
			{reply: &agent.Reply{Calls: []toolkit.Call{call("w", "weather", `{"city":"Oslo"}`)}}},
			{reply: &agent.Reply{Text: "Sunny."}},
		}}
		var refusals []error
		hooks := agent.Hooks{
			BeforeModel: func(ctx context.Context, run *agent.RunInfo, req *agent.Request) error {
				if run.Turn() != 2 {
					return nil
				}
				msgs := run.Conversation().Messages
				refusals = append(refusals, run.Replace("s", msgs[2:]), run.Replace("s", nil)) // a result without its call; nothing
				short := []agent.Message{agent.UserText("Summary: Oslo was asked for; it is sunny.")}
				if err := run.Replace("Compressed.", short); err != nil {
					return err
				}
				req.System, req.Messages = run.Conversation().System, run.Conversation().Messages
				return nil
			},
			CallEnd: func(ctx context.Context, run *agent.RunInfo, r toolkit.Result) {
				refusals = append(refusals, run.Replace("s", []agent.Message{agent.UserText("x")}))
			},
		}
		conv := agent.NewConversation("Be brief.", "Weather in Oslo?")
		if _, err := agent.New(m, agent.WithHooks(hooks)).Run(ctx, sess, conv); err != nil {
			t.Fatal(err)
		}
		if len(refusals) != 3 {
			t.Fatalf("%d refusals", len(refusals))
		}
		for i, want := range []string{"while a batch runs", "not valid", "empty"} {
			if !errors.Is(refusals[i], agent.ErrReplace) || !strings.Contains(refusals[i].Error(), want) {
				t.Errorf("refusal %d: %v, want ErrReplace saying %q", i, refusals[i], want)
			}
		}
		if reqs := m.requests(); len(reqs[1].Messages) != 1 || reqs[1].System != "Compressed." {
			t.Errorf("second request %+v", reqs[1])
		}
		if conv.System != "Compressed." || len(conv.Messages) != 2 || conv.Messages[1].Text() != "Sunny." {
			t.Fatalf("stored conversation %+v", conv)
		}
		if err := conv.Check(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("error ends the run", func(t *testing.T) {
		m := &script{}
		conv := agent.NewConversation("", "Hi")
		out, err := agent.New(m, agent.WithHooks(agent.Hooks{BeforeModel: func(context.Context, *agent.RunInfo, *agent.Request) error {
			return errors.New("quota spent")
		}})).Run(ctx, sess, conv)
		if err == nil || !strings.Contains(err.Error(), "BeforeModel hook: quota spent") || out.End != agent.EndError || len(m.requests()) != 0 {
			t.Fatalf("err %v, outcome %+v, %d requests", err, out, len(m.requests()))
		}
	})
}

// contextTooLong is a provider's answer to a request over the context
// window: not retryable as it is.
var contextTooLong = &agent.APIError{Provider: "test", StatusCode: 400, Type: "context_length_exceeded", Message: "too many tokens"}

// A ModelFailed hook tightens a failed request and has it assembled
// again, asks again as it is, or gives up; retries still count against
// the policy.
func TestHooksModelFailed(t *testing.T) {
	ctx := context.Background()
	tk, rec := record(t, "failed")
	sess, _ := tk.Session("failed")
	policy := agent.WithRetry(agent.RetryPolicy{Attempts: 3, Backoff: time.Millisecond, MaxWait: time.Second})
	long := &agent.Conversation{System: "s", Messages: []agent.Message{
		agent.UserText("one"), {Role: agent.RoleAssistant, Content: []events.Part{events.Text("ok")}}, agent.UserText("two"),
	}}

	t.Run("without a hook the error ends the run", func(t *testing.T) {
		m := &script{steps: []step{{err: contextTooLong}}}
		if _, err := agent.New(m, policy).Run(ctx, sess, long); !errors.Is(err, contextTooLong) || len(m.requests()) != 1 {
			t.Fatalf("err %v after %d requests", err, len(m.requests()))
		}
	})

	t.Run("reassemble", func(t *testing.T) {
		m := &script{steps: []step{{err: contextTooLong}, {reply: &agent.Reply{Text: "Done."}}}}
		keep, assembled := 0, 0 // keep: the messages BeforeModel keeps (0: all)
		var failed []string
		hooks := agent.Hooks{
			BeforeModel: func(ctx context.Context, run *agent.RunInfo, req *agent.Request) error {
				assembled++
				if keep > 0 {
					req.Messages = req.Messages[len(req.Messages)-keep:]
				}
				return nil
			},
			ModelFailed: func(ctx context.Context, run *agent.RunInfo, req *agent.Request, err error) agent.RetryDecision {
				failed = append(failed, fmt.Sprintf("%d messages: %v", len(req.Messages), err))
				var api *agent.APIError
				if errors.As(err, &api) && api.Type == "context_length_exceeded" {
					keep = 1
					return agent.RetryReassemble
				}
				return agent.RetryAsPolicy
			},
		}
		conv := &agent.Conversation{System: long.System, Messages: append([]agent.Message(nil), long.Messages...)}
		out, err := agent.New(m, policy, agent.WithHooks(hooks)).Run(ctx, sess, conv)
		if err != nil || out.Answer != "Done." {
			t.Fatalf("err %v, outcome %+v", err, out)
		}
		reqs := m.requests()
		if len(reqs) != 2 || len(reqs[0].Messages) != 3 || len(reqs[1].Messages) != 1 || reqs[1].Messages[0].Text() != "two" || assembled != 2 {
			t.Fatalf("%d requests (%+v), assembled %d times", len(reqs), reqs, assembled)
		}
		if len(failed) != 1 || !strings.HasPrefix(failed[0], "3 messages: test: HTTP 400") {
			t.Errorf("the hook saw %q", failed)
		}
		if len(conv.Messages) != 4 {
			t.Errorf("the stored conversation has %d messages, want the 3 and the answer", len(conv.Messages))
		}
		evs := rec.waitFor(t, agent.EventAnswer)
		var retries []agent.Retry
		for _, ev := range evs {
			if ev.Type == agent.EventRetry {
				retries = append(retries, body[agent.Retry](t, ev))
			}
		}
		if len(retries) != 1 || retries[0].WaitMS != 0 || !strings.Contains(retries[0].Error, "too many tokens") {
			t.Errorf("retry events %+v", retries)
		}
	})

	t.Run("as it is, then give up", func(t *testing.T) {
		unavailable := &agent.APIError{Provider: "test", StatusCode: 503, Retryable: true}
		m := &script{steps: []step{{err: contextTooLong}, {err: unavailable}, {reply: &agent.Reply{Text: "never"}}}}
		assembled := 0
		hooks := agent.Hooks{
			BeforeModel: func(context.Context, *agent.RunInfo, *agent.Request) error { assembled++; return nil },
			ModelFailed: func(ctx context.Context, run *agent.RunInfo, req *agent.Request, err error) agent.RetryDecision {
				if errors.Is(err, contextTooLong) {
					req.System = "shorter"
					return agent.RetryRequest
				}
				return agent.RetryGiveUp
			},
		}
		_, err := agent.New(m, policy, agent.WithHooks(hooks)).Run(ctx, sess, agent.NewConversation("long system prompt", "Hi"))
		if !errors.Is(err, unavailable) || !strings.Contains(err.Error(), "a ModelFailed hook gave up") {
			t.Fatalf("err %v", err)
		}
		reqs := m.requests()
		if len(reqs) != 2 || reqs[1].System != "shorter" || assembled != 1 {
			t.Fatalf("%d requests (%+v), assembled %d times", len(reqs), reqs, assembled)
		}
	})

	t.Run("attempts still bound it", func(t *testing.T) {
		m := &script{steps: []step{{err: contextTooLong}, {err: contextTooLong}, {err: contextTooLong}, {reply: &agent.Reply{Text: "never"}}}}
		calls := 0
		always := agent.Hooks{ModelFailed: func(context.Context, *agent.RunInfo, *agent.Request, error) agent.RetryDecision {
			calls++
			return agent.RetryRequest
		}}
		_, err := agent.New(m, policy, agent.WithHooks(always)).Run(ctx, sess, agent.NewConversation("", "Hi"))
		if !errors.Is(err, contextTooLong) || len(m.requests()) != 3 || calls != 2 {
			t.Fatalf("err %v after %d requests, hook called %d times", err, len(m.requests()), calls)
		}
	})
}

// AfterReply sees the whole reply before its calls run: it edits the
// text and the calls, and drops calls, which then neither run nor need a
// result; a call it leaves nameless ends the run with the conversation as
// it was.
func TestHooksAfterReply(t *testing.T) {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	var mu sync.Mutex
	ran := map[string]int{}
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "weather", ConcurrencySafe: true}, func(ctx context.Context, in cityIn) (string, error) {
		mu.Lock()
		ran[in.City]++
		mu.Unlock()
		return "sunny in " + in.City, nil
	}))
	sess, _ := tk.Session("x")
	m := &script{steps: []step{
		{reply: &agent.Reply{Text: "Checking my secret plan.", Calls: []toolkit.Call{
			call("a", "weather", `{"city":"Oslo"}`), call("b", "weather", `{"city":"Pyongyang"}`), call("c", "weather", `{"city":"Rom"}`),
		}}},
		{reply: &agent.Reply{Text: "Sunny.", Calls: []toolkit.Call{call("d", "weather", `{"city":"Pyongyang"}`)}}},
	}}
	var seen []string
	hooks := agent.Hooks{AfterReply: func(ctx context.Context, run *agent.RunInfo, reply *agent.Reply) error {
		seen = append(seen, fmt.Sprintf("turn %d: %d calls", run.Turn(), len(reply.Calls)))
		reply.Text = strings.ReplaceAll(reply.Text, "my secret plan", "the weather")
		kept := reply.Calls[:0]
		for _, c := range reply.Calls {
			switch {
			case strings.Contains(string(c.Args), "Pyongyang"):
				continue // dropped
			case c.ID == "c":
				c.Args = json.RawMessage(`{"city":"Rome"}`)
			}
			kept = append(kept, c)
		}
		reply.Calls = kept
		return nil
	}}
	conv := agent.NewConversation("", "Weather?")
	out, err := agent.New(m, agent.WithHooks(hooks)).Run(ctx, sess, conv)
	if err != nil {
		t.Fatal(err)
	}
	if out.End != agent.EndAnswer || out.Answer != "Sunny." || len(out.Results) != 2 || strings.Join(seen, "; ") != "turn 1: 3 calls; turn 2: 1 calls" {
		t.Fatalf("outcome %+v, hook saw %q", out, seen)
	}
	if ran["Oslo"] != 1 || ran["Rome"] != 1 || ran["Pyongyang"] != 0 || ran["Rom"] != 0 {
		t.Errorf("tools ran %v", ran)
	}
	if err := conv.Check(); err != nil {
		t.Fatal(err)
	}
	if a := conv.Messages[1]; a.Text() != "Checking the weather." || len(a.Calls) != 2 || a.Calls[1].ID != "c" || string(a.Calls[1].Args) != `{"city":"Rome"}` {
		t.Errorf("stored reply %+v", a)
	}
	if len(conv.Messages) != 5 || len(conv.Messages[4].Calls) != 0 {
		t.Errorf("stored %d messages: %+v", len(conv.Messages), conv.Messages)
	}

	t.Run("nameless call", func(t *testing.T) {
		m := &script{steps: []step{{reply: &agent.Reply{Calls: []toolkit.Call{call("a", "weather", `{"city":"Oslo"}`)}}}}}
		conv := agent.NewConversation("", "Weather?")
		_, err := agent.New(m, agent.WithHooks(agent.Hooks{AfterReply: func(ctx context.Context, _ *agent.RunInfo, r *agent.Reply) error {
			r.Calls[0].Name = ""
			r.Calls = append(r.Calls, toolkit.Call{Name: "weather", Args: json.RawMessage(`{"city":"Bergen"}`)}) // no id: gets one
			return nil
		}})).Run(ctx, sess, conv)
		if err == nil || !strings.Contains(err.Error(), `left call 0 (id "a") without a tool name`) || len(conv.Messages) != 1 {
			t.Fatalf("err %v, %d messages", err, len(conv.Messages))
		}
	})
}

// A reply's calls run only when Eligible says so; when not, the run ends
// with the reply, the conversation as it was, and a caller can run the
// calls itself and go on.
func TestHooksEligible(t *testing.T) {
	ctx := context.Background()
	tk, rec := record(t, "eligible")
	tk.Add(weatherTool(t))
	sess, _ := tk.Session("eligible")
	m := &script{steps: []step{
		{reply: &agent.Reply{Text: "Let me look.", Calls: []toolkit.Call{call("w", "weather", `{"city":"Oslo"}`)}, Extra: json.RawMessage(`{"r":1}`)}},
		{reply: &agent.Reply{Text: "Sunny."}},
	}}
	manual := true
	l := agent.New(m, agent.WithHooks(agent.Hooks{Eligible: func(ctx context.Context, run *agent.RunInfo, r *agent.Reply) bool { return !manual }}))
	conv := agent.NewConversation("", "Weather?")
	out, err := l.Run(ctx, sess, conv)
	if err != nil {
		t.Fatal(err)
	}
	if out.End != agent.EndNotEligible || out.Answer != "Let me look." || out.Pending == nil || len(out.Pending.Calls) != 1 ||
		out.Pending.Calls[0].ID != "w" || string(out.Pending.Extra) != `{"r":1}` || len(out.Results) != 0 {
		t.Fatalf("outcome %+v", out)
	}
	if len(conv.Messages) != 1 {
		t.Fatalf("the reply was recorded: %+v", conv.Messages)
	}
	evs := rec.waitFor(t, agent.EventAnswer)
	if a := body[agent.Answer](t, evs[len(evs)-1]); a.End != agent.EndNotEligible || a.Text != "Let me look." {
		t.Errorf("answer event %+v", a)
	}
	for _, ev := range evs {
		if ev.Type == events.TypeStart {
			t.Errorf("a call started: %s", ev.Call)
		}
	}

	// The caller runs the calls itself, records them and goes on.
	conv.Add(*out.Pending)
	for _, r := range sess.Run(ctx, out.Pending.Calls) {
		conv.Add(agent.ToolMessage(r))
	}
	if err := conv.Check(); err != nil {
		t.Fatal(err)
	}
	manual = false
	out, err = l.Run(ctx, sess, conv)
	if err != nil || out.Answer != "Sunny." || m.requests()[1].Messages[2].Text() != "sunny in Oslo" {
		t.Fatalf("err %v, outcome %+v", err, out)
	}
}

// The batch points: BatchStart once the calls start, CallEnd once per
// call with its final result (denied and interrupted ones too), BatchEnd
// once every call is final, never while one is suspended.
func TestHooksAroundBatches(t *testing.T) {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Add(weatherTool(t))
	ext, err := toolkit.NewExternalTool(toolkit.Spec{Name: "ask_user"}, json.RawMessage(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	tk.Add(ext)
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "rm"}, func(context.Context, struct{}) (string, error) { return "removed", nil }))
	running := make(chan struct{}, 1)
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "slow"}, func(ctx context.Context, _ struct{}) (string, error) {
		running <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	}))
	tk.Use(toolkit.Interceptor{Name: "no-rm", Tools: []string{"rm"}, Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		return toolkit.Failure(events.StateDenied, errors.New("not allowed"))
	}})

	var mu sync.Mutex
	var log []string
	add := func(s string) { mu.Lock(); log = append(log, s); mu.Unlock() }
	hooks := agent.Hooks{
		BatchStart: func(ctx context.Context, run *agent.RunInfo, b *toolkit.Batch) {
			add(fmt.Sprintf("batch start %d", run.Turn()))
		},
		CallEnd: func(ctx context.Context, run *agent.RunInfo, r toolkit.Result) {
			add(fmt.Sprintf("call end %s %s", r.Call.ID, r.State))
		},
		BatchEnd: func(ctx context.Context, run *agent.RunInfo, results []toolkit.Result, stop *toolkit.Stop) {
			if err := run.Conversation().Check(); err != nil {
				t.Errorf("BatchEnd sees a conversation without the batch's results: %v", err)
			}
			add(fmt.Sprintf("batch end %d: %d results", run.Turn(), len(results)))
		},
	}

	t.Run("suspended", func(t *testing.T) {
		log = nil
		sess, _ := tk.Session("around")
		m := &script{steps: []step{
			{reply: &agent.Reply{Calls: []toolkit.Call{call("w", "weather", `{"city":"Oslo"}`), call("q", "ask_user", `{}`), call("r", "rm", `{}`)}}},
			{reply: &agent.Reply{Text: "Done."}},
		}}
		answered := make(chan error, 1)
		l := agent.New(m, agent.WithHooks(hooks), agent.WithSuspended(func(ctx context.Context, s *toolkit.Session, r toolkit.Result) error {
			add("suspended " + r.Call.ID)
			go func() { answered <- s.Submit(r.Call.ID, []events.Part{events.Text("yes")}, nil) }()
			return nil
		}))
		if _, err := l.Run(ctx, sess, agent.NewConversation("", "Go")); err != nil {
			t.Fatal(err)
		}
		if err := <-answered; err != nil {
			t.Fatal(err)
		}
		got := strings.Join(log, "\n")
		if !strings.HasPrefix(got, "batch start 1\n") || !strings.HasSuffix(got, "batch end 1: 3 results") ||
			strings.Count(got, "call end") != 3 || !strings.Contains(got, "call end r denied") || !strings.Contains(got, "call end w success") ||
			!strings.Contains(got, "suspended q\n") || strings.Index(got, "suspended q") > strings.Index(got, "call end q success") {
			t.Fatalf("hooks:\n%s", got)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		log = nil
		sess, _ := tk.Session("around-cancelled")
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() { <-running; cancel() }()
		m := &script{steps: []step{{reply: &agent.Reply{Calls: []toolkit.Call{call("w", "weather", `{"city":"Oslo"}`), call("s", "slow", `{}`), call("s2", "slow", `{}`)}}}}}
		if _, err := agent.New(m, agent.WithHooks(hooks)).Run(runCtx, sess, agent.NewConversation("", "Go")); !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v", err)
		}
		got := strings.Join(log, "\n")
		if strings.Count(got, "call end") != 3 || !strings.Contains(got, "call end s interrupted") || !strings.Contains(got, "call end s2 interrupted") ||
			!strings.HasSuffix(got, "batch end 1: 3 results") || strings.Count(got, "batch end") != 1 {
			t.Fatalf("hooks:\n%s", got)
		}
	})
}

// Spring AI's returnDirect (every call of the batch is return-direct,
// whether or not it succeeded) is a BatchEnd hook away; by default a
// failed call goes back to the model (docs/seeds.md says why).
func TestHooksReturnDirectAsSpringAI(t *testing.T) {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "report", ReturnDirect: true},
		func(ctx context.Context, in struct {
			Year int `json:"year"`
		}) (string, error) {
			if in.Year > 2026 {
				return "", fmt.Errorf("no report for %d yet", in.Year)
			}
			return fmt.Sprintf("The %d report.", in.Year), nil
		}))
	springAI := agent.Hooks{BatchEnd: func(ctx context.Context, run *agent.RunInfo, results []toolkit.Result, stop *toolkit.Stop) {
		if stop.Reason != "" {
			return
		}
		for _, r := range results {
			if t, ok := run.Session().Toolkit().Tool(r.Call.Name); !ok || !t.Spec().ReturnDirect {
				return
			}
		}
		*stop = toolkit.Stop{Reason: toolkit.StopReturnDirect}
	}}
	batch := step{reply: &agent.Reply{Calls: []toolkit.Call{call("a", "report", `{"year":2025}`), call("b", "report", `{"year":2030}`)}}}
	for _, tc := range []struct {
		name   string
		opts   []agent.Option
		end    agent.End
		answer string
		asked  int
	}{
		{"default: the failure goes back to the model", nil, agent.EndAnswer, "Only 2025 exists.", 2},
		{"Spring AI: every call is return-direct", []agent.Option{agent.WithHooks(springAI)}, agent.EndStopped, "The 2025 report.\n\nError: no report for 2030 yet", 1},
	} {
		sess, _ := tk.Session("rd")
		m := &script{steps: []step{batch, {reply: &agent.Reply{Text: "Only 2025 exists."}}}}
		out, err := agent.New(m, tc.opts...).Run(ctx, sess, agent.NewConversation("", "Reports?"))
		if err != nil {
			t.Fatal(err)
		}
		if out.End != tc.end || out.Answer != tc.answer || len(m.requests()) != tc.asked {
			t.Errorf("%s: %s %q after %d requests", tc.name, out.End, out.Answer, len(m.requests()))
		}
	}
}
