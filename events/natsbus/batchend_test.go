package natsbus_test

import (
	"context"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

// TestBatchEndOnNATS: with WithBatchEndEvents, the publisher sends a
// session-level batch_end event to <prefix>.<session>._.batch_end after the
// batch's result events, with each call's state, in call order.
func TestBatchEndOnNATS(t *testing.T) {
	bus := natstest.Bus(t)
	tk := kit(t, bus, toolkit.WithBatchEndEvents())
	col := subscribe(t, bus, "toolstream.be.>")
	only := subscribe(t, bus, bus.Subjects().AllOfType(events.TypeBatchEnd))
	sess, _ := tk.Session("be")
	b := sess.Start(context.Background(), []toolkit.Call{
		{ID: "s1", Name: "streamer", Args: []byte(`{"lines":3}`)},
		{ID: "f1", Name: "failer", Args: []byte(`{}`)},
		{ID: "s2", Name: "streamer", Args: []byte(`{"lines":1}`)},
	})
	b.Wait()
	evs := col.waitUntil(t, "the batch_end event", func(evs []*events.Event) bool { return countType(evs, events.TypeBatchEnd) == 1 })
	last := evs[len(evs)-1]
	if last.Type != events.TypeBatchEnd || countType(evs, events.TypeResult) != 3 {
		t.Fatalf("the last of %d events is %s; %d results before it", len(evs), last.Type, countType(evs, events.TypeResult))
	}
	body, err := events.DecodeBatchEnd(last)
	if err != nil {
		t.Fatal(err)
	}
	if body.Batch != b.ID() || len(body.Calls) != 3 || body.Stop != nil {
		t.Fatalf("batch_end %+v", body)
	}
	for i, want := range []struct {
		id    string
		state events.State
	}{{"s1", events.StateSuccess}, {"f1", events.StateError}, {"s2", events.StateSuccess}} {
		if c := body.Calls[i]; c.Call != want.id || c.State != want.state || (want.state == events.StateError) != (c.Error != "") {
			t.Fatalf("call %d: %+v", i, c)
		}
	}
	only.waitUntil(t, "batch_end on its own subject", func(evs []*events.Event) bool { return len(evs) == 1 })
}
