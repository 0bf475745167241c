package agent_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// bigTool returns size bytes of text for any call.
func bigTool(size int) *toolkit.Tool {
	return toolkit.MustTool(toolkit.Spec{Name: "fetch", Description: "Fetches a page.", ConcurrencySafe: true},
		func(ctx context.Context, in struct {
			Page int `json:"page"`
		}) (string, error) {
			return fmt.Sprintf("page %d: ", in.Page) + strings.Repeat("x", size), nil
		})
}

// pager is a scripted model that fetches one page per turn for turns
// turns, then answers; it keeps a copy of every request's messages.
type pager struct {
	turns int
	mu    sync.Mutex
	reqs  [][]agent.Message
}

func (p *pager) Generate(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
	p.mu.Lock()
	p.reqs = append(p.reqs, slices.Clone(req.Messages))
	n := len(p.reqs)
	p.mu.Unlock()
	if n > p.turns {
		return &agent.Reply{Text: "read them all"}, nil
	}
	return &agent.Reply{Text: fmt.Sprintf("page %d", n), Calls: []toolkit.Call{call(fmt.Sprintf("c%d", n), "fetch", fmt.Sprintf(`{"page":%d}`, n))}}, nil
}

func (p *pager) requests() [][]agent.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.reqs)
}

func roles(msgs []agent.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(string(m.Role)[:1])
	}
	return b.String()
}

// KeepTurns sends the task and the last N turns, a call always with its
// result; the stored conversation stays whole, and context_cut (checked
// against the events schema on a real NATS server) says what was left out.
func TestContextPolicyKeepsLastTurns(t *testing.T) {
	ctx := context.Background()
	tk, rec := record(t, "keep")
	tk.Add(bigTool(10))
	sess, _ := tk.Session("keep")
	m := &pager{turns: 4}
	conv := agent.NewConversation("sys", "read the pages")
	out, err := agent.New(m, agent.WithContextPolicy(agent.ContextPolicy{KeepTurns: 2})).Run(ctx, sess, conv)
	if err != nil || out.Turns != 5 {
		t.Fatalf("run: %v %+v", err, out)
	}
	if got := roles(conv.Messages); got != "uatatatata" {
		t.Fatalf("stored conversation %q, want it whole", got)
	}
	reqs := m.requests()
	want := []string{"u", "uat", "uatat", "uatat", "uatat"}
	for i, r := range reqs {
		if roles(r) != want[i] {
			t.Errorf("request %d sends %q, want %q", i+1, roles(r), want[i])
		}
		if err := (&agent.Conversation{Messages: r}).Check(); err != nil {
			t.Errorf("request %d: %v", i+1, err)
		}
	}
	if last := reqs[4]; last[1].Calls[0].ID != "c3" || last[4].CallID != "c4" {
		t.Errorf("last request keeps %+v, want turns 3 and 4", last)
	}
	rec.waitFor(t, agent.EventAnswer)
	cuts := rec.OfType(agent.EventContextCut)
	if len(cuts) != 2 {
		t.Fatalf("%d context_cut events, want 2 (turns 4 and 5):\n%s", len(cuts), describe(rec.All()))
	}
	c := body[agent.ContextCut](t, cuts[1])
	if c.Turn != 5 || c.Messages != 9 || c.Sent != 5 || c.Dropped != 4 || c.Cleared != 0 || c.BytesAfter >= c.BytesBefore {
		t.Errorf("context_cut %+v", c)
	}
	if first := body[agent.ContextCut](t, cuts[0]); fmt.Sprint(first.DroppedCalls, c.DroppedCalls) != "[c1] [c2]" {
		t.Errorf("dropped_calls %v then %v, want each call once: [c1] then [c2]", first.DroppedCalls, c.DroppedCalls)
	}
	evs := rec.All()
	if i := slices.Index(evs, cuts[0]); i == 0 || evs[i-1].Type != agent.EventTurnStart {
		t.Errorf("context_cut does not follow turn_start:\n%s", describe(evs))
	}
}

// Past the budget, old tool results are cleared first, oldest first, the
// newest kept whole; a cleared result keeps its call and says its size.
func TestContextPolicyClearsOldResultsFirst(t *testing.T) {
	ctx := context.Background()
	tk, rec := record(t, "clear")
	tk.Add(bigTool(1000))
	sess, _ := tk.Session("clear")
	m := &pager{turns: 4}
	conv := agent.NewConversation("sys", "read the pages")
	_, err := agent.New(m, agent.WithContextPolicy(agent.ContextPolicy{MaxBytes: 2500})).Run(ctx, sess, conv)
	if err != nil {
		t.Fatal(err)
	}
	last := m.requests()[4]
	if got := roles(last); got != "uatatatat" {
		t.Fatalf("last request %q, want every turn (clearing is enough)", got)
	}
	for i, want := range []bool{true, true, false, false} { // results of c1..c4
		msg := last[2+2*i]
		cleared := strings.HasPrefix(msg.Text(), "[tool result cleared to fit the context: 1008 bytes]")
		if cleared != want || msg.CallID != fmt.Sprintf("c%d", i+1) || msg.Tool != "fetch" {
			t.Errorf("result of c%d: %q (cleared %v, want %v)", i+1, msg.Text()[:min(60, len(msg.Text()))], cleared, want)
		}
	}
	if n := agent.MessageBytes(last...); n > 2500 {
		t.Errorf("last request holds %d bytes, budget 2500", n)
	}
	if conv.Messages[2].Text() != "page 1: "+strings.Repeat("x", 1000) {
		t.Errorf("stored result cleared: %q", conv.Messages[2].Text())
	}
	rec.waitFor(t, agent.EventAnswer)
	var newly []string
	for _, ev := range rec.OfType(agent.EventContextCut) {
		c := body[agent.ContextCut](t, ev)
		if c.Budget != 2500 || c.BytesAfter > 2500 || c.Dropped != 0 {
			t.Errorf("context_cut %+v", c)
		}
		newly = append(newly, c.ClearedCalls...)
	}
	if !slices.Equal(newly, []string{"c1", "c2"}) {
		t.Errorf("cleared_calls over the run %v, want each call once: [c1 c2]", newly)
	}
}

// When clearing is not enough, whole old turns go; the task stays first.
// MaxTokens holds the estimate (bytes/4) to its bound.
func TestContextPolicyDropsTurnsPastTheBudget(t *testing.T) {
	ctx := context.Background()
	tk, _ := record(t, "drop")
	tk.Add(bigTool(2000))
	sess, _ := tk.Session("drop")
	m := &pager{turns: 30}
	conv := agent.NewConversation("sys", "read the pages")
	_, err := agent.New(m, agent.WithMaxTurns(40), agent.WithContextPolicy(agent.ContextPolicy{MaxTokens: 800})).Run(ctx, sess, conv)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range m.requests() {
		if n := agent.EstimateTokens(r...); n > 800 {
			t.Errorf("request %d: %d tokens estimated, bound 800", i+1, n)
		}
		if r[0].Text() != "read the pages" {
			t.Errorf("request %d does not begin with the task: %+v", i+1, r[0])
		}
	}
	last := m.requests()[30]
	if len(last) >= len(conv.Messages) || last[len(last)-1].CallID != "c30" || !strings.HasPrefix(last[len(last)-1].Text(), "page 30") {
		t.Errorf("last request: %d of %d messages, newest %+v", len(last), len(conv.Messages), last[len(last)-1])
	}
	if len(conv.Messages) != 62 {
		t.Errorf("stored conversation has %d messages, want 62", len(conv.Messages))
	}
}

// The summary of what was dropped is sent after the task and asked for
// only when what is dropped changes; a failing summary falls back to the
// plain cut and the event says why.
func TestContextPolicySummarizes(t *testing.T) {
	ctx := context.Background()
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprint("fail=", fail), func(t *testing.T) {
			session := fmt.Sprint("sum", fail)
			tk, rec := record(t, session)
			tk.Add(bigTool(10))
			sess, _ := tk.Session(session)
			m := &pager{turns: 4}
			var asked [][]string
			summarize := func(ctx context.Context, cut []agent.Message) (string, error) {
				var ids []string
				for _, msg := range cut {
					if msg.Role == agent.RoleTool {
						ids = append(ids, msg.CallID)
					}
				}
				asked = append(asked, ids)
				if fail {
					return "", errors.New("the summarizer is down")
				}
				return "Earlier: read " + strings.Join(ids, ", "), nil
			}
			conv := agent.NewConversation("sys", "read the pages")
			_, err := agent.New(m, agent.WithContextPolicy(agent.ContextPolicy{KeepTurns: 2, Summarize: summarize})).Run(ctx, sess, conv)
			if err != nil {
				t.Fatal(err)
			}
			if want := [][]string{{"c1"}, {"c1", "c2"}}; fmt.Sprint(asked) != fmt.Sprint(want) {
				t.Errorf("Summarize asked for %v, want %v (once per new cut)", asked, want)
			}
			last := m.requests()[4]
			wantRoles := "uuatat"
			if fail {
				wantRoles = "uatat"
			}
			if roles(last) != wantRoles {
				t.Fatalf("last request %q, want %q", roles(last), wantRoles)
			}
			if !fail && last[1].Text() != "Earlier: read c1, c2" {
				t.Errorf("summary message %q", last[1].Text())
			}
			rec.waitFor(t, agent.EventAnswer)
			cuts := rec.OfType(agent.EventContextCut)
			c := body[agent.ContextCut](t, cuts[len(cuts)-1])
			if fail && (c.SummaryError != "the summarizer is down" || c.Summarized != 0 || c.Dropped != 4) {
				t.Errorf("context_cut %+v, want the summarizer's error and 4 dropped", c)
			}
			if !fail && (c.SummaryError != "" || c.Summarized != 4 || c.Dropped != 4 || c.Sent != 6) {
				t.Errorf("context_cut %+v, want 4 summarized", c)
			}
			if len(conv.Messages) != 10 {
				t.Errorf("stored %d messages, want 10", len(conv.Messages))
			}
		})
	}
}

// Store cuts the stored conversation too: it holds what was last sent.
func TestContextPolicyStore(t *testing.T) {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Add(bigTool(10))
	sess, _ := tk.Session("store")
	m := &pager{turns: 4}
	conv := agent.NewConversation("sys", "read the pages")
	summarize := func(ctx context.Context, cut []agent.Message) (string, error) {
		return fmt.Sprintf("%d messages before", len(cut)), nil
	}
	_, err := agent.New(m, agent.WithContextPolicy(agent.ContextPolicy{KeepTurns: 2, Summarize: summarize, Store: true})).Run(ctx, sess, conv)
	if err != nil {
		t.Fatal(err)
	}
	if err := conv.Check(); err != nil {
		t.Fatal(err)
	}
	// The last request: task, summary, turns 3 and 4; then the answer.
	if got := roles(conv.Messages); got != "uuatata" {
		t.Fatalf("stored conversation %q", got)
	}
	if conv.Messages[1].Text() != "3 messages before" { // the summary before, turn 2 and its result
		t.Errorf("stored summary %q", conv.Messages[1].Text())
	}
}

// A policy with a negative number is refused before the model is asked,
// with an error that names it.
func TestContextPolicyRefusesNegativeNumbers(t *testing.T) {
	ctx := context.Background()
	tk, rec := record(t, "bad")
	sess, _ := tk.Session("bad")
	for _, p := range []agent.ContextPolicy{{KeepTurns: -1}, {MaxBytes: -5}, {MaxTokens: -1, MaxBytes: 10}} {
		asked := false
		model := agent.ModelFunc(func(context.Context, *agent.Request) (*agent.Reply, error) {
			asked = true
			return &agent.Reply{Text: "hi"}, nil
		})
		_, err := agent.New(model, agent.WithContextPolicy(p)).Run(ctx, sess, agent.NewConversation("", "hi"))
		if err == nil || asked || !strings.Contains(err.Error(), "ContextPolicy.") || !strings.Contains(err.Error(), "give 0 for no bound") {
			t.Errorf("policy %+v: err %v, model asked %v", p, err, asked)
		}
	}
	if n := len(rec.All()); n != 0 {
		t.Errorf("%d events from refused runs", n)
	}
}

// A budget that cannot be met sends the smallest history the rules allow
// (the task, the newest turn with its results cleared), and says so.
func TestContextPolicyBudgetTooSmall(t *testing.T) {
	ctx := context.Background()
	var cut []agent.ContextCut
	tk := toolkit.New(toolkit.WithInlineObserver(toolkit.ObserverFunc(func(ev *events.Event) {
		if ev.Type == agent.EventContextCut {
			c := body[agent.ContextCut](t, ev)
			cut = append(cut, c)
		}
	})))
	defer tk.Close(ctx)
	tk.Add(bigTool(100))
	sess, _ := tk.Session("small")
	m := &pager{turns: 3}
	conv := agent.NewConversation("", "read the pages, all of them, one after the other")
	if _, err := agent.New(m, agent.WithContextPolicy(agent.ContextPolicy{MaxBytes: 10})).Run(ctx, sess, conv); err != nil {
		t.Fatal(err)
	}
	last := m.requests()[3]
	if roles(last) != "uat" || !strings.HasPrefix(last[2].Text(), "[tool result cleared") {
		t.Fatalf("last request %q: %+v", roles(last), last)
	}
	if c := cut[len(cut)-1]; c.BytesAfter != agent.MessageBytes(last...) || c.BytesAfter <= c.Budget {
		t.Errorf("context_cut %+v, want bytes_after above the budget", c)
	}
}

// The BeforeModel hooks get what the policy sends and may cut further,
// without touching the next turn's cut; a request assembled again after a
// failure (RetryReassemble) gets the same cut, with one context_cut and
// one summary for the turn.
func TestContextPolicyWithHooks(t *testing.T) {
	ctx := context.Background()
	var cuts []agent.ContextCut
	tk := toolkit.New(toolkit.WithInlineObserver(toolkit.ObserverFunc(func(ev *events.Event) {
		if ev.Type == agent.EventContextCut {
			cuts = append(cuts, body[agent.ContextCut](t, ev))
		}
	})))
	defer tk.Close(ctx)
	tk.Add(bigTool(10))
	sess, _ := tk.Session("hooks")
	p := &pager{turns: 3}
	failed := false
	model := agent.ModelFunc(func(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
		if len(p.requests()) == 3 && !failed { // turn 4, first attempt
			failed = true
			return nil, errors.New("context too long")
		}
		return p.Generate(ctx, req)
	})
	var seen []string
	summaries := 0
	hooks := agent.Hooks{
		BeforeModel: func(ctx context.Context, run *agent.RunInfo, req *agent.Request) error {
			seen = append(seen, roles(req.Messages))
			req.Messages = append(req.Messages, agent.UserText("be brief")) // a new slice: Clip
			return nil
		},
		ModelFailed: func(ctx context.Context, run *agent.RunInfo, req *agent.Request, err error) agent.RetryDecision {
			return agent.RetryReassemble
		},
	}
	policy := agent.ContextPolicy{KeepTurns: 1, Summarize: func(ctx context.Context, cut []agent.Message) (string, error) {
		summaries++
		return "earlier", nil
	}}
	conv := agent.NewConversation("sys", "read the pages")
	if _, err := agent.New(model, agent.WithHooks(hooks), agent.WithContextPolicy(policy)).Run(ctx, sess, conv); err != nil {
		t.Fatal(err)
	}
	// Turns 1 to 4, turn 4 assembled twice: the hook sees the cut each time.
	if want := "u uat uuat uuat uuat"; strings.Join(seen, " ") != want {
		t.Errorf("BeforeModel saw %q, want %q", strings.Join(seen, " "), want)
	}
	reqs := p.requests()
	if got := roles(reqs[3]); got != "uuatu" || reqs[3][4].Text() != "be brief" {
		t.Errorf("turn 4 sent %q, want the cut and the hook's message", got)
	}
	if len(cuts) != 2 || cuts[0].Turn != 3 || cuts[1].Turn != 4 || summaries != 2 {
		t.Errorf("%d context_cut events %+v, %d summaries; want one of each for turns 3 and 4", len(cuts), cuts, summaries)
	}
	if roles(conv.Messages) != "uatatata" {
		t.Errorf("stored %q, want it whole", roles(conv.Messages))
	}
}

// A conversation a ModelFailed hook replaces (RunInfo.Replace) before
// asking for the request again is cut afresh: the model is not sent the
// cut of the conversation that was there before.
func TestContextPolicyAfterReplace(t *testing.T) {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Add(bigTool(10))
	sess, _ := tk.Session("replace")
	p := &pager{turns: 3}
	failed := false
	model := agent.ModelFunc(func(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
		if len(p.requests()) == 3 && !failed {
			failed = true
			return nil, errors.New("context too long")
		}
		return p.Generate(ctx, req)
	})
	hooks := agent.Hooks{ModelFailed: func(ctx context.Context, run *agent.RunInfo, req *agent.Request, err error) agent.RetryDecision {
		msgs := run.Conversation().Messages
		if err := run.Replace("sys", append([]agent.Message{agent.UserText("(compressed)")}, msgs[3:]...)); err != nil {
			t.Error(err)
		}
		return agent.RetryReassemble
	}}
	conv := agent.NewConversation("sys", "read the pages")
	loop := agent.New(model, agent.WithHooks(hooks), agent.WithContextPolicy(agent.ContextPolicy{KeepTurns: 1}))
	if _, err := loop.Run(ctx, sess, conv); err != nil {
		t.Fatal(err)
	}
	if r := p.requests()[3]; roles(r) != "uat" || r[0].Text() != "(compressed)" || r[1].Calls[0].ID != "c3" {
		t.Errorf("turn 4 after the replace sent %q: %+v", roles(r), r)
	}
}
