package interceptors_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// turns is a model that makes the calls of one reply per turn, then
// answers "done"; it keeps what each request's last message said.
type turns struct {
	mu    sync.Mutex
	turns [][]string // the tools each reply calls
	asked int
	last  []string
}

func (m *turns) model() agent.Model {
	return agent.ModelFunc(func(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.asked++
		if n := len(req.Messages); n > 0 {
			m.last = append(m.last, req.Messages[n-1].Text())
		}
		if m.asked > len(m.turns) {
			return &agent.Reply{Text: "done"}, nil
		}
		var calls []toolkit.Call
		for i, name := range m.turns[m.asked-1] {
			calls = append(calls, testutil.Call(fmt.Sprintf("t%d-%d", m.asked, i), name, `{}`))
		}
		return &agent.Reply{Calls: calls}, nil
	})
}

// runTurns runs one agent run of the model's turns in s.
func runTurns(t *testing.T, s *toolkit.Session, turnsOfCalls ...[]string) (*agent.Outcome, *turns) {
	t.Helper()
	m := &turns{turns: turnsOfCalls}
	out, err := agent.New(m.model()).Run(context.Background(), s, agent.NewConversation("", "go"))
	if err != nil {
		t.Fatal(err)
	}
	return out, m
}

// states lists the outcome's results as "ok" or "limit".
func states(out *agent.Outcome) string {
	var s []string
	for _, r := range out.Results {
		switch {
		case !r.IsError():
			s = append(s, "ok")
		case errors.Is(r.Err, interceptors.ErrLimit):
			s = append(s, "limit")
		default:
			s = append(s, fmt.Sprintf("%s(%v)", r.State, r.Err))
		}
	}
	return strings.Join(s, " ")
}

func search(n int) [][]string {
	t := make([][]string, n)
	for i := range t {
		t[i] = []string{"search"}
	}
	return t
}

// TestCallLimitsPerRunCountsEveryTurn is issue 30's case: a run limit of
// 2 and a run of three turns, one search each. Exactly two searches run.
// The third is refused, and then the model is told so and answers
// (CONTINUE), or the run ends with the limit's message (END, EndRun). The
// next run of the session has its own two. (A limit per batch, as
// PerBatch was, let all three run.)
func TestCallLimitsPerRunCountsEveryTurn(t *testing.T) {
	for _, end := range []bool{false, true} {
		t.Run(fmt.Sprintf("end=%v", end), func(t *testing.T) {
			opts := []interceptors.LimitOption{interceptors.PerRun(2, "search")}
			if end {
				opts = append(opts, interceptors.EndRun())
			}
			tk := icKit(t, nil, interceptors.CallLimits(opts...))
			ran := limitTools(t, tk, "search")
			s := testutil.Session(t, tk, "s")
			for run := 1; run <= 2; run++ {
				out, m := runTurns(t, s, search(3)...)
				if got := states(out); got != "ok ok limit" {
					t.Fatalf("run %d: %s", run, got)
				}
				if ran["search"].get() != 2*run {
					t.Fatalf("run %d: search ran %d times in all", run, ran["search"].get())
				}
				want := `Error: call limit reached: "search" may run 2 times per run and already has; stop calling it and answer with what you have`
				if got := out.Results[2].Text(); got != want {
					t.Fatalf("the model reads %q,\nwant %q", got, want)
				}
				var le *interceptors.LimitError
				if !errors.As(out.Results[2].Err, &le) || le.Scope != "run" || le.Limit != 2 || le.Tool != "search" {
					t.Fatalf("cause %#v", out.Results[2].Err)
				}
				if end {
					if out.End != agent.EndStopped || out.Stop.Reason != toolkit.StopCallLimit || m.asked != 3 ||
						out.Answer != `the run was stopped: calls of "search" are limited to 2 per run` {
						t.Fatalf("run %d: %s after %d requests: %q %+v", run, out.End, m.asked, out.Answer, out.Stop)
					}
				} else if out.End != agent.EndAnswer || out.Answer != "done" || m.asked != 4 || m.last[3] != want {
					t.Fatalf("run %d: %s %q after %d requests, the last saying %q", run, out.End, out.Answer, m.asked, m.last[len(m.last)-1])
				}
			}
		})
	}
}

// TestCallLimitsPerSessionSpansRuns: a thread limit counts the calls of
// every run of the session; another session has its own.
func TestCallLimitsPerSessionSpansRuns(t *testing.T) {
	tk := icKit(t, nil, interceptors.CallLimits(interceptors.PerSession(3, "search"), interceptors.PerRun(5, "search")))
	ran := limitTools(t, tk, "search")
	a := testutil.Session(t, tk, "a")
	if out, _ := runTurns(t, a, search(2)...); states(out) != "ok ok" {
		t.Fatalf("first run: %s", states(out))
	}
	out, _ := runTurns(t, a, search(2)...)
	if states(out) != "ok limit" {
		t.Fatalf("second run: %s", states(out))
	}
	want := `Error: call limit reached: "search" may run 3 times per session and already has; stop calling it and answer with what you have`
	if out.Results[1].Text() != want {
		t.Fatalf("the model reads %q", out.Results[1].Text())
	}
	if out, _ := runTurns(t, testutil.Session(t, tk, "b"), search(3)...); states(out) != "ok ok ok" {
		t.Fatalf("another session: %s", states(out))
	}
	if ran["search"].get() != 6 {
		t.Fatalf("search ran %d times", ran["search"].get())
	}
}

// TestCallLimitsPerToolAndAllTools: a limit per tool counts that tool's
// calls alone, a limit on all tools every call, each per turn, run or
// session as named; the model's message names the one reached.
func TestCallLimitsPerToolAndAllTools(t *testing.T) {
	tk := icKit(t, nil, interceptors.CallLimits(
		interceptors.PerRun(4),
		interceptors.PerRun(1, "a"),
		interceptors.PerTurn(1, "b"),
	))
	ran := limitTools(t, tk, "a", "b", "c")
	s := testutil.Session(t, tk, "s")
	out, _ := runTurns(t, s, []string{"a", "b", "b"}, []string{"a", "b"}, []string{"c", "c", "c"})
	// Turn 1: a, b run; the second b is over its limit per turn. Turn 2: a
	// is over its limit per run, b runs again (a new turn). Turn 3: one c
	// runs, the fifth call overall; the others are over the run's 4.
	if got := states(out); got != "ok ok limit limit ok ok limit limit" {
		t.Fatalf("got %s", got)
	}
	texts := map[int]string{
		2: `Error: call limit reached: "b" may run 1 time per turn and already has; call it again in a later turn if you still need to`,
		3: `Error: call limit reached: "a" may run 1 time per run and already has; stop calling it and answer with what you have`,
		6: `Error: call limit reached: tools may run 4 times per run in total and already have; stop calling tools and answer with what you have`,
	}
	for i, want := range texts {
		if got := out.Results[i].Text(); got != want {
			t.Errorf("result %d: the model reads %q,\nwant %q", i, got, want)
		}
	}
	if ran["a"].get() != 1 || ran["b"].get() != 2 || ran["c"].get() != 1 {
		t.Fatalf("ran a %d, b %d, c %d", ran["a"].get(), ran["b"].get(), ran["c"].get())
	}
}

// TestCallLimitsPerRunParallelCallsCountedExactly: calls of a run's
// batches running at once take exactly the run's places: 10 parallel
// calls in the first turn under a limit of 3 run 3, and none of the next
// turn's runs.
func TestCallLimitsPerRunParallelCallsCountedExactly(t *testing.T) {
	const limit, calls = 3, 10
	tk := icKit(t, []toolkit.Option{toolkit.WithMaxParallel(calls)}, interceptors.CallLimits(interceptors.PerRun(limit)))
	var total, running, peak atomic.Int64
	testutil.Add(t, tk, icTool(t, toolkit.Spec{Name: "search", ConcurrencySafe: true}, func(ctx context.Context) (string, error) {
		n := running.Add(1)
		defer running.Add(-1)
		total.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(10 * time.Millisecond) // let the calls overlap
		return "ok", nil
	}))
	names := make([]string, calls)
	for i := range names {
		names[i] = "search"
	}
	for i := range 5 {
		out, _ := runTurns(t, testutil.Session(t, tk, fmt.Sprint("s", i)), names, names)
		if total.Load() != int64(limit*(i+1)) || strings.Count(states(out), "ok") != limit || out.End != agent.EndAnswer || len(out.Results) != 2*calls {
			t.Fatalf("run %d: the tool ran %d times in all; %s, %d results: %s", i, total.Load(), out.End, len(out.Results), states(out))
		}
	}
	if peak.Load() > limit {
		t.Fatalf("%d calls ran at once, limit %d", peak.Load(), limit)
	}
}

// A limit per run counts the calls of every turn of an agent run: the
// model searches once per turn, the third search is refused with a message
// it can act on, and it answers. The next run of the session starts over.
func ExamplePerRun() {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Use(interceptors.CallLimits(interceptors.PerRun(2, "search")))
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "search"}, func(ctx context.Context, _ struct{}) (string, error) {
		return "3 hits", nil
	}))
	model := agent.ModelFunc(func(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == agent.RoleTool {
			fmt.Println(last.Text())
		}
		if last.IsError {
			return &agent.Reply{Text: "Here is what I found."}, nil
		}
		return &agent.Reply{Calls: []toolkit.Call{{Name: "search"}}}, nil
	})
	sess, _ := tk.Session("s")
	out, _ := agent.New(model).Run(ctx, sess, agent.NewConversation("", "Search thoroughly."))
	fmt.Println(out.Answer, len(out.Results), "calls")
	// Output:
	// 3 hits
	// 3 hits
	// Error: call limit reached: "search" may run 2 times per run and already has; stop calling it and answer with what you have
	// Here is what I found. 3 calls
}

// TestCallLimitsEndOnOneLimitContinueOnAnother: two CallLimits, one
// renamed, give each limit its own behaviour: the model is told to wait
// for a later turn past the limit per turn (CONTINUE), and the run ends
// past the limit per run (END). A call the inner limit refused takes no
// place under the outer one.
func TestCallLimitsEndOnOneLimitContinueOnAnother(t *testing.T) {
	end := interceptors.CallLimits(interceptors.PerRun(5), interceptors.EndRun())
	end.Name = "limits-end"
	tk := icKit(t, nil, end, interceptors.CallLimits(interceptors.PerTurn(1, "search")))
	ran := limitTools(t, tk, "search", "a")
	out, m := runTurns(t, testutil.Session(t, tk, "s"), []string{"search", "search"}, []string{"a", "a", "a", "a"}, []string{"a"}, []string{"a"})
	if got := states(out); got != "ok limit ok ok ok ok limit" {
		t.Fatalf("got %s", got)
	}
	if out.End != agent.EndStopped || m.asked != 3 || out.Answer != "the run was stopped: tool calls are limited to 5 per run" {
		t.Fatalf("%s after %d requests: %q", out.End, m.asked, out.Answer)
	}
	if ran["search"].get() != 1 || ran["a"].get() != 4 {
		t.Fatalf("ran search %d, a %d", ran["search"].get(), ran["a"].get())
	}
}
