package durable_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
)

// TestReadsFromTheLeader: the store reads calls and conversations from the
// leader of the bucket's stream, never with a direct get, which any
// replica answers with what it has applied, possibly from before a write
// already acknowledged (a finished call read as running, a conversation a
// turn behind). The requests are counted on the server's API subjects.
func TestReadsFromTheLeader(t *testing.T) {
	bus := natstest.Bus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js, err := jetstream.New(bus.Conn())
	if err != nil {
		t.Fatal(err)
	}
	st := newStore(t, js)
	watch := natstest.WatchAPI(t, bus)
	conv := &agent.Conversation{}
	conv.Messages = append(conv.Messages, agent.UserText("hello"))
	if err := st.SaveConversation(ctx, "s", conv); err != nil {
		t.Fatal(err)
	}
	back, err := st.LoadConversation(ctx, "s")
	if err != nil || back == nil || len(back.Messages) != 1 {
		t.Fatalf("LoadConversation: %+v %v", back, err)
	}
	if _, err := st.Get(ctx, "s", "c1"); err != jetstream.ErrKeyNotFound {
		t.Fatalf("Get of a call never stored: %v", err)
	}
	nd, nl := watch.Counts(t)
	if nd != 0 || nl < 2 {
		t.Errorf("%d direct gets and %d leader reads for a load and a get; want none and at least 2", nd, nl)
	}
}
