package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// FuzzContextPolicy runs the loop, with a context policy the input
// chooses, on a conversation the input writes (user messages, assistant
// messages with up to three calls and their results of any size, text,
// JSON or binary, a first message that is not a user's). Whatever they
// are: the messages sent pass Conversation.Check; they begin with the
// task (a first user message); the rest is the summary, then the
// conversation's last messages, whole but for cleared tool results; they
// hold no more turns than KeepTurns; they fit the budget whenever the
// smallest history the rules allow does; context_cut comes exactly when
// something was cut and counts what was sent; the stored conversation is
// untouched (Store unset).
func FuzzContextPolicy(f *testing.F) {
	f.Add([]byte{1, 2, 3, 0, 2, 1, 5, 1, 7, 2, 2, 3, 1, 4, 9}, uint8(0), uint16(300), false)
	f.Add([]byte{0, 3, 200, 1, 2, 3, 250, 250, 0, 2, 100}, uint8(2), uint16(0), true)
	f.Add([]byte{2, 1, 1, 1, 1, 1, 1, 1, 1}, uint8(1), uint16(40), true)
	f.Add([]byte{1, 1, 90, 1, 1, 90, 1, 1, 90, 0, 9}, uint8(0), uint16(1200), true)
	f.Fuzz(func(t *testing.T, in []byte, keep uint8, budget uint16, summarize bool) {
		if len(in) > 200 {
			return
		}
		conv := fuzzConversation(in)
		if len(conv.Messages) == 0 || conv.Check() != nil {
			return
		}
		stored, _ := json.Marshal(conv)
		policy := agent.ContextPolicy{KeepTurns: int(keep % 6), MaxBytes: int(budget)}
		if budget%3 == 1 {
			policy.MaxBytes, policy.MaxTokens = 0, int(budget)/4
		}
		limit := policy.MaxBytes
		if policy.MaxTokens > 0 {
			limit = policy.MaxTokens * 4
		}
		summary := ""
		if summarize {
			policy.Summarize = func(ctx context.Context, cut []agent.Message) (string, error) {
				if len(cut) == 0 {
					t.Error("Summarize asked for nothing")
				}
				if len(in)%2 == 0 {
					return "", errors.New("no summary today")
				}
				summary = fmt.Sprintf("%d messages summarized", len(cut))
				return summary, nil
			}
		}
		var cuts []agent.ContextCut
		tk := toolkit.New(toolkit.WithInlineObserver(toolkit.ObserverFunc(func(ev *events.Event) {
			if ev.Type == agent.EventContextCut {
				var c agent.ContextCut
				if err := json.Unmarshal(ev.Data, &c); err != nil {
					t.Error(err)
				}
				cuts = append(cuts, c)
			}
		})))
		defer tk.Close(context.Background())
		sess, _ := tk.Session("fuzz")
		var sent []agent.Message
		model := agent.ModelFunc(func(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
			sent = append([]agent.Message(nil), req.Messages...)
			return &agent.Reply{Text: "ok"}, nil
		})
		if _, err := agent.New(model, agent.WithContextPolicy(policy)).Run(context.Background(), sess, conv); err != nil {
			t.Fatal(err)
		}
		msgs := conv.Messages[:len(conv.Messages)-1] // without the answer
		if after, _ := json.Marshal(&agent.Conversation{System: conv.System, Messages: msgs}); string(after) != string(stored) {
			t.Fatalf("the stored conversation changed:\n%s\n%s", stored, after)
		}
		if err := (&agent.Conversation{Messages: sent}).Check(); err != nil {
			t.Fatalf("sent %s: %v", roles(sent), err)
		}
		rest := sent
		head := msgs[0].Role == agent.RoleUser
		if head {
			if !sameMessage(sent[0], msgs[0]) {
				t.Fatalf("sent begins with %+v, not the task", sent[0])
			}
			rest = sent[1:]
		}
		if len(rest) > 0 && summary != "" && rest[0].Text() == summary {
			rest = rest[1:]
		}
		tail := msgs[len(msgs)-len(rest):]
		cleared := 0
		for i := range rest {
			if sameMessage(rest[i], tail[i]) {
				continue
			}
			if rest[i].Role != agent.RoleTool || rest[i].CallID != tail[i].CallID || !strings.HasPrefix(rest[i].Text(), "[tool result cleared") {
				t.Fatalf("sent message %d is %+v, conversation's %+v", i, rest[i], tail[i])
			}
			cleared++
		}
		start := 0
		if head {
			start = 1
		}
		if len(tail) > 0 && len(msgs)-len(tail) > start && tail[0].Role == agent.RoleTool {
			t.Fatal("the sent history's tail begins with a tool result")
		}
		if turns := countTurns(rest); policy.KeepTurns > 0 && turns > policy.KeepTurns {
			t.Errorf("%d turns sent, KeepTurns %d", turns, policy.KeepTurns)
		}
		size := agent.MessageBytes(sent...)
		if limit > 0 && size > limit && smallest(msgs) <= limit {
			t.Errorf("sent %d bytes, budget %d, and %d bytes would do", size, limit, smallest(msgs))
		}
		dropped := len(msgs) - start - len(rest)
		cut := dropped > 0 || cleared > 0
		if cut != (len(cuts) == 1) || len(cuts) > 1 {
			t.Fatalf("cut %v (%d of %d sent, %d dropped, %d cleared), %d context_cut events", cut, len(sent), len(msgs), dropped, cleared, len(cuts))
		}
		if cut {
			if c := cuts[0]; c.Sent != len(sent) || c.Dropped != dropped || c.Cleared != cleared || c.BytesAfter != size || c.BytesBefore != agent.MessageBytes(msgs...) || c.Messages != len(msgs) {
				t.Errorf("context_cut %+v; sent %d messages, %d bytes, %d cleared", c, len(sent), size, cleared)
			}
		}
	})
}

// fuzzConversation writes a conversation from in, one message (with its
// results) per few bytes.
func fuzzConversation(in []byte) *agent.Conversation {
	pos := 0
	next := func() int {
		if pos >= len(in) {
			return 0
		}
		pos++
		return int(in[pos-1])
	}
	conv := &agent.Conversation{System: "sys"}
	id := 0
	for pos < len(in) {
		switch next() % 3 {
		case 0:
			conv.Add(agent.UserText(strings.Repeat("u", next())))
		case 1:
			a := agent.Message{Role: agent.RoleAssistant, Content: []events.Part{events.Text(strings.Repeat("a", next()%50))}}
			for range next() % 4 {
				id++
				a.Calls = append(a.Calls, toolkit.Call{ID: fmt.Sprintf("c%d", id), Name: "t", Args: json.RawMessage(`{}`)})
			}
			conv.Add(a)
			for _, c := range a.Calls {
				r := agent.Message{Role: agent.RoleTool, CallID: c.ID, Tool: c.Name, IsError: next()%5 == 0}
				switch n := next(); n % 3 {
				case 0:
					r.Content = []events.Part{events.Text(strings.Repeat("r", n*4))}
				case 1:
					r.Content = []events.Part{{Type: events.PartJSON, JSON: json.RawMessage(fmt.Sprintf(`[%d]`, n))}}
				case 2:
					r.Content = []events.Part{{Type: events.PartBinary, Data: make([]byte, n), MediaType: "image/png"}}
				}
				conv.Add(r)
			}
		case 2:
			conv.Add(agent.Message{Role: agent.RoleAssistant, Content: []events.Part{events.Text(strings.Repeat("w", next()))}})
		}
	}
	return conv
}

func sameMessage(a, b agent.Message) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// countTurns counts the messages that begin a turn (all but tool results).
func countTurns(msgs []agent.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role != agent.RoleTool {
			n++
		}
	}
	return n
}

// smallest is the size of the smallest history the policy's rules allow
// for msgs: the task, and the last turn with its results cleared when
// that makes them smaller.
func smallest(msgs []agent.Message) int {
	last := len(msgs) - 1
	for last > 0 && msgs[last].Role == agent.RoleTool {
		last--
	}
	n := agent.MessageBytes(msgs[last])
	if msgs[0].Role == agent.RoleUser && last > 0 {
		n += agent.MessageBytes(msgs[0])
	}
	for _, m := range msgs[last+1:] {
		note := m
		note.Content = []events.Part{events.Text(fmt.Sprintf("[tool result cleared to fit the context: %d bytes]", agent.MessageBytes(m)-16-len(m.CallID)-len(m.Tool)))}
		n += min(agent.MessageBytes(m), agent.MessageBytes(note))
	}
	return n
}
