package durable_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/durable"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

var steps = agent.NewState[[]string]("steps")

// stateModel notes step one, then calls slow, then notes step two, then
// answers; it reads where it is from the conversation.
func stateModel(_ context.Context, req *agent.Request) (*agent.Reply, error) {
	tools := 0
	for _, m := range req.Messages {
		if m.Role == agent.RoleTool {
			tools++
		}
	}
	switch tools {
	case 0:
		return &agent.Reply{Calls: []toolkit.Call{{ID: "n1", Name: "note", Args: []byte(`{"step":"one"}`)}}}, nil
	case 1:
		return &agent.Reply{Calls: []toolkit.Call{{ID: "s1", Name: "slow", Args: []byte(`{}`)}}}, nil
	case 2:
		return &agent.Reply{Calls: []toolkit.Call{{ID: "n2", Name: "note", Args: []byte(`{"step":"two"}`)}}}, nil
	default:
		return &agent.Reply{Text: "done"}, nil
	}
}

// stateProcess is an agent process whose tools keep their steps in the
// run's state: note adds one; slow blocks until its context ends when
// started is not nil, and otherwise lists the steps so far and adds its own.
func stateProcess(t *testing.T, st *durable.Store, started chan struct{}) *toolkit.Session {
	t.Helper()
	tk := toolkit.New()
	t.Cleanup(func() { _ = tk.Close(context.Background()) })
	note := toolkit.MustTool(toolkit.Spec{Name: "note"}, func(ctx context.Context, in struct {
		Step string `json:"step"`
	}) (string, error) {
		return "noted", steps.Update(ctx, func(s *[]string) { *s = append(*s, in.Step) })
	})
	slow := toolkit.MustTool(toolkit.Spec{Name: "slow", ReadOnly: true}, func(ctx context.Context, _ struct{}) (string, error) {
		if started != nil {
			close(started)
			<-ctx.Done()
			return "", ctx.Err()
		}
		before, _ := steps.Get(ctx)
		return "steps before: " + strings.Join(before, ","), steps.Update(ctx, func(s *[]string) { *s = append(*s, "slow") })
	})
	if err := tk.Add(note, slow); err != nil {
		t.Fatal(err)
	}
	if err := tk.Use(st.Interceptor()); err != nil {
		t.Fatal(err)
	}
	sess, err := tk.Session("conv")
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

// TestResumedRunSeesTheState: a tool writes the run's state; the process
// stops in a later turn; a new process loads the conversation saved when
// that turn's calls started, and the resumed call and the rest of the run
// read and extend the state the first process wrote.
func TestResumedRunSeesTheState(t *testing.T) {
	js := natstest.JetStream(t)
	ctx := context.Background()
	st1 := newStore(t, js)
	started := make(chan struct{})
	sess1 := stateProcess(t, st1, started)
	conv := agent.NewConversation("", "do the steps")
	runUntilStopped(t, st1, sess1, agent.ModelFunc(stateModel), conv, started, "slow never ran") // the process goes down while slow runs

	st2 := newStore(t, js)
	sess2 := stateProcess(t, st2, nil)
	saved, err := st2.LoadConversation(ctx, "conv")
	if err != nil || saved == nil {
		t.Fatalf("saved conversation: %v %v", saved, err)
	}
	if got := string(saved.State["steps"]); got != `["one"]` {
		t.Fatalf("the saved state: %s", got)
	}
	if n, err := durable.Resume(ctx, sess2, saved); err != nil || n != 1 {
		t.Fatalf("resume answered %d calls: %v", n, err)
	}
	if got := saved.Messages[len(saved.Messages)-1].Text(); got != "steps before: one" {
		t.Fatalf("the resumed call read %q", got)
	}
	out, err := agent.New(agent.ModelFunc(stateModel)).Run(ctx, sess2, saved)
	if err != nil || out.Answer != "done" {
		t.Fatalf("the resumed run: %+v %v", out, err)
	}
	if got := string(saved.State["steps"]); got != `["one","slow","two"]` {
		t.Fatalf("the state at the end: %s", got)
	}
	if err := st2.SaveConversation(ctx, "conv", saved); err != nil {
		t.Fatal(err)
	}
	if back, err := st2.LoadConversation(ctx, "conv"); err != nil || string(back.State["steps"]) != `["one","slow","two"]` {
		t.Fatalf("loaded back: %v %v", back, err)
	}
}
