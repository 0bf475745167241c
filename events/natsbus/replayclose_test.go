package natsbus_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
)

// TestReplayStopAfterClose: a replay stopped after its bus closed (a
// subscriber that outlives the bus, an rx observable whose context ends
// later) returns at once instead of waiting for a consumer that can no
// longer report.
func TestReplayStopAfterClose(t *testing.T) {
	ctx := context.Background()
	bus, err := natsbus.Open(ctx, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	if err != nil {
		t.Fatal(err)
	}
	stop, err := bus.Replay(ctx, bus.Subjects().All(), 0, func(uint64, *events.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.Close(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() {
		stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("stop did not return after the bus closed")
	}
}
