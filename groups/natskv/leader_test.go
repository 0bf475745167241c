package natskv_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/groups/natskv"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
)

// TestReadsFromTheLeader: Load and Update read the session's state from
// the leader of the bucket's stream, never with a direct get, which any
// replica answers with what it has applied: after a node failure a
// replica answered with the state from before an acknowledged Update
// (TestClusterWorkerNodeDies and TestClusterAgentNodeDies in remote read
// "notes" after "notes" and "extra" had been written, about one run in
// five). The requests are counted on the server's API subjects.
func TestReadsFromTheLeader(t *testing.T) {
	bus := natstest.Bus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js, err := jetstream.New(bus.Conn())
	if err != nil {
		t.Fatal(err)
	}
	st, err := natskv.New(ctx, js, "lead")
	if err != nil {
		t.Fatal(err)
	}
	watch := natstest.WatchAPI(t, bus)
	if _, err := st.Update(ctx, "conv", func(map[string]bool) (map[string]bool, error) { return map[string]bool{"notes": true}, nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Update(ctx, "conv", func(m map[string]bool) (map[string]bool, error) { m["extra"] = true; return m, nil }); err != nil {
		t.Fatal(err)
	}
	got, err := st.Load(ctx, "conv")
	if err != nil || !got["notes"] || !got["extra"] {
		t.Fatalf("Load after two updates: %v %v", got, err)
	}
	if missing, err := st.Load(ctx, "nobody"); err != nil || missing != nil {
		t.Fatalf("Load of a session never stored: %v %v", missing, err)
	}
	nd, nl := watch.Counts(t)
	if nd != 0 || nl < 4 {
		t.Errorf("%d direct gets and %d leader reads for two updates and two loads; want none and at least 4", nd, nl)
	}
}
