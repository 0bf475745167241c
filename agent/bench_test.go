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

// benchModel calls one tool per turn for turns turns, then answers; with
// stream set it also streams its words (8 pieces) and the call's
// arguments (2 pieces), as a real streaming model would.
type benchModel struct {
	turns  int
	stream bool
}

var benchArgs = json.RawMessage(`{"city":"Oslo"}`)

func (m benchModel) next(msgs int) *agent.Reply {
	if msgs/2 >= m.turns { // user, then assistant+tool per turn
		return &agent.Reply{Text: "Sunny."}
	}
	return &agent.Reply{Text: "Checking the weather.", Calls: []toolkit.Call{{ID: fmt.Sprintf("c%d", msgs), Name: "weather", Args: benchArgs}}}
}

func (m benchModel) Generate(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
	r := m.next(len(req.Messages))
	if m.stream {
		for range 8 {
			req.Send(agent.Chunk{Kind: agent.ChunkText, Text: "word "})
		}
		for i, c := range r.Calls {
			req.Send(agent.Chunk{Kind: agent.ChunkCall, Index: i, CallID: c.ID, Name: c.Name})
			req.Send(agent.Chunk{Kind: agent.ChunkArgs, Index: i, Text: string(c.Args[:5])})
			req.Send(agent.Chunk{Kind: agent.ChunkArgs, Index: i, Text: string(c.Args[5:])})
		}
	}
	return r, nil
}

// demoLoop is the demo's loop as it was before package agent (cmd/demo
// agent.go at 8ea3474), without its terminal output: definitions, the
// model's turn, one session event per turn, the batch, its results as
// messages, the batch's stop.
func demoLoop(ctx context.Context, sess *toolkit.Session, m benchModel, task string) (string, error) {
	type message struct {
		role, text, callID string
		calls              []toolkit.Call
	}
	type turnInfo struct {
		N     int            `json:"n"`
		Text  string         `json:"text,omitempty"`
		Calls []toolkit.Call `json:"calls,omitempty"`
	}
	conv := []message{{role: "system", text: "system"}, {role: "user", text: task}}
	for n := 1; n <= 100; n++ {
		if _, err := sess.Definitions(ctx); err != nil {
			return "", err
		}
		turn := m.next(len(conv) - 1)
		conv = append(conv, message{role: "assistant", text: turn.Text, calls: turn.Calls})
		_ = sess.Emit(context.Background(), "turn", turnInfo{N: n, Text: turn.Text, Calls: turn.Calls})
		if len(turn.Calls) == 0 {
			_ = sess.Emit(context.Background(), "done", turnInfo{Text: turn.Text})
			return turn.Text, nil
		}
		run := sess.Start(ctx, turn.Calls)
		for range run.Results() {
		}
		results := run.Wait()
		for _, r := range results {
			conv = append(conv, message{role: "tool", callID: r.Call.ID, text: r.Text()})
		}
		if stop, _ := run.Stop(); stop.Reason != "" {
			return "", nil
		}
	}
	return "", nil
}

// BenchmarkLoopOverhead runs the same 10-turn conversation (one call per
// turn to a trivial tool, then an answer) through package agent and
// through the demo's former loop, interleaved, and reports each one's time
// per turn and their ratio (agent/demo; below 1 is faster). "observed"
// adds an inline observer, so that every session event is built and
// delivered; "streaming" also streams 8 text pieces and 2 argument pieces
// per turn (the demo's loop cannot stream: it does the non-streaming
// work only); "hooked" is "quiet" with every hook of agent.Hooks and a
// model interceptor, all doing nothing (what the timing points cost; no
// observer).
func BenchmarkLoopOverhead(b *testing.B) {
	const turns = 10
	for _, mode := range []string{"quiet", "observed", "streaming", "hooked"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			var opts []toolkit.Option
			if mode == "observed" || mode == "streaming" {
				opts = append(opts, toolkit.WithInlineObserver(toolkit.ObserverFunc(func(*events.Event) {})))
			}
			tk := toolkit.New(opts...)
			defer tk.Close(ctx)
			tk.Add(toolkit.MustTool(toolkit.Spec{Name: "weather", ConcurrencySafe: true},
				func(ctx context.Context, in cityIn) (string, error) { return "sunny in " + in.City, nil }))
			m := benchModel{turns: turns, stream: mode == "streaming"}
			var hooks []agent.Option
			if mode == "hooked" {
				hooks = append(hooks, agent.WithHooks(noHooks), agent.WithModelInterceptor(
					func(ctx context.Context, req *agent.Request, next agent.Model) (*agent.Reply, error) {
						return next.Generate(ctx, req)
					}))
			}
			loop := agent.New(m, hooks...)
			var agentT, demoT time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				sess, _ := tk.Session(fmt.Sprintf("a%d", i))
				t0 := time.Now()
				out, err := loop.Run(ctx, sess, agent.NewConversation("system", "weather?"))
				agentT += time.Since(t0)
				if err != nil || out.Answer != "Sunny." || out.Turns != turns+1 {
					b.Fatalf("agent run: %v %+v", err, out)
				}
				sess.Close()
				sess, _ = tk.Session(fmt.Sprintf("d%d", i))
				t0 = time.Now()
				ans, err := demoLoop(ctx, sess, m, "weather?")
				demoT += time.Since(t0)
				if err != nil || ans != "Sunny." {
					b.Fatalf("demo run: %v %q", err, ans)
				}
				sess.Close()
			}
			perTurn := float64(b.N * (turns + 1))
			b.ReportMetric(float64(agentT.Nanoseconds())/perTurn, "agent-ns/turn")
			b.ReportMetric(float64(demoT.Nanoseconds())/perTurn, "demo-ns/turn")
			b.ReportMetric(float64(agentT)/float64(demoT), "agent/demo")
		})
	}
}

// noHooks has every hook, each doing nothing.
var noHooks = agent.Hooks{
	Start:       func(ctx context.Context, _ *agent.RunInfo) (context.Context, error) { return ctx, nil },
	End:         func(context.Context, *agent.RunInfo, *agent.Outcome, error) {},
	BeforeModel: func(context.Context, *agent.RunInfo, *agent.Request) error { return nil },
	ModelFailed: func(context.Context, *agent.RunInfo, *agent.Request, error) agent.RetryDecision {
		return agent.RetryAsPolicy
	},
	AfterReply: func(context.Context, *agent.RunInfo, *agent.Reply) error { return nil },
	Eligible:   func(context.Context, *agent.RunInfo, *agent.Reply) bool { return true },
	BatchStart: func(context.Context, *agent.RunInfo, *toolkit.Batch) {},
	CallEnd:    func(context.Context, *agent.RunInfo, toolkit.Result) {},
	BatchEnd:   func(context.Context, *agent.RunInfo, []toolkit.Result, *toolkit.Stop) {},
}
