package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

type listIn struct {
	Dir   string `json:"dir,omitempty"`
	Limit int    `json:"limit,omitempty"`
}

// countingTools returns a weather tool and a list tool whose parameters are
// all optional ({} is a valid call), and how many times each ran.
func countingTools() (weather, list *toolkit.Tool, ran *sync.Map) {
	ran = &sync.Map{}
	count := func(name string) {
		n, _ := ran.LoadOrStore(name, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
	}
	weather = toolkit.MustTool(toolkit.Spec{Name: "weather", ConcurrencySafe: true}, func(_ context.Context, in cityIn) (string, error) {
		count("weather")
		return "sunny in " + in.City, nil
	})
	list = toolkit.MustTool(toolkit.Spec{Name: "list"}, func(_ context.Context, in listIn) (string, error) {
		count("list")
		return "3 files", nil
	})
	return weather, list, ran
}

func runs(ran *sync.Map, name string) int32 {
	n, ok := ran.Load(name)
	if !ok {
		return 0
	}
	return n.(*atomic.Int32).Load()
}

// A reply cut at the output token limit while the model was writing its
// last call: that call does not run, whether its arguments are half
// written or never began (a tool whose parameters are all optional would
// have run with {}); its result is an error that says why, with the
// toolkit's events like any result. The calls before it run; a last call
// whose arguments are whole runs (the cut came after it); invalid JSON in
// a reply that was not cut is the toolkit's argument error as before.
func TestRunTruncatedCall(t *testing.T) {
	ctx := context.Background()
	tk, rec := record(t, "cut")
	weather, list, ran := countingTools()
	if err := tk.Add(weather, list); err != nil {
		t.Fatal(err)
	}
	var seen struct {
		sync.Mutex
		decided map[string]bool
	}
	seen.decided = map[string]bool{}
	if err := tk.Use(toolkit.Interceptor{Name: "look", BeforeBatch: func(_ context.Context, p *toolkit.BatchPlan) {
		seen.Lock()
		defer seen.Unlock()
		for i := range p.Len() {
			seen.decided[p.Call(i).ID] = p.Decided(i)
		}
	}}); err != nil {
		t.Fatal(err)
	}
	sess, _ := tk.Session("cut")
	cut := func(calls ...toolkit.Call) step {
		return step{reply: &agent.Reply{Calls: calls, Finish: agent.FinishLength}}
	}
	m := &script{steps: []step{
		cut(call("c1", "weather", `{"city":"Oslo"}`), call("c2", "weather", `{"city":"Ro`)),
		cut(call("c3", "list", ``)),
		cut(call("c4", "list", `{}`)),
		{reply: &agent.Reply{Calls: []toolkit.Call{call("c5", "weather", `{"city":`)}, Finish: agent.FinishToolCalls}},
		{reply: &agent.Reply{Text: "Done.", Finish: agent.FinishStop}},
	}}
	conv := agent.NewConversation("", "Weather in Oslo and Rome, and list the files.")
	out, err := agent.New(m).Run(ctx, sess, conv)
	if err != nil {
		t.Fatal(err)
	}
	if out.End != agent.EndAnswer || len(out.Results) != 5 {
		t.Fatalf("outcome %+v", out)
	}
	// The conversation says that c3 was cut before its arguments (blank,
	// not {}: a turn resumed elsewhere must not run it with {}).
	for _, msg := range conv.Messages {
		for _, c := range msg.Calls {
			if c.ID == "c3" && len(c.Args) != 0 {
				t.Errorf("c3's arguments in the conversation: %q, want blank", c.Args)
			}
		}
	}
	if w, l := runs(ran, "weather"), runs(ran, "list"); w != 1 || l != 1 {
		t.Errorf("weather ran %d times, list %d; want 1 and 1 (c1 and c4)", w, l)
	}
	byID := map[string]toolkit.Result{}
	for _, r := range out.Results {
		byID[r.Call.ID] = r
	}
	for _, tc := range []struct{ id, say string }{
		{"c2", "while its arguments were being written (11 bytes came, incomplete). Call weather again with shorter arguments"},
		{"c3", "before its arguments were written. Call list again"},
	} {
		r := byID[tc.id]
		if r.State != events.StateError || !errors.Is(r.Err, agent.ErrTruncatedCall) {
			t.Errorf("%s: %s %v, want an error of ErrTruncatedCall", tc.id, r.State, r.Err)
		}
		text := r.Text()
		for _, want := range []string{"was not run", "output token limit", tc.say} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: the model reads %q, which lacks %q", tc.id, text, want)
			}
		}
	}
	if r := byID["c1"]; r.State != events.StateSuccess || r.Text() != "sunny in Oslo" {
		t.Errorf("c1: %s %q", r.State, r.Text())
	}
	if r := byID["c4"]; r.State != events.StateSuccess {
		t.Errorf("c4 (whole arguments in a cut reply): %s %q", r.State, r.Text())
	}
	var argErr *toolkit.ArgumentError
	if r := byID["c5"]; !errors.As(r.Err, &argErr) || errors.Is(r.Err, agent.ErrTruncatedCall) {
		t.Errorf("c5 (invalid JSON, not cut): %v", r.Err)
	}
	// The model is told in the next request, under the call's id.
	reqs := m.requests()
	if msgs := reqs[1].Messages; msgs[len(msgs)-1].CallID != "c2" || !msgs[len(msgs)-1].IsError ||
		!strings.Contains(msgs[len(msgs)-1].Text(), "output token limit") {
		t.Errorf("second request ends with %+v", msgs[len(msgs)-1])
	}
	// Its events are those of any call that fails: a start, the message
	// as deltas, the result.
	rec.waitFor(t, agent.EventAnswer)
	for _, id := range []string{"c2", "c3"} {
		if got := testutil.Types(rec.Of(id)); len(got) < 3 || got[0] != events.TypeStart || got[len(got)-1] != events.TypeResult {
			t.Errorf("%s events: %v", id, got)
		}
		testutil.CheckDeltasAddUp(t, &rec.Recorder, byID[id])
	}
	// A batch hook (a batch approval, say) found the cut calls decided,
	// and only them.
	seen.Lock()
	defer seen.Unlock()
	for id, want := range map[string]bool{"c1": false, "c2": true, "c3": true, "c4": false, "c5": false} {
		if got, ok := seen.decided[id]; !ok || got != want {
			t.Errorf("the batch hook saw %s decided: %v (seen %v), want %v", id, got, ok, want)
		}
	}
}

// Runs on one toolkit at once, each cut in a call: each cut call is
// refused and nothing else.
func TestRunTruncatedCallsConcurrently(t *testing.T) {
	ctx := context.Background()
	tk := testutil.Kit(t)
	weather, list, ran := countingTools()
	testutil.Add(t, tk, weather, list)
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sess, err := tk.Session(fmt.Sprintf("s%d", i))
			if err != nil {
				t.Error(err)
				return
			}
			m := &script{steps: []step{
				{reply: &agent.Reply{Calls: []toolkit.Call{call("a", "weather", `{"city":"Oslo"}`), call("b", "list", `{"dir":"/tm`)}, Finish: agent.FinishLength}},
				{reply: &agent.Reply{Calls: []toolkit.Call{call("c", "list", `{"dir":"/tmp"}`)}, Finish: agent.FinishToolCalls}},
				{reply: &agent.Reply{Text: "ok"}},
			}}
			out, err := agent.New(m).Run(ctx, sess, agent.NewConversation("", "go"))
			if err != nil {
				t.Error(err)
				return
			}
			if len(out.Results) != 3 || !errors.Is(out.Results[1].Err, agent.ErrTruncatedCall) ||
				out.Results[0].State != events.StateSuccess || out.Results[2].State != events.StateSuccess {
				t.Errorf("run %d: %+v", i, out.Results)
			}
		})
	}
	wg.Wait()
	if w, l := runs(ran, "weather"), runs(ran, "list"); w != n || l != n {
		t.Errorf("weather ran %d times, list %d; want %d each", w, l, n)
	}
}

// TestAnswerCutAtTheTokenLimit: an answer the output token limit cut (the
// reply finished with FinishLength and no call) ends the run as an answer
// that says so: Outcome.Truncated and "truncated": true in the answer
// event. Before, the run ended as with a whole answer, and neither said it
// was cut: an application showed half an answer as whole. A whole answer
// has neither (the event leaves the field out).
func TestAnswerCutAtTheTokenLimit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		finish agent.Finish
		cut    bool
	}{{"cut", agent.FinishLength, true}, {"whole", agent.FinishStop, false}, {"no finish", "", false}} {
		t.Run(tc.name, func(t *testing.T) {
			tk, rec := record(t, "cut-answer")
			sess := testutil.Session(t, tk, "cut-answer")
			text := "The three causes are: first, the"
			m := &script{steps: []step{{reply: &agent.Reply{Text: text, Finish: tc.finish}}}}
			conv := agent.NewConversation("", "Why?")
			out, err := agent.New(m).Run(context.Background(), sess, conv)
			if err != nil {
				t.Fatal(err)
			}
			if out.End != agent.EndAnswer || out.Answer != text || out.Truncated != tc.cut {
				t.Errorf("outcome: end %s, truncated %v, answer %q; want answer, truncated %v", out.End, out.Truncated, out.Answer, tc.cut)
			}
			evs := rec.waitFor(t, agent.EventAnswer)
			ev := evs[len(evs)-1]
			raw := body[map[string]any](t, ev)
			if got, ok := raw["truncated"]; tc.cut && got != true || !tc.cut && ok {
				t.Errorf("answer event %s: truncated %v (present %v), want %v", ev.Data, got, ok, tc.cut)
			}
			if a := body[agent.Answer](t, ev); a.Truncated != tc.cut || a.End != agent.EndAnswer || a.Text != text {
				t.Errorf("answer event: %+v", a)
			}
			if err := conv.Check(); err != nil || conv.Messages[len(conv.Messages)-1].Text() != text {
				t.Errorf("the conversation: %v, last %+v", err, conv.Messages[len(conv.Messages)-1])
			}
		})
	}
}
