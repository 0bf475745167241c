package remote_test

import (
	"context"
	"strings"
	"testing"

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
