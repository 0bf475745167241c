package agent_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/toolkit"
)

// FuzzRunHooks drives the loop with hooks whose edits the fuzz input
// chooses: AfterReply drops, reorders, adds and renames calls (blank,
// repeated and earlier ids, unknown tools, blank names), BeforeModel
// stores a shorter conversation or tries an invalid one, Eligible refuses,
// BatchEnd stops. Whatever they do: the conversation is valid when Run
// returns, End is called once, and CallEnd once per result.
func FuzzRunHooks(f *testing.F) {
	f.Add([]byte{2, 1, 0, 3, 1, 2, 0, 0})
	f.Add([]byte{3, 4, 5, 6, 7, 1, 2, 3, 4, 5, 6})
	f.Add([]byte{1, 9, 9, 9, 9, 2, 2})
	ids := []string{"", "c0", "c1", "c1"}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 64 {
			return
		}
		pos := 0
		next := func() int {
			if pos >= len(in) {
				return 0
			}
			pos++
			return int(in[pos-1])
		}
		ctx := context.Background()
		tk := toolkit.New()
		defer tk.Close(ctx)
		tk.Add(weatherTool(t))
		sess, _ := tk.Session("fuzz-hooks")
		model := agent.ModelFunc(func(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
			n := next() % 4
			if n == 0 {
				return &agent.Reply{Text: "done"}, nil
			}
			r := &agent.Reply{Text: "calling"}
			for range n {
				r.Calls = append(r.Calls, toolkit.Call{ID: ids[next()%len(ids)], Name: "weather", Args: json.RawMessage(`{"city":"Oslo"}`)})
			}
			return r, nil
		})
		ends, callEnds := 0, 0
		var ended []string
		hooks := agent.Hooks{
			BeforeModel: func(ctx context.Context, run *agent.RunInfo, req *agent.Request) error {
				msgs := run.Conversation().Messages
				switch next() % 4 {
				case 1: // store the first message only
					if err := run.Replace("short", msgs[:1]); err != nil {
						t.Errorf("a valid replacement refused: %v", err)
					}
				case 2: // a result without its call
					if len(msgs) > 2 && msgs[2].Role == agent.RoleTool {
						if run.Replace("bad", msgs[2:]) == nil {
							t.Error("an invalid replacement was stored")
						}
					}
				}
				req.Messages = run.Conversation().Messages
				return nil
			},
			AfterReply: func(ctx context.Context, run *agent.RunInfo, r *agent.Reply) error {
				for range next() % 4 {
					switch op := next(); {
					case len(r.Calls) == 0:
						r.Calls = append(r.Calls, toolkit.Call{Name: "weather", Args: json.RawMessage(`{"city":"Rome"}`)})
					case op%6 == 0:
						i := op / 6 % len(r.Calls)
						r.Calls = slices.Delete(r.Calls, i, i+1)
					case op%6 == 1:
						slices.Reverse(r.Calls)
					case op%6 == 2:
						r.Calls[op/6%len(r.Calls)].ID = ""
					case op%6 == 3:
						r.Calls = append(r.Calls, r.Calls[0]) // a repeated id
					case op%6 == 4:
						r.Calls[0].Name = "nope"
					case op%6 == 5 && op > 200:
						r.Calls[0].Name = "" // ends the run
					}
				}
				return nil
			},
			Eligible: func(context.Context, *agent.RunInfo, *agent.Reply) bool { return next()%5 != 1 },
			CallEnd: func(ctx context.Context, run *agent.RunInfo, r toolkit.Result) {
				callEnds++
				ended = append(ended, r.Call.ID)
			},
			BatchEnd: func(ctx context.Context, run *agent.RunInfo, results []toolkit.Result, stop *toolkit.Stop) {
				if next()%4 == 1 {
					stop.Reason = "fuzz"
				}
			},
			End: func(context.Context, *agent.RunInfo, *agent.Outcome, error) { ends++ },
		}
		conv := agent.NewConversation("", "Weather?")
		out, err := agent.New(model, agent.WithMaxTurns(4), agent.WithHooks(hooks)).Run(ctx, sess, conv)
		if cerr := conv.Check(); cerr != nil {
			t.Fatalf("after Run (%v) the conversation is not valid: %v", err, cerr)
		}
		if ends != 1 || callEnds != len(out.Results) {
			t.Fatalf("End called %d times, CallEnd %d times for %d results", ends, callEnds, len(out.Results))
		}
		var results []string
		for _, r := range out.Results {
			results = append(results, r.Call.ID)
		}
		slices.Sort(results)
		slices.Sort(ended)
		if !slices.Equal(results, ended) {
			t.Fatalf("CallEnd saw %q; the results are %q", ended, results)
		}
	})
}
