package natsbus_test

import (
	"context"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
)

// TestReplayStopDeletesConsumer: when stop returns, the replay's consumer
// is gone from the server, instead of staying there for the 5 minutes an
// ordered consumer waits idle, counting against the stream's limit of
// consumers (1,000 by default).
func TestReplayStopDeletesConsumer(t *testing.T) {
	bus := natstest.Bus(t, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	publishRaw(t, bus, "r", 2)
	for range 3 {
		got := make(chan uint64, 2)
		stop, err := bus.Replay(context.Background(), bus.Subjects().Session("r"), 0, func(seq uint64, _ *events.Event) { got <- seq })
		if err != nil {
			t.Fatal(err)
		}
		<-got
		<-got
		if n := consumers(t, bus); n != 1 {
			t.Fatalf("%d consumers during a replay", n)
		}
		stop()
		if n := consumers(t, bus); n != 0 {
			t.Fatalf("%d consumers after stop", n)
		}
	}
}
