package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// longRun is 200 turns, each fetching a 20 KiB page, under a 32 KiB
// budget: what TestContextPolicyLongRun checks and
// BenchmarkContextPolicyLongRun measures.
const (
	longTurns  = 200
	longResult = 20 << 10
	longBudget = 32 << 10
)

// longStats is what the model saw over a long run.
type longStats struct {
	maxBytes, maxJSON int   // the largest request: MessageBytes, and as JSON
	badRequest        error // the first request that breaks Conversation.Check
	turns             int
}

// longModel fetches one page per turn for longTurns turns, then answers,
// and measures every request (with check, also checks it and measures it
// as JSON).
func longModel(st *longStats, check bool) agent.Model {
	return agent.ModelFunc(func(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
		st.turns++
		st.maxBytes = max(st.maxBytes, agent.MessageBytes(req.Messages...))
		if check {
			b, err := json.Marshal(req.Messages)
			if err != nil {
				return nil, err
			}
			st.maxJSON = max(st.maxJSON, len(b))
			if err := (&agent.Conversation{Messages: req.Messages}).Check(); err != nil && st.badRequest == nil {
				st.badRequest = fmt.Errorf("request %d: %w", st.turns, err)
			}
		}
		if st.turns > longTurns {
			return &agent.Reply{Text: "read them all"}, nil
		}
		args := json.RawMessage(fmt.Sprintf(`{"page":%d}`, st.turns))
		return &agent.Reply{Text: "next page", Calls: []toolkit.Call{{ID: fmt.Sprintf("call_%d", st.turns), Name: "fetch", Args: args}}}, nil
	})
}

// A 200-turn run with 20 KiB tool results: every request stays under the
// 32 KiB budget, while the stored conversation keeps all 200 turns whole
// (and passes Check); context_cut says what each request left out.
func TestContextPolicyLongRun(t *testing.T) {
	ctx := context.Background()
	var cuts []agent.ContextCut
	tk := toolkit.New(toolkit.WithInlineObserver(toolkit.ObserverFunc(func(ev *events.Event) {
		if ev.Type == agent.EventContextCut {
			cuts = append(cuts, body[agent.ContextCut](t, ev))
		}
	})))
	defer tk.Close(ctx)
	tk.Add(bigTool(longResult))
	sess, _ := tk.Session("long")
	var st longStats
	loop := agent.New(longModel(&st, true), agent.WithMaxTurns(longTurns+1),
		agent.WithContextPolicy(agent.ContextPolicy{MaxBytes: longBudget}))
	conv := agent.NewConversation("sys", "read every page")
	out, err := loop.Run(ctx, sess, conv)
	if err != nil || out.Turns != longTurns+1 {
		t.Fatalf("run: %v, %d turns", err, out.Turns)
	}
	if st.badRequest != nil {
		t.Fatal(st.badRequest)
	}
	if st.maxBytes > longBudget {
		t.Errorf("a request held %d bytes, budget %d", st.maxBytes, longBudget)
	}
	if err := conv.Check(); err != nil {
		t.Fatal(err)
	}
	if len(conv.Messages) != 1+2*longTurns+1 {
		t.Fatalf("stored %d messages, want %d", len(conv.Messages), 1+2*longTurns+1)
	}
	for i := range longTurns {
		if res := conv.Messages[2+2*i]; len(res.Text()) < longResult {
			t.Fatalf("stored result %d holds %d bytes, want it whole", i+1, len(res.Text()))
		}
	}
	whole := agent.MessageBytes(conv.Messages...)
	if whole < longTurns*longResult {
		t.Fatalf("stored conversation %d bytes", whole)
	}
	dropped, cleared, droppedCalls := 0, map[string]bool{}, map[string]bool{}
	for _, c := range cuts {
		if c.BytesAfter > longBudget {
			t.Errorf("context_cut %+v over the budget", c)
		}
		dropped = max(dropped, c.Dropped)
		for _, id := range c.DroppedCalls {
			if droppedCalls[id] {
				t.Errorf("call %s reported dropped twice", id)
			}
			droppedCalls[id] = true
		}
		if len(droppedCalls)*2 != c.Dropped {
			t.Errorf("turn %d: %d messages dropped, %d calls reported dropped so far", c.Turn, c.Dropped, len(droppedCalls))
		}
		for _, id := range c.ClearedCalls {
			if cleared[id] {
				t.Errorf("call %s reported cleared twice", id)
			}
			cleared[id] = true
		}
	}
	// The notes of cleared results add up too: late in the run, old turns go.
	if len(cuts) < longTurns-3 || dropped == 0 || len(cleared) < longTurns-3 {
		t.Errorf("%d context_cut events, at most %d messages dropped, %d calls cleared", len(cuts), dropped, len(cleared))
	}
	t.Logf("largest request %d bytes (%d as JSON), budget %d; conversation %d bytes", st.maxBytes, st.maxJSON, longBudget, whole)
}

// BenchmarkContextPolicyLongRun runs TestContextPolicyLongRun's 200 turns
// with and without the policy, interleaved, and reports the loop's time
// per turn for each (the model only measures its request), their ratio,
// and the largest request each sent, in bytes (MessageBytes).
func BenchmarkContextPolicyLongRun(b *testing.B) {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Add(bigTool(longResult))
	var with, without time.Duration
	var maxWith, maxWithout int
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		for _, policy := range []bool{true, false} {
			var opts []agent.Option
			if policy {
				opts = append(opts, agent.WithContextPolicy(agent.ContextPolicy{MaxBytes: longBudget}))
			}
			var st longStats
			loop := agent.New(longModel(&st, false), append(opts, agent.WithMaxTurns(longTurns+1))...)
			sess, _ := tk.Session(fmt.Sprintf("long-%d-%v", i, policy))
			t0 := time.Now()
			out, err := loop.Run(ctx, sess, agent.NewConversation("sys", "read every page"))
			d := time.Since(t0)
			sess.Close()
			if err != nil || out.Turns != longTurns+1 {
				b.Fatalf("run: %v", err)
			}
			if policy {
				with, maxWith = with+d, max(maxWith, st.maxBytes)
			} else {
				without, maxWithout = without+d, max(maxWithout, st.maxBytes)
			}
		}
	}
	turns := float64(b.N * (longTurns + 1))
	b.ReportMetric(float64(with.Nanoseconds())/turns, "policy-ns/turn")
	b.ReportMetric(float64(without.Nanoseconds())/turns, "whole-ns/turn")
	b.ReportMetric(float64(with)/float64(without), "policy/whole")
	b.ReportMetric(float64(maxWith), "policy-max-request-B")
	b.ReportMetric(float64(maxWithout), "whole-max-request-B")
}
