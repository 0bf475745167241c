package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// FuzzRun drives the loop with a model whose turns the fuzz input writes:
// calls with missing, repeated, reused, unusable or long ids, unknown or
// missing names, arguments whole, half written, blank or not JSON, replies
// cut at the token limit, streamed in any order or not at all. Whatever
// the model does: the conversation is valid (Check) and stores as JSON;
// each turn's args_delta events name the calls of its turn_end and add up
// to their arguments.
func FuzzRun(f *testing.F) {
	f.Add([]byte{2, 2, 0, 0, 0, 1, 1, 1, 0, 3, 0})
	f.Add([]byte{3, 3, 3, 2, 1, 2, 4, 0, 2, 5, 1, 1, 7, 2, 2, 2, 1})
	f.Add([]byte{1, 1, 6, 2, 3, 1, 1})
	ids := []string{"", "c0", "c1", "call_0", strings.Repeat("x", 300), "bad\x01id"}
	names := []string{"weather", "weather", "nope", ""}
	argsPool := []string{`{"city":"Oslo"}`, `{"city":`, ``, `{}`, `[1]`, `not json`}
	finishes := []agent.Finish{agent.FinishToolCalls, agent.FinishLength, agent.FinishStop}
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
		type turn struct {
			reply  agent.Reply
			chunks []agent.Chunk
		}
		var turns []turn
		for n := 1 + next()%3; len(turns) < n; {
			var tr turn
			if len(turns) == n-1 {
				tr.reply = agent.Reply{Text: "done", Finish: agent.FinishStop}
				turns = append(turns, tr)
				break
			}
			calls := 1 + next()%3
			for range calls {
				tr.reply.Calls = append(tr.reply.Calls, toolkit.Call{ID: ids[next()%len(ids)], Name: names[next()%len(names)], Args: json.RawMessage(argsPool[next()%len(argsPool)])})
			}
			tr.reply.Finish = finishes[next()%len(finishes)]
			if mode := next(); mode%3 != 0 { // streamed, calls begun in a rotated order
				for k := range calls {
					i := (k + mode/3) % calls
					c := tr.reply.Calls[i]
					half := len(c.Args) / 2
					tr.chunks = append(tr.chunks, agent.Chunk{Kind: agent.ChunkCall, Index: k, CallID: c.ID, Name: c.Name},
						agent.Chunk{Kind: agent.ChunkArgs, Index: k, Text: string(c.Args[:half])},
						agent.Chunk{Kind: agent.ChunkArgs, Index: k, Text: string(c.Args[half:])})
				}
			}
			turns = append(turns, tr)
		}
		// Repeated ids begun out of order cannot be told apart by id: the
		// event check below holds for the others.
		checkEvents := true
		for _, tr := range turns {
			seen := map[string]bool{}
			for _, c := range tr.reply.Calls {
				if seen[c.ID] {
					checkEvents = false
				}
				seen[c.ID] = true
			}
		}

		rec := &testutil.Recorder{}
		tk := toolkit.New(toolkit.WithInlineObserver(rec))
		defer tk.Close(context.Background())
		tk.Add(weatherTool(t))
		sess, err := tk.Session("fuzz")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		model := agent.ModelFunc(func(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
			tr := turns[min(n, len(turns)-1)]
			n++
			for _, c := range tr.chunks {
				req.Send(c)
			}
			r := tr.reply
			r.Calls = append([]toolkit.Call(nil), r.Calls...)
			return &r, nil
		})
		conv := agent.NewConversation("", "Weather?")
		_, runErr := agent.New(model, agent.WithRetry(agent.RetryPolicy{Attempts: 1}), agent.WithMaxTurns(4)).Run(context.Background(), sess, conv)
		if err := conv.Check(); err != nil {
			t.Fatalf("after Run (%v) the conversation is not valid: %v", runErr, err)
		}
		b, err := json.Marshal(conv)
		if err != nil {
			t.Fatalf("the conversation does not store: %v", err)
		}
		var back agent.Conversation
		if err := json.Unmarshal(b, &back); err != nil || back.Check() != nil {
			t.Fatalf("the stored conversation does not come back valid: %v\n%s", err, b)
		}
		if !checkEvents {
			return
		}
		// The calls of each turn, as the conversation has them, against
		// the turn's args_delta events.
		var replies [][]toolkit.Call
		for _, m := range conv.Messages {
			if m.Role == agent.RoleAssistant {
				replies = append(replies, m.Calls)
			}
		}
		args := map[int]map[string]string{}
		ended := map[int]bool{}
		for _, ev := range rec.All() {
			switch ev.Type {
			case agent.EventArgs:
				var d agent.ArgsDelta
				json.Unmarshal(ev.Data, &d)
				if args[d.Turn] == nil {
					args[d.Turn] = map[string]string{}
				}
				args[d.Turn][d.Call] += d.Delta
			case agent.EventTurnEnd:
				var te agent.TurnEnd
				if err := json.Unmarshal(ev.Data, &te); err != nil {
					t.Fatalf("turn_end: %v", err)
				}
				ended[te.Turn] = true
			case events.TypeStart:
			}
		}
		for i, calls := range replies {
			turn := i + 1
			if !ended[turn] {
				t.Fatalf("turn %d has no turn_end event", turn)
			}
			want := map[string]string{}
			for _, c := range calls {
				want[c.ID] = string(c.Args)
			}
			for id, got := range args[turn] {
				if w, ok := want[id]; !ok || got != w {
					t.Fatalf("turn %d: args_delta of call %q add up to %q; the conversation has %q (calls %q)", turn, id, got, w, calls)
				}
			}
			for id, w := range want {
				if _, ok := args[turn][id]; !ok && w != "" {
					t.Fatalf("turn %d: no args_delta for call %q", turn, id)
				}
			}
		}
	})
}
