package remote_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// TestLargeStreamedResult: a tool that streams a result larger than one NATS
// message in many small deltas gives the agent all of it. The worker sends
// the deltas faster than the agent's engine emits them; the caller lost those
// more than 256 frames behind, and then, the result frame leaving the
// content out, failed the call ("some of its pieces were lost").
func TestLargeStreamedResult(t *testing.T) {
	bus := natstest.Bus(t)
	wk := testutil.Kit(t)
	const n = 1280 // 1.25 MiB in 1 KiB deltas
	chunk := strings.Repeat("x", 1023) + "\n"
	testutil.Add(t, wk, toolkit.MustTool(toolkit.Spec{Name: "dump", ReadOnly: true}, func(ctx context.Context, _ struct{}) (string, error) {
		em := stream.From(ctx)
		for range n {
			if err := em.Text(chunk); err != nil {
				return "", err
			}
		}
		return "", nil
	}))
	serve(t, bus, wk, remote.WorkerOptions{})
	c := remote.NewClient(conn(t, bus), remote.ClientOptions{})
	agent := testutil.Kit(t)
	testutil.Add(t, agent, discover(t, c, 1)...)
	r := testutil.Run(t, agent, "s", testutil.Call("c1", "dump", `{}`))[0]
	if r.State != toolkit.StateSuccess || r.Text() != strings.Repeat(chunk, n) {
		t.Fatalf("%s, %d bytes, %v", r.State, len(r.Text()), r.Err)
	}
}

// TestShortHeartbeat: a client asking for heartbeats more often than a
// worker sends them (10 ms at most) still waits for them: before, its
// LostAfter was computed from the interval asked for (2 ms × 5), no longer
// than the worker's 10 ms, and every call longer than that failed with
// ErrWorkerLost although the worker was alive.
func TestShortHeartbeat(t *testing.T) {
	bus := natstest.Bus(t)
	wk := testutil.Kit(t)
	testutil.Add(t, wk, toolkit.MustTool(toolkit.Spec{Name: "slow", ReadOnly: true}, func(ctx context.Context, _ struct{}) (string, error) {
		select {
		case <-time.After(150 * time.Millisecond):
			return "done", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}))
	serve(t, bus, wk, remote.WorkerOptions{})
	c := remote.NewClient(conn(t, bus), remote.ClientOptions{Heartbeat: 2 * time.Millisecond, MissedHeartbeats: 5})
	if c.LostAfter() < 5*10*time.Millisecond {
		t.Errorf("LostAfter %v: less than 5 of the worker's shortest heartbeats (10 ms)", c.LostAfter())
	}
	agent := testutil.Kit(t)
	testutil.Add(t, agent, discover(t, c, 1)...)
	r := testutil.Run(t, agent, "s", testutil.Call("c1", "slow", `{}`))[0]
	if r.State != toolkit.StateSuccess || r.Text() != "done" {
		t.Fatalf("%s %q", r.State, r.Text())
	}
}
