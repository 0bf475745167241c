package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// A long run whose tool results are large: the model is sent the task,
// a summary of what was dropped and the last two turns, with old results
// cleared past 3000 bytes; the stored conversation stays whole, and the
// context_cut events say what each request left out.
func ExampleWithContextPolicy() {
	ctx := context.Background()
	tk := toolkit.New(toolkit.WithInlineObserver(toolkit.ObserverFunc(func(ev *events.Event) {
		if ev.Type == agent.EventContextCut {
			var c agent.ContextCut
			_ = json.Unmarshal(ev.Data, &c)
			fmt.Printf("turn %d: %d of %d messages sent, %d dropped, %d results cleared, %d -> %d bytes\n",
				c.Turn, c.Sent, c.Messages, c.Dropped, c.Cleared, c.BytesBefore, c.BytesAfter)
		}
	})))
	defer tk.Close(ctx)
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "read", Description: "Reads a chapter."},
		func(ctx context.Context, in struct {
			Chapter int `json:"chapter"`
		}) (string, error) {
			return fmt.Sprintf("Chapter %d. ", in.Chapter) + strings.Repeat("Words. ", 200), nil
		}))

	turn := 0
	model := agent.ModelFunc(func(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
		if turn++; turn > 4 {
			var seen []string
			for _, m := range req.Messages {
				seen = append(seen, fmt.Sprintf("%s %.60q", m.Role, m.Text()))
			}
			return &agent.Reply{Text: "I was sent:\n" + strings.Join(seen, "\n")}, nil
		}
		args := json.RawMessage(fmt.Sprintf(`{"chapter":%d}`, turn))
		return &agent.Reply{Calls: []toolkit.Call{{ID: fmt.Sprint("call_", turn), Name: "read", Args: args}}}, nil
	})

	loop := agent.New(model, agent.WithContextPolicy(agent.ContextPolicy{
		KeepTurns: 2,    // the task, then the last two turns
		MaxBytes:  3000, // old results cleared past it, oldest first
		Summarize: func(ctx context.Context, cut []agent.Message) (string, error) {
			return fmt.Sprintf("(%d earlier messages: chapters read)", len(cut)), nil // a model call, usually
		},
	}))
	sess, _ := tk.Session("book")
	conv := agent.NewConversation("You read books.", "Read the book, chapter by chapter.")
	out, err := loop.Run(ctx, sess, conv)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Answer)
	fmt.Println("stored:", len(conv.Messages), "messages")
	// Output:
	// turn 3: 5 of 5 messages sent, 0 dropped, 1 results cleared, 3002 -> 1643 bytes
	// turn 4: 6 of 7 messages sent, 2 dropped, 1 results cleared, 4478 -> 1694 bytes
	// turn 5: 6 of 9 messages sent, 4 dropped, 1 results cleared, 5954 -> 1694 bytes
	// I was sent:
	// user "Read the book, chapter by chapter."
	// user "(4 earlier messages: chapters read)"
	// assistant ""
	// tool "[tool result cleared to fit the context: 1411 bytes]"
	// assistant ""
	// tool "Chapter 4. Words. Words. Words. Words. Words. Words. Words. "
	// stored: 10 messages
}
