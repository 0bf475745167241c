package durable_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/durable"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

// script is a model that asks for write+look, then write+slow, then
// answers; it reads where it is from the conversation.
func script(_ context.Context, req *agent.Request) (*agent.Reply, error) {
	tools := 0
	for _, m := range req.Messages {
		if m.Role == agent.RoleTool {
			tools++
		}
	}
	switch tools {
	case 0:
		return &agent.Reply{Finish: agent.FinishToolCalls, Calls: []toolkit.Call{
			{ID: "w1", Name: "write", Args: []byte(`{}`)}, {ID: "l1", Name: "look", Args: []byte(`{}`)}}}, nil
	case 2:
		return &agent.Reply{Finish: agent.FinishToolCalls, Calls: []toolkit.Call{
			{ID: "w2", Name: "write", Args: []byte(`{}`)}, {ID: "s2", Name: "slow", Args: []byte(`{}`)}}}, nil
	default:
		return &agent.Reply{Finish: agent.FinishStop, Text: "done"}, nil
	}
}

// loopProcess is an agent process running the loop on the shared bucket;
// its "slow" tool blocks until its context ends when hang is set.
// runUntilStopped runs conv in sess with st saving each turn, and stops
// the run (the process going down) once started is closed; never is what
// failed if it is not within 10 s.
func runUntilStopped(t *testing.T, st *durable.Store, sess *toolkit.Session, m agent.Model, conv *agent.Conversation, started <-chan struct{}, never string) {
	t.Helper()
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = agent.New(m, st.SaveEachTurn("conv", conv, func(err error) { t.Error(err) })).Run(runCtx, sess, conv)
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		stop()
		<-done
		t.Fatal(never)
	}
	stop()
	<-done
}

func loopProcess(t *testing.T, js jetstream.JetStream, writes *atomic.Int64, hang bool, started chan struct{}) (*durable.Store, *toolkit.Toolkit, *toolkit.Session) {
	t.Helper()
	st := newStore(t, js)
	tk := toolkit.New()
	no := false
	if err := tk.Add(
		toolkit.MustTool(toolkit.Spec{Name: "write", Idempotent: &no}, func(context.Context, struct{}) (int64, error) { return writes.Add(1), nil }),
		toolkit.MustTool(toolkit.Spec{Name: "look", ReadOnly: true}, func(context.Context, struct{}) (string, error) { return "looked", nil }),
		toolkit.MustTool(toolkit.Spec{Name: "slow", ReadOnly: true}, func(ctx context.Context, _ struct{}) (string, error) {
			if hang {
				close(started)
				<-ctx.Done()
				return "", ctx.Err()
			}
			return "slow done", nil
		}),
	); err != nil {
		t.Fatal(err)
	}
	if err := tk.Use(st.Interceptor()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tk.Close(context.Background()) })
	sess, err := tk.Session("conv")
	if err != nil {
		t.Fatal(err)
	}
	return st, tk, sess
}

// TestConversationResumes: the agent's process stops in the middle of a
// turn; a new process loads the conversation saved when the turn's calls
// started, resumes the turn (the call that had finished is not run again)
// and the loop finishes the run.
func TestConversationResumes(t *testing.T) {
	js := natstest.JetStream(t)
	var writes atomic.Int64
	ctx := context.Background()

	started := make(chan struct{})
	st1, tk1, sess1 := loopProcess(t, js, &writes, true, started)
	conv := agent.NewConversation("", "do the work")
	runUntilStopped(t, st1, sess1, agent.ModelFunc(script), conv, started, "the second turn never ran") // the process goes down in the middle of turn 2
	_ = tk1.Close(ctx)
	if writes.Load() != 2 {
		t.Fatalf("%d writes before the stop, want 2", writes.Load())
	}

	st2, _, sess2 := loopProcess(t, js, &writes, false, nil)
	saved, err := st2.LoadConversation(ctx, "conv")
	if err != nil || saved == nil {
		t.Fatalf("saved conversation: %v %v", saved, err)
	}
	n, err := durable.Resume(ctx, sess2, saved)
	if err != nil || n != 2 {
		t.Fatalf("resume answered %d calls: %v", n, err)
	}
	out, err := agent.New(agent.ModelFunc(script)).Run(ctx, sess2, saved)
	if err != nil || out.Answer != "done" {
		t.Fatalf("the resumed run: %+v %v", out, err)
	}
	if writes.Load() != 2 {
		t.Fatalf("%d writes in all, want 2: a finished call ran again", writes.Load())
	}
	var texts []string
	for _, m := range saved.Messages {
		if m.Role == agent.RoleTool {
			texts = append(texts, m.CallID+"="+m.Text())
		}
	}
	want := "w1=1 l1=looked w2=2 s2=slow done"
	if got := strings.Join(texts, " "); got != want {
		t.Fatalf("tool messages %q, want %q", got, want)
	}
}

// TestIDsReusedAcrossTurns: a model whose server numbers calls per reply
// (c0 every turn) under a durable store, which answers a call id it has a
// result for with that result. The second turn's call must run and get its
// own answer, not the first turn's stored one: the agent loop gives a call
// whose id the conversation already used a new id.
func TestIDsReusedAcrossTurns(t *testing.T) {
	js := natstest.JetStream(t)
	ctx := context.Background()
	st := newStore(t, js)
	tk := toolkit.New()
	defer tk.Close(ctx)
	if err := tk.Add(toolkit.MustTool(toolkit.Spec{Name: "echo"}, func(_ context.Context, in struct {
		Say string `json:"say"`
	}) (string, error) {
		return "said " + in.Say, nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := tk.Use(st.Interceptor()); err != nil {
		t.Fatal(err)
	}
	sess, _ := tk.Session("reuse")
	turn := 0
	model := agent.ModelFunc(func(context.Context, *agent.Request) (*agent.Reply, error) {
		turn++
		switch turn {
		case 1:
			return &agent.Reply{Finish: agent.FinishToolCalls, Calls: []toolkit.Call{{ID: "c0", Name: "echo", Args: []byte(`{"say":"one"}`)}}}, nil
		case 2:
			return &agent.Reply{Finish: agent.FinishToolCalls, Calls: []toolkit.Call{{ID: "c0", Name: "echo", Args: []byte(`{"say":"two"}`)}}}, nil
		default:
			return &agent.Reply{Finish: agent.FinishStop, Text: "done"}, nil
		}
	})
	conv := agent.NewConversation("", "echo twice")
	if _, err := agent.New(model).Run(ctx, sess, conv); err != nil {
		t.Fatal(err)
	}
	var answers []string
	for _, m := range conv.Messages {
		if m.Role == agent.RoleTool {
			answers = append(answers, toolkit.Result{Content: m.Content}.Text())
		}
	}
	if strings.Join(answers, ",") != "said one,said two" {
		t.Fatalf("tool answers %q, want the second turn's own", answers)
	}
}
