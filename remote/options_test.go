package remote_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/remote"
)

// TestServeRefusesBadBounds: a bound that cannot work is an error from
// Serve that names the option, and nothing is served: a worker that runs
// no call at once, a negative queue, results kept for no time at all. The
// struct options took a zero or negative value as a default (or as "none"
// for MaxQueued) without a word.
func TestServeRefusesBadBounds(t *testing.T) {
	bus := natstest.Bus(t)
	nc := conn(t, bus)
	for _, tc := range []struct {
		opt  remote.WorkerOption
		want string
	}{
		{remote.WithMaxInFlight(0), "WithMaxInFlight(0)"},
		{remote.WithMaxQueued(-1), "WithMaxQueued(-1)"},
		{remote.WithMaxQueuedBytes(-1), "WithMaxQueuedBytes(-1)"},
		{remote.WithKeepResults(0), "WithKeepResults(0s)"},
	} {
		w, err := remote.Serve(nc, workerKit(t, nil), tc.opt)
		if err == nil {
			_ = w.Stop(context.Background())
			t.Fatalf("%s: Serve returned no error", tc.want)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Serve's error %q does not name %s", err, tc.want)
		}
	}
	// Nothing was left serving: discovery finds no worker.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c := remote.NewClient(conn(t, bus), remote.WithDiscoverWait(300*time.Millisecond))
	defer c.Close()
	if tools, err := c.Discover(ctx); err != nil || len(tools) != 0 {
		t.Fatalf("after the refusals, Discover found %d tools (%v)", len(tools), err)
	}
	// WithMaxQueued(0) is a bound (no call waits), not an error.
	w, err := remote.Serve(nc, workerKit(t, nil), remote.WithMaxQueued(0))
	if err != nil {
		t.Fatalf("WithMaxQueued(0): %v", err)
	}
	if s := w.Stats(); s.MaxQueued != 0 {
		t.Errorf("WithMaxQueued(0): the worker's MaxQueued is %d", s.MaxQueued)
	}
	_ = w.Stop(context.Background())
}
