package durable_test

import (
	"context"
	"fmt"
	"testing"
	"time"

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
	js := natstest.JetStream(t)
	ctx := context.Background()
	first := startAgent(t, js)
	const n = 20
	var batches []*toolkit.Batch
	for i := range n {
		batches = append(batches, first.sess.Start(ctx, []toolkit.Call{testutil.Call(fmt.Sprint("q", i), "ask", `{}`)}))
	}
	for deadline := time.Now().Add(5 * time.Second); len(first.sess.Suspended()) < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d calls suspended", len(first.sess.Suspended()), n)
		}
	}
	first.close() // at once: the observer may not have recorded them all
	for _, b := range batches {
		if r := b.Wait()[0]; r.State != toolkit.StateInterrupted {
			t.Fatalf("%s: %s %q", r.Call.ID, r.State, r.Text())
		}
	}
	pending, err := first.store.Pending(ctx, "conv")
	if err != nil || len(pending) != n {
		t.Fatalf("%d calls pending of %d, %v", len(pending), n, err)
	}
	for _, rec := range pending {
		if rec.Reason != "external" {
			t.Fatalf("pending %+v", rec)
		}
	}
	if err := first.store.Answer(ctx, "conv", "q19", nil, "no"); err != nil {
		t.Fatal(err)
	}
}

// TestStoppedRightAfterAsking: the same for calls that wait for approval.
func TestStoppedRightAfterAsking(t *testing.T) {
	js := natstest.JetStream(t)
	edits.paths = nil
	ctx := context.Background()
	first := startApprovals(t, js)
	const n = 20
	var batches []*toolkit.Batch
	for i := range n {
		batches = append(batches, first.sess.Start(ctx, []toolkit.Call{testutil.Call(fmt.Sprint("e", i), "edit", `{"path":"a.txt"}`)}))
	}
	for deadline := time.Now().Add(5 * time.Second); len(first.perms.Pending("conv")) < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d calls asked about", len(first.perms.Pending("conv")), n)
		}
	}
	first.close() // at once: the observer may not have recorded them all
	for _, b := range batches {
		if r := b.Wait()[0]; r.State != toolkit.StateInterrupted {
			t.Fatalf("%s: %s %q", r.Call.ID, r.State, r.Text())
		}
	}
	pending, err := first.store.Pending(ctx, "conv")
	if err != nil || len(pending) != n {
		t.Fatalf("%d calls pending of %d, %v", len(pending), n, err)
	}
	for _, rec := range pending {
		if rec.Reason != "approval" {
			t.Fatalf("pending %+v", rec)
		}
	}
	if err := first.store.Approve(ctx, "conv", "e19", nil); err != nil {
		t.Fatal(err)
	}
}
