package durable_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/durable"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

// TestResumeTruncatedCall: the model's reply was cut at the output token
// limit before it wrote the arguments of its last call (write, whose
// parameters are all optional); the loop does not run such a call. The
// process stops while the turn's other call runs, and a new one resumes
// the turn: the cut call must not run with {} there either (no interceptor
// saw it, so the bucket has no result to replay), and its answer is the
// loop's refusal.
func TestResumeTruncatedCall(t *testing.T) {
	js := natstest.JetStream(t)
	var writes atomic.Int64
	ctx := context.Background()
	started := make(chan struct{})
	st1, tk1, sess1 := loopProcess(t, js, &writes, true, started)
	conv := agent.NewConversation("", "do the work")
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	model := agent.ModelFunc(func(context.Context, *agent.Request) (*agent.Reply, error) {
		return &agent.Reply{Finish: agent.FinishLength, Calls: []toolkit.Call{
			{ID: "s1", Name: "slow", Args: []byte(`{}`)}, {ID: "w1", Name: "write"}}}, nil
	})
	go func() {
		defer close(done)
		_, _ = agent.New(model, st1.SaveEachTurn("conv", conv, func(err error) { t.Error(err) })).Run(runCtx, sess1, conv)
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the turn's calls never ran")
	}
	stop() // the process goes down while slow runs
	<-done
	_ = tk1.Close(ctx)
	if writes.Load() != 0 {
		t.Fatalf("the cut call ran %d times in the first process", writes.Load())
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
	if writes.Load() != 0 {
		t.Fatalf("the cut call ran %d times when the turn resumed", writes.Load())
	}
	var w1 *agent.Message
	for i, m := range saved.Messages {
		if m.Role == agent.RoleTool && m.CallID == "w1" {
			w1 = &saved.Messages[i]
		}
	}
	if w1 == nil || !w1.IsError || !strings.Contains(w1.Text(), agent.ErrTruncatedCall.Error()+" before its arguments were written") {
		t.Fatalf("the cut call's answer: %+v", w1)
	}
}

// TestSaveConversationWithInvalidArguments: a model that writes arguments
// that are not JSON gets the toolkit's argument error, and the turn's
// conversation is saved all the same (json.Marshal refused such arguments
// as a json.RawMessage: SaveEachTurn failed for that turn and every later
// one) and loads back with the arguments as written.
func TestSaveConversationWithInvalidArguments(t *testing.T) {
	js := natstest.JetStream(t)
	var writes atomic.Int64
	ctx := context.Background()
	st, _, sess := loopProcess(t, js, &writes, false, nil)
	turn := 0
	model := agent.ModelFunc(func(context.Context, *agent.Request) (*agent.Reply, error) {
		turn++
		if turn == 1 {
			return &agent.Reply{Finish: agent.FinishToolCalls, Calls: []toolkit.Call{{ID: "w1", Name: "write", Args: []byte(`{"x":`)}}}, nil
		}
		return &agent.Reply{Finish: agent.FinishStop, Text: "done"}, nil
	})
	conv := agent.NewConversation("", "do the work")
	var saveErr error
	if _, err := agent.New(model, st.SaveEachTurn("inv", conv, func(err error) { saveErr = err })).Run(ctx, sess, conv); err != nil {
		t.Fatal(err)
	}
	if saveErr != nil {
		t.Fatalf("the turn's conversation was not saved: %v", saveErr)
	}
	if writes.Load() != 0 || !conv.Messages[2].IsError || !strings.Contains(conv.Messages[2].Text(), "JSON") {
		t.Fatalf("the call's result: %+v (%d writes)", conv.Messages[2], writes.Load())
	}
	if err := st.SaveConversation(ctx, "inv", conv); err != nil {
		t.Fatal(err)
	}
	back, err := st.LoadConversation(ctx, "inv")
	if err != nil || back == nil || string(back.Messages[1].Calls[0].Args) != `{"x":` {
		t.Fatalf("loaded %+v, %v", back, err)
	}
}
