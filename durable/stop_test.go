package durable_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/toolstream/toolstream/durable"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

// TestStoppedRightAfterSuspending: external calls that wait when the
// process stops stay pending, even when it stops before the store's
// (asynchronous) observer has recorded their suspension. Before, the
// interrupted calls still "running" in the bucket had their records
// deleted: Pending missed them and an answer was refused ("no call").
func TestStoppedRightAfterSuspending(t *testing.T) {
	p := startAgent(t, natstest.JetStream(t))
	stopWhileWaiting(t, p.sess, p.store, func() int { return len(p.sess.Suspended()) }, p.close,
		func(i int) toolkit.Call { return testutil.Call(fmt.Sprint("q", i), "ask", `{}`) }, "external")
	if err := p.store.Answer(context.Background(), "conv", "q19", nil, "no"); err != nil {
		t.Fatal(err)
	}
}

// TestStoppedRightAfterAsking: the same for calls that wait for approval.
func TestStoppedRightAfterAsking(t *testing.T) {
	edits.paths = nil
	p := startApprovals(t, natstest.JetStream(t))
	stopWhileWaiting(t, p.sess, p.store, func() int { return len(p.perms.Pending("conv")) }, p.close,
		func(i int) toolkit.Call { return testutil.Call(fmt.Sprint("e", i), "edit", `{"path":"a.txt"}`) }, "approval")
	if err := p.store.Approve(context.Background(), "conv", "e19", nil); err != nil {
		t.Fatal(err)
	}
}

// stopWhileWaiting starts 20 one-call batches of call(i), waits until
// waiting counts them all, stops the process at once (the observer may not
// have recorded them all) and checks that every call ended interrupted and
// is pending in the store for reason.
func stopWhileWaiting(t *testing.T, sess *toolkit.Session, store *durable.Store, waiting func() int, stop func(), call func(i int) toolkit.Call, reason string) {
	t.Helper()
	ctx := context.Background()
	const n = 20
	var batches []*toolkit.Batch
	for i := range n {
		batches = append(batches, sess.Start(ctx, []toolkit.Call{call(i)}))
	}
	for deadline := time.Now().Add(5 * time.Second); waiting() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d calls waiting", waiting(), n)
		}
	}
	stop()
	for _, b := range batches {
		if r := b.Wait()[0]; r.State != events.StateInterrupted {
			t.Fatalf("%s: %s %q", r.Call.ID, r.State, r.Text())
		}
	}
	pending, err := store.Pending(ctx, "conv")
	if err != nil || len(pending) != n {
		t.Fatalf("%d calls pending of %d, %v", len(pending), n, err)
	}
	for _, rec := range pending {
		if rec.Reason != reason {
			t.Fatalf("pending %+v, want reason %q", rec, reason)
		}
	}
}
