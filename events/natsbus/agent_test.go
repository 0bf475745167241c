package natsbus_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

// TestAgentOnNATS: the agent a batch runs for (toolkit.WithAgent) is in
// every event a subscriber gets from NATS, including the pieces of an event
// too large for one message, and absent from the events of batches that
// named none.
func TestAgentOnNATS(t *testing.T) {
	bus := natstest.Bus(t)
	tk := kit(t, bus)
	big := strings.Repeat("x", 3*int(bus.Conn().MaxPayload())/2)
	if err := tk.Add(toolkit.MustTool(toolkit.Spec{Name: "big"}, func(context.Context, struct{}) (string, error) { return big, nil })); err != nil {
		t.Fatal(err)
	}
	col := subscribe(t, bus, bus.Subjects().Session("conv"))
	sess, _ := tk.Session("conv")
	sub := toolkit.WithAgent(context.Background(), "researcher")
	rs := sess.Run(sub, append(callsFor(2, 5), toolkit.Call{ID: "big", Name: "big"}, toolkit.Call{ID: "f", Name: "failer"}))
	sess.Run(context.Background(), []toolkit.Call{{ID: "parent", Name: "failer"}})
	if err := bus.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	evs := col.waitUntil(t, "all results", func(evs []*events.Event) bool { return countType(evs, events.TypeResult) == len(rs)+1 })
	pieces := 0
	for _, ev := range evs {
		want := "researcher"
		if ev.Call == "parent" {
			want = ""
		}
		if ev.Agent != want {
			t.Errorf("%s %s #%d: agent %q, want %q", ev.Call, ev.Type, ev.Seq, ev.Agent, want)
		}
		if ev.Call == "big" && ev.Type == events.TypeDelta {
			pieces++
		}
	}
	if pieces < 2 {
		t.Errorf("the big result went out in %d delta(s); the test wants it cut into pieces", pieces)
	}
}
