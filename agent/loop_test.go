package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

type cityIn struct {
	City string `json:"city"`
}

func weatherTool(t *testing.T) *toolkit.Tool {
	t.Helper()
	return toolkit.MustTool(toolkit.Spec{Name: "weather", Description: "Weather in a city.", ConcurrencySafe: true},
		func(ctx context.Context, in cityIn) (string, error) { return "sunny in " + in.City, nil })
}

// A streamed turn with two parallel calls, then an answer: the
// conversation, the outcome and the events a UI sees on NATS, in order.
func TestRunStreamsCallsAndAnswers(t *testing.T) {
	ctx := context.Background()
	tk, rec := record(t, "s1")
	if err := tk.Add(weatherTool(t)); err != nil {
		t.Fatal(err)
	}
	sess, _ := tk.Session("s1")
	m := &script{steps: []step{
		{
			chunks: []agent.Chunk{
				{Kind: agent.ChunkText, Text: "Let me "},
				{Kind: agent.ChunkText, Text: "check."},
				{Kind: agent.ChunkCall, Index: 0, CallID: "c1", Name: "weather"},
				{Kind: agent.ChunkArgs, Index: 0, Text: `{"ci`},
				{Kind: agent.ChunkCall, Index: 1, CallID: "c2", Name: "weather"},
				{Kind: agent.ChunkArgs, Index: 1, Text: `{"city":"Rome"}`},
				{Kind: agent.ChunkArgs, Index: 0, Text: `ty":"Oslo"}`},
			},
			reply: &agent.Reply{Text: "Let me check.", Calls: []toolkit.Call{call("c1", "weather", `{"city":"Oslo"}`), call("c2", "weather", `{"city":"Rome"}`)},
				Finish: agent.FinishToolCalls, Usage: agent.Usage{InputTokens: 10, OutputTokens: 5}},
		},
		{reply: &agent.Reply{Text: "Sunny in both.", Finish: agent.FinishStop, Usage: agent.Usage{InputTokens: 30, OutputTokens: 4}}},
	}}
	conv := agent.NewConversation("Be brief.", "Weather in Oslo and Rome?")
	out, err := agent.New(m, agent.WithName("scripted")).Run(ctx, sess, conv)
	if err != nil {
		t.Fatal(err)
	}
	if out.End != agent.EndAnswer || out.Answer != "Sunny in both." || out.Turns != 2 || len(out.Results) != 2 {
		t.Fatalf("outcome %+v", out)
	}
	if out.Usage != (agent.Usage{InputTokens: 40, OutputTokens: 9}) {
		t.Errorf("usage %+v, want the sum of the turns'", out.Usage)
	}
	if err := conv.Check(); err != nil {
		t.Fatal(err)
	}
	roles := ""
	for _, msg := range conv.Messages {
		roles += string(msg.Role) + " "
	}
	if roles != "user assistant tool tool assistant " {
		t.Fatalf("roles %q", roles)
	}
	if got := conv.Messages[2]; got.CallID != "c1" || got.Tool != "weather" || got.Text() != "sunny in Oslo" || got.IsError {
		t.Errorf("first tool message %+v", got)
	}
	reqs := m.requests()
	if len(reqs) != 2 || reqs[1].System != "Be brief." || len(reqs[1].Messages) != 4 || reqs[1].Messages[3].Text() != "sunny in Rome" {
		t.Fatalf("second request %+v", reqs)
	}
	if len(reqs[0].Tools) != 1 || reqs[0].Tools[0].Name != "weather" {
		t.Errorf("tools offered %+v", reqs[0].Tools)
	}

	evs := rec.waitFor(t, agent.EventAnswer)
	var text string
	args := map[string]string{}
	started := map[string]bool{}
	var order []string
	for _, ev := range evs {
		switch ev.Type {
		case agent.EventText:
			text += body[agent.TextDelta](t, ev).Delta
		case agent.EventArgs:
			d := body[agent.ArgsDelta](t, ev)
			if started[d.Call] {
				t.Errorf("arguments of %s after its start event", d.Call)
			}
			if d.Tool != "weather" || d.Turn != 1 {
				t.Errorf("args delta %+v", d)
			}
			args[d.Call] += d.Delta
		case events.TypeStart:
			started[ev.Call] = true
		}
		if ev.Call == "" && ev.Type != agent.EventText && ev.Type != agent.EventArgs {
			order = append(order, string(ev.Type))
		}
	}
	if text != "Let me check.Sunny in both." {
		t.Errorf("text deltas add up to %q", text)
	}
	if args["c1"] != `{"city":"Oslo"}` || args["c2"] != `{"city":"Rome"}` {
		t.Errorf("argument deltas add up to %q", args)
	}
	if got := strings.Join(order, " "); got != "turn_start turn_end turn_start turn_end answer" {
		t.Errorf("session events %q\n%s", got, describe(evs))
	}
	for _, ev := range evs {
		if ev.Type == agent.EventAnswer {
			a := body[agent.Answer](t, ev)
			if a.Text != "Sunny in both." || a.End != agent.EndAnswer || a.Turns != 2 || a.Calls != 2 {
				t.Errorf("answer event %+v", a)
			}
		}
		if ev.Type == agent.EventTurnEnd {
			if te := body[agent.TurnEnd](t, ev); te.Turn == 1 && (len(te.Calls) != 2 || te.Model != "scripted" || te.Finish != agent.FinishToolCalls) {
				t.Errorf("turn_end %+v", te)
			}
		}
	}
}

// A model that does not stream still gives UIs the deltas (one each), and
// calls without ids or arguments get them before anything sees them.
func TestRunNonStreamingModelAndMissingIDs(t *testing.T) {
	ctx := context.Background()
	tk, rec := record(t, "s2")
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "now"}, func(ctx context.Context, _ struct{}) (string, error) { return "noon", nil }))
	sess, _ := tk.Session("s2")
	m := &script{steps: []step{
		{reply: &agent.Reply{Text: "Checking.", Calls: []toolkit.Call{call("", "now", ""), call("dup", "now", "{}"), call("dup", "now", " ")}}},
		{reply: &agent.Reply{Text: "It is noon."}},
	}}
	conv := agent.NewConversation("", "Time?")
	if _, err := agent.New(m).Run(ctx, sess, conv); err != nil {
		t.Fatal(err)
	}
	if err := conv.Check(); err != nil {
		t.Fatal(err)
	}
	calls := conv.Messages[1].Calls
	if calls[0].ID == "" || calls[1].ID != "dup" || calls[2].ID == "dup" || calls[2].ID == calls[0].ID {
		t.Fatalf("ids %q %q %q", calls[0].ID, calls[1].ID, calls[2].ID)
	}
	for i, c := range calls {
		if string(c.Args) != "{}" {
			t.Errorf("call %d args %q, want {}", i, c.Args)
		}
		if tm := conv.Messages[2+i]; tm.CallID != c.ID || tm.Text() != "noon" {
			t.Errorf("tool message %d: %+v for call %s", i, tm, c.ID)
		}
	}
	evs := rec.waitFor(t, agent.EventAnswer)
	var texts []string
	argCalls := map[string]int{}
	for _, ev := range evs {
		switch ev.Type {
		case agent.EventText:
			texts = append(texts, body[agent.TextDelta](t, ev).Delta)
		case agent.EventArgs:
			d := body[agent.ArgsDelta](t, ev)
			argCalls[d.Call]++
			if d.Delta != "{}" {
				t.Errorf("args delta %+v", d)
			}
		}
	}
	if strings.Join(texts, "|") != "Checking.|It is noon." {
		t.Errorf("text deltas %q", texts)
	}
	for _, c := range calls {
		if argCalls[c.ID] != 1 {
			t.Errorf("call %s: %d args deltas, want 1 (under its final id)", c.ID, argCalls[c.ID])
		}
	}
}

// Ids the toolkit cannot carry (too long, control characters, not
// UTF-8) are the provider's, not the model's, to get right: the loop
// gives such calls ids of their own so that they run, instead of failing
// them with an error the model could never fix.
func TestRunUnusableCallIDs(t *testing.T) {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Add(weatherTool(t))
	sess, _ := tk.Session("x")
	long := strings.Repeat("a", toolkit.MaxCallIDLen+1)
	m := &script{steps: []step{
		{reply: &agent.Reply{Calls: []toolkit.Call{
			call(long, "weather", `{"city":"Oslo"}`),
			call("call\n1", "weather", `{"city":"Rome"}`),
			call("call_\xff", "weather", `{"city":"Bern"}`),
			call("call_ok", "weather", `{"city":"Oslo"}`)}}},
		{reply: &agent.Reply{Text: "Sunny."}},
	}}
	conv := agent.NewConversation("", "Weather?")
	out, err := agent.New(m).Run(ctx, sess, conv)
	if err != nil {
		t.Fatal(err)
	}
	if err := conv.Check(); err != nil {
		t.Fatal(err)
	}
	calls := conv.Messages[1].Calls
	if calls[3].ID != "call_ok" {
		t.Errorf("a usable id was changed: %q", calls[3].ID)
	}
	for i, r := range out.Results {
		if r.IsError() || r.Call.ID != calls[i].ID || !strings.HasPrefix(r.Text(), "sunny in ") {
			t.Errorf("call %d (id %.20q): %s %q", i, calls[i].ID, r.State, r.Text())
		}
	}
}

// TestRunIDsReusedAcrossTurns: a server that numbers calls per reply
// (call_0 every turn). Every call of the conversation must have an id of
// its own, answered by its own tool message: whatever keys by call id (a
// durable store, a UI, Anthropic's history check) takes two calls with one
// id for one call. Ids not used before are kept.
func TestRunIDsReusedAcrossTurns(t *testing.T) {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Add(weatherTool(t))
	sess, _ := tk.Session("x")
	m := &script{steps: []step{
		{reply: &agent.Reply{Calls: []toolkit.Call{call("call_0", "weather", `{"city":"Oslo"}`), call("call_1", "weather", `{"city":"Bern"}`)}}},
		{reply: &agent.Reply{Calls: []toolkit.Call{call("call_0", "weather", `{"city":"Rome"}`), call("call_7", "weather", `{"city":"Pisa"}`)}}},
		{reply: &agent.Reply{Text: "Sunny everywhere."}},
	}}
	conv := agent.NewConversation("", "Weather?")
	if _, err := agent.New(m).Run(ctx, sess, conv); err != nil {
		t.Fatal(err)
	}
	if err := conv.Check(); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{} // id -> city asked
	answers := map[string]string{}
	for _, msg := range conv.Messages {
		for _, c := range msg.Calls {
			if city, dup := ids[c.ID]; dup {
				t.Fatalf("id %q names two calls of the conversation (%s and %s)", c.ID, city, c.Args)
			}
			ids[c.ID] = string(c.Args)
		}
		if msg.Role == agent.RoleTool {
			answers[msg.CallID] = toolkit.Result{Content: msg.Content}.Text()
		}
	}
	if len(ids) != 4 || len(answers) != 4 {
		t.Fatalf("%d calls, %d answers, want 4 each", len(ids), len(answers))
	}
	for id, args := range ids {
		var in struct{ City string }
		json.Unmarshal([]byte(args), &in)
		if answers[id] != "sunny in "+in.City {
			t.Errorf("call %s (%s) answered %q", id, args, answers[id])
		}
	}
	turn2 := conv.Messages[len(conv.Messages)-4].Calls // assistant, tool, tool, assistant's answer
	if turn2[0].ID == "call_0" || turn2[1].ID != "call_7" {
		t.Errorf("turn 2's ids: %q, %q (want call_0 replaced, call_7 kept)", turn2[0].ID, turn2[1].ID)
	}
}

// Each turn offers the tools the session has now: reset_tools in one
// turn changes the next turn's list.
func TestRunRereadsDefinitionsEachTurn(t *testing.T) {
	ctx := context.Background()
	tk, _ := record(t, "s3")
	tk.Add(weatherTool(t))
	gm, err := groups.Install(tk)
	if err != nil {
		t.Fatal(err)
	}
	if err := gm.Add(groups.Group{Name: "forecast", Description: "Weather.", Tools: []string{"weather"}}); err != nil {
		t.Fatal(err)
	}
	sess, _ := tk.Session("s3")
	m := &script{steps: []step{
		{reply: &agent.Reply{Calls: []toolkit.Call{call("g", groups.MetaTool, `{"forecast":true}`)}}},
		{reply: &agent.Reply{Calls: []toolkit.Call{call("w", "weather", `{"city":"Oslo"}`)}}},
		{reply: &agent.Reply{Text: "Sunny."}},
	}}
	out, err := agent.New(m).Run(ctx, sess, agent.NewConversation("", "Weather?"))
	if err != nil {
		t.Fatal(err)
	}
	names := func(defs []toolkit.Definition) string {
		var s []string
		for _, d := range defs {
			s = append(s, d.Name)
		}
		return strings.Join(s, ",")
	}
	reqs := m.requests()
	if names(reqs[0].Tools) != "reset_tools" || names(reqs[1].Tools) != "weather,reset_tools" {
		t.Fatalf("tools per turn: %q then %q", names(reqs[0].Tools), names(reqs[1].Tools))
	}
	if out.Results[1].Text() != "sunny in Oslo" {
		t.Errorf("weather result %q", out.Results[1].Text())
	}
}

// Rate limits and broken streams are retried after the wait the server
// asks; the partial stream is declared void by a model_retry event.
func TestRunRetries(t *testing.T) {
	ctx := context.Background()
	tk, rec := record(t, "s4")
	sess, _ := tk.Session("s4")
	limited := &agent.APIError{Provider: "test", StatusCode: 429, Message: "slow down", RetryAfter: 60 * time.Millisecond, Retryable: true}
	cut := &agent.APIError{Provider: "test", Message: "stream ended early", Retryable: true}
	m := &script{steps: []step{
		{err: limited},
		{chunks: []agent.Chunk{{Kind: agent.ChunkText, Text: "Hal"}}, err: cut},
		{reply: &agent.Reply{Text: "Hello."}},
	}}
	start := time.Now()
	out, err := agent.New(m, agent.WithRetry(agent.RetryPolicy{Attempts: 3, Backoff: time.Millisecond, MaxWait: time.Second})).
		Run(ctx, sess, agent.NewConversation("", "Hi"))
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 60*time.Millisecond {
		t.Errorf("took %v: the Retry-After of 60ms was not honoured", took)
	}
	if out.Answer != "Hello." || len(m.requests()) != 3 {
		t.Fatalf("answer %q after %d requests", out.Answer, len(m.requests()))
	}
	evs := rec.waitFor(t, agent.EventAnswer)
	var retries []agent.Retry
	for _, ev := range evs {
		if ev.Type == agent.EventRetry {
			retries = append(retries, body[agent.Retry](t, ev))
		}
	}
	if len(retries) != 2 || retries[0].Attempt != 1 || retries[0].WaitMS < 60 || !strings.Contains(retries[0].Error, "slow down") ||
		retries[1].Attempt != 2 || !strings.Contains(retries[1].Error, "stream ended early") {
		t.Fatalf("retry events %+v", retries)
	}
}

func TestRunRetryLimits(t *testing.T) {
	ctx := context.Background()
	policy := agent.WithRetry(agent.RetryPolicy{Attempts: 3, Backoff: time.Millisecond, MaxWait: time.Second})
	cases := []struct {
		name     string
		steps    []step
		requests int
		want     string
	}{
		{"not retryable", []step{{err: &agent.APIError{Provider: "test", StatusCode: 401, Message: "bad key"}}}, 1, "test: HTTP 401 Unauthorized: bad key"},
		{"plain error", []step{{err: errors.New("boom")}}, 1, "boom"},
		{"waits too long", []step{{err: &agent.APIError{Provider: "test", StatusCode: 429, RetryAfter: time.Hour, Retryable: true}}}, 1, "asks to wait 1h0m0s, more than"},
		{"attempts spent", []step{
			{err: &agent.APIError{Provider: "test", StatusCode: 503, Retryable: true}},
			{err: &agent.APIError{Provider: "test", StatusCode: 503, Retryable: true}},
			{err: &agent.APIError{Provider: "test", StatusCode: 503, Retryable: true}},
		}, 3, "(after 3 attempts)"},
		{"nil reply", []step{{}}, 1, "returned no reply and no error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tk, rec := record(t, "s5")
			sess, _ := tk.Session("s5")
			m := &script{steps: c.steps}
			conv := agent.NewConversation("", "Hi")
			out, err := agent.New(m, policy).Run(ctx, sess, conv)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one with %q", err, c.want)
			}
			if len(m.requests()) != c.requests || out.End != agent.EndError {
				t.Errorf("%d requests (want %d), end %q", len(m.requests()), c.requests, out.End)
			}
			if len(conv.Messages) != 1 {
				t.Errorf("the conversation grew to %d messages on a failed turn", len(conv.Messages))
			}
			ev := rec.waitFor(t, agent.EventError)
			if re := body[agent.RunError](t, ev[len(ev)-1]); !strings.Contains(re.Error, c.want) || re.Canceled {
				t.Errorf("run_error %+v", re)
			}
		})
	}
	t.Run("API error unwraps", func(t *testing.T) {
		tk := toolkit.New()
		defer tk.Close(ctx)
		sess, _ := tk.Session("x")
		sdkErr := errors.New("sdk says 401")
		_, err := agent.New(&script{steps: []step{{err: &agent.APIError{Provider: "p", StatusCode: 401, Err: sdkErr}}}}).Run(ctx, sess, agent.NewConversation("", "Hi"))
		var api *agent.APIError
		if !errors.As(err, &api) || api.StatusCode != 401 || !errors.Is(err, sdkErr) {
			t.Fatalf("error %v does not unwrap to the APIError and the SDK's error", err)
		}
	})
}

// Cancelling while the model waits to be retried ends the run at once.
func TestRunCancelDuringRetryWait(t *testing.T) {
	tk := toolkit.New()
	defer tk.Close(context.Background())
	sess, _ := tk.Session("x")
	ctx, cancel := context.WithCancel(context.Background())
	m := &script{steps: []step{{err: &agent.APIError{Provider: "p", StatusCode: 429, RetryAfter: 30 * time.Second, Retryable: true}}}}
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := agent.New(m).Run(ctx, sess, agent.NewConversation("", "Hi"))
	if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("error %v after %v", err, time.Since(start))
	}
}

func TestRunMaxTurns(t *testing.T) {
	ctx := context.Background()
	tk, rec := record(t, "s6")
	tk.Add(weatherTool(t))
	sess, _ := tk.Session("s6")
	var steps []step
	for i := 0; i < 5; i++ {
		steps = append(steps, step{reply: &agent.Reply{Calls: []toolkit.Call{call("", "weather", `{"city":"Oslo"}`)}}})
	}
	m := &script{steps: steps}
	conv := agent.NewConversation("", "Loop forever")
	out, err := agent.New(m, agent.WithMaxTurns(3)).Run(ctx, sess, conv)
	if !errors.Is(err, agent.ErrMaxTurns) || out.End != agent.EndMaxTurns || out.Turns != 3 || len(m.requests()) != 3 {
		t.Fatalf("err %v, outcome %+v, %d requests", err, out, len(m.requests()))
	}
	if err := conv.Check(); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, agent.EventError)
}

// A return-direct tool's result is the answer; the model is not asked
// again.
func TestRunReturnDirect(t *testing.T) {
	ctx := context.Background()
	tk, rec := record(t, "s7")
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "final_report", ReturnDirect: true},
		func(ctx context.Context, _ struct{}) (string, error) { return "The report.", nil }))
	sess, _ := tk.Session("s7")
	m := &script{steps: []step{{reply: &agent.Reply{Calls: []toolkit.Call{call("r", "final_report", "{}")}}}}}
	out, err := agent.New(m).Run(ctx, sess, agent.NewConversation("", "Report"))
	if err != nil {
		t.Fatal(err)
	}
	if out.End != agent.EndStopped || out.Stop == nil || out.Stop.Reason != toolkit.StopReturnDirect || out.Answer != "The report." {
		t.Fatalf("outcome %+v", out)
	}
	evs := rec.waitFor(t, agent.EventAnswer)
	a := body[agent.Answer](t, evs[len(evs)-1])
	if a.End != agent.EndStopped || a.Stop == nil || a.Stop.Reason != toolkit.StopReturnDirect || a.Text != "The report." {
		t.Errorf("answer event %+v", a)
	}
}

// An interceptor that ends the run (a fatal abort) stops the loop after
// the batch, with its detail as the answer.
func TestRunInterceptorStops(t *testing.T) {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Add(weatherTool(t))
	tk.Use(toolkit.Interceptor{Name: "budget", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		inv.StopLoop("budget", "the budget is spent")
		return toolkit.Failure(events.StateError, errors.New("over budget"))
	}})
	sess, _ := tk.Session("x")
	m := &script{steps: []step{{reply: &agent.Reply{Calls: []toolkit.Call{call("w", "weather", `{"city":"Oslo"}`)}}}}}
	conv := agent.NewConversation("", "Weather")
	out, err := agent.New(m).Run(ctx, sess, conv)
	if err != nil {
		t.Fatal(err)
	}
	if out.End != agent.EndStopped || out.Stop.Reason != "budget" || out.Answer != "the budget is spent" {
		t.Fatalf("outcome %+v", out)
	}
	if last := conv.Messages[len(conv.Messages)-1]; last.Role != agent.RoleTool || !last.IsError || !strings.Contains(last.Text(), "over budget") {
		t.Errorf("the failed call's message %+v", last)
	}
}

// Cancelling while calls run interrupts them; the conversation keeps
// their (interrupted) results so that it can be sent again.
func TestRunCancelDuringCalls(t *testing.T) {
	tk, rec := record(t, "s8")
	running := make(chan struct{})
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "slow"}, func(ctx context.Context, _ struct{}) (string, error) {
		close(running)
		<-ctx.Done()
		return "", ctx.Err()
	}))
	sess, _ := tk.Session("s8")
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-running; cancel() }()
	m := &script{steps: []step{{reply: &agent.Reply{Calls: []toolkit.Call{call("s", "slow", "{}")}}}}}
	conv := agent.NewConversation("", "Go slow")
	out, err := agent.New(m).Run(ctx, sess, conv)
	if !errors.Is(err, context.Canceled) || out.End != agent.EndError {
		t.Fatalf("err %v, end %q", err, out.End)
	}
	if err := conv.Check(); err != nil {
		t.Fatal(err)
	}
	if last := conv.Messages[len(conv.Messages)-1]; last.CallID != "s" || !last.IsError {
		t.Errorf("the interrupted call's message %+v", last)
	}
	evs := rec.waitFor(t, agent.EventError)
	if re := body[agent.RunError](t, evs[len(evs)-1]); !re.Canceled || re.Turn != 1 {
		t.Errorf("run_error %+v", re)
	}
}

// Suspended calls go to the handler as they suspend; answering them lets
// the run go on. A handler that fails cancels the batch.
func TestRunSuspended(t *testing.T) {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	ext, err := toolkit.NewExternalTool(toolkit.Spec{Name: "ask_user", Description: "Ask the user."}, json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tk.Add(ext)
	sess, _ := tk.Session("x")
	m := &script{steps: []step{
		{reply: &agent.Reply{Calls: []toolkit.Call{call("q1", "ask_user", `{"q":"color?"}`)}}},
		{reply: &agent.Reply{Text: "Blue it is."}},
	}}
	var seen []string
	l := agent.New(m, agent.WithSuspended(func(ctx context.Context, s *toolkit.Session, r toolkit.Result) error {
		seen = append(seen, r.Call.ID)
		return s.Submit(r.Call.ID, []events.Part{events.Text("blue")}, nil)
	}))
	conv := agent.NewConversation("", "Pick a color")
	out, err := l.Run(ctx, sess, conv)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != "q1" || out.Results[0].Text() != "blue" || conv.Messages[2].Text() != "blue" {
		t.Fatalf("seen %q, results %+v", seen, out.Results)
	}

	m2 := &script{steps: []step{{reply: &agent.Reply{Calls: []toolkit.Call{call("q2", "ask_user", `{"q":"size?"}`)}}}}}
	l2 := agent.New(m2, agent.WithSuspended(func(ctx context.Context, s *toolkit.Session, r toolkit.Result) error {
		return errors.New("nobody to ask")
	}))
	conv2 := agent.NewConversation("", "Pick a size")
	done := make(chan error, 1)
	go func() { _, err := l2.Run(ctx, sess, conv2); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "call q2 (ask_user) suspended: nobody to ask") {
			t.Fatalf("error %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run hangs after its suspension handler failed")
	}
	if err := conv2.Check(); err != nil {
		t.Fatal(err)
	}
	if len(sess.Suspended()) != 0 {
		t.Errorf("calls still suspended: %+v", sess.Suspended())
	}
}

// The loop refuses what it cannot answer before asking the model.
func TestRunRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	sess, _ := tk.Session("x")
	m := &script{}
	l := agent.New(m)
	bad := &agent.Conversation{Messages: []agent.Message{{Role: agent.RoleTool, CallID: "nope"}}}
	for name, c := range map[string]*agent.Conversation{"empty": {}, "invalid": bad, "nil": nil} {
		if _, err := l.Run(ctx, sess, c); err == nil {
			t.Errorf("%s conversation: no error", name)
		}
	}
	if _, err := l.Run(ctx, nil, agent.NewConversation("", "hi")); err == nil {
		t.Error("nil session: no error")
	}
	if len(m.requests()) != 0 {
		t.Errorf("the model was asked %d times", len(m.requests()))
	}
}

// The loop ends after a batch that says so: a return-direct batch's
// results are the answer (every one of them, in call order) and the model
// is not asked again; a batch with another call goes back to the model; a
// call limit that ends the run ends it with its message.
func TestRunHonoursToolkitStop(t *testing.T) {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	weather := toolkit.MustTool(toolkit.Spec{Name: "weather", ReturnDirect: true, ConcurrencySafe: true}, func(_ context.Context, in cityIn) (string, error) {
		return "Sunny in " + in.City, nil
	})
	search := toolkit.MustTool(toolkit.Spec{Name: "search", ReadOnly: true}, func(context.Context, struct{}) (string, error) { return "found", nil })
	if err := tk.Add(weather, search); err != nil {
		t.Fatal(err)
	}
	if err := tk.Use(interceptors.CallLimits(interceptors.PerSession(1, "search"), interceptors.EndRun())); err != nil {
		t.Fatal(err)
	}
	answer := step{reply: &agent.Reply{Text: "the model's own answer"}}
	calls := func(cs ...toolkit.Call) step { return step{reply: &agent.Reply{Calls: cs}} }
	for _, tc := range []struct {
		name   string
		steps  []step
		answer string
		end    agent.End
		asked  int
	}{
		{"return direct", []step{calls(call("1", "weather", `{"city":"Oslo"}`), call("2", "weather", `{"city":"Rome"}`))},
			"Sunny in Oslo\n\nSunny in Rome", agent.EndStopped, 1},
		{"not all return direct", []step{calls(call("1", "weather", `{"city":"Oslo"}`), call("2", "search", `{}`)), answer},
			"the model's own answer", agent.EndAnswer, 2},
		{"call limit ends the run", []step{calls(call("1", "search", `{}`)), calls(call("2", "search", `{}`))},
			`the run was stopped: calls of "search" are limited to 1 per session`, agent.EndStopped, 2},
	} {
		sess, err := tk.Session("loop-" + strings.ReplaceAll(tc.name, " ", "-"))
		if err != nil {
			t.Fatal(err)
		}
		m := &script{steps: tc.steps}
		out, err := agent.New(m).Run(ctx, sess, agent.NewConversation("", "what now?"))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if out.Answer != tc.answer || out.End != tc.end || len(m.requests()) != tc.asked {
			t.Errorf("%s: %s answer %q after %d model turns, want %s %q after %d", tc.name, out.End, out.Answer, len(m.requests()), tc.end, tc.answer, tc.asked)
		}
	}
}

// Batch hooks compose: a UI's and a store's both see every batch.
func TestRunBatchHooksCompose(t *testing.T) {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Add(weatherTool(t))
	sess, _ := tk.Session("x")
	m := &script{steps: []step{
		{reply: &agent.Reply{Calls: []toolkit.Call{call("w", "weather", `{"city":"Oslo"}`)}}},
		{reply: &agent.Reply{Text: "Sunny."}},
	}}
	var seen []string
	hook := func(name string) agent.Option {
		return agent.WithHooks(agent.Hooks{BatchStart: func(ctx context.Context, run *agent.RunInfo, b *toolkit.Batch) {
			seen = append(seen, fmt.Sprintf("%s:%d", name, run.Turn()))
		}})
	}
	if _, err := agent.New(m, hook("ui"), hook("store")).Run(ctx, sess, agent.NewConversation("", "Weather?")); err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, " ") != "ui:1 store:1" {
		t.Fatalf("hooks called: %q", seen)
	}
}
