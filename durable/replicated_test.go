package durable_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolstream/toolstream/durable"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

// TestConflictOnAReplicatedBucket: on a bucket kept on three servers, a
// change that loses a race with another (the record changed between its
// read and its compare-and-set) is made again on the new record, as on a
// single server: a replicated stream refuses it with its own error code
// (10164, where a single server says 10071), which the store's writes
// report as a revision mismatch either way.
func TestConflictOnAReplicatedBucket(t *testing.T) {
	cl := natstest.NewCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := durable.New(ctx, cl.JetStream(t, 0), "", durable.WithReplicas(3))
	if err != nil {
		t.Fatal(err)
	}
	other, err := durable.New(ctx, cl.JetStream(t, 1), "", durable.WithReplicas(3))
	if err != nil {
		t.Fatal(err)
	}
	tk := testutil.Kit(t)
	testutil.Add(t, tk, toolkit.MustTool(toolkit.Spec{Name: "look", ReadOnly: true}, func(context.Context, struct{}) (string, error) { return "looked", nil }))
	if err := tk.Use(st.Interceptor()); err != nil {
		t.Fatal(err)
	}
	if r := testutil.Run(t, tk, "conv", testutil.Call("c1", "look", `{}`))[0]; r.State != events.StateSuccess {
		t.Fatalf("c1: %s %q", r.State, r.Text())
	}
	tries := 0
	err = st.Change(ctx, "conv", "c1", func(r *durable.Record) bool {
		tries++
		if tries == 1 { // another process changes the record first
			if err := other.Change(ctx, "conv", "c1", func(r *durable.Record) bool { r.Reason = "other"; return true }); err != nil {
				t.Fatal(err)
			}
		}
		r.Owner = "this"
		return true
	})
	if err != nil || tries != 2 {
		t.Fatalf("a change that lost a race: %v after %d tries; want it made again on the new record", err, tries)
	}
	rec, err := st.Get(ctx, "conv", "c1")
	if err != nil || rec.Owner != "this" || rec.Reason != "other" {
		t.Fatalf("the record: %+v %v; want both changes", rec, err)
	}
}
