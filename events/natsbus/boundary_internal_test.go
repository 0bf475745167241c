package natsbus

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events"
)

// TestSizesAtTheLimit: deltas whose JSON is the largest a message takes,
// one byte less, and one to three bytes more, ending in characters of one
// to four bytes and in characters JSON escapes, reach a subscriber whole:
// every message fits the max payload and the deltas add up to the exact
// text, in order, with gap-free sequence numbers.
func TestSizesAtTheLimit(t *testing.T) {
	ctx := context.Background()
	bus, err := Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close(ctx)
	payload := int(bus.Conn().MaxPayload())
	got := make(chan *nats.Msg, 1024)
	sub, err := bus.Conn().ChanSubscribe(bus.Subjects().Session("lim"), got)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	sub.SetPendingLimits(-1, -1)
	bus.Conn().Flush()
	p := bus.Publisher()
	n := 0
	for _, end := range []string{"x", "é", "日", "😀", "\u2028", "\"", "\n", "\x01"} {
		for over := -1; over <= 3; over++ {
			n++
			call := fmt.Sprintf("c%d", n)
			ev := &events.Event{Version: events.Version, Type: events.TypeDelta, Session: "lim", Call: call, Tool: "t", Seq: 1, Time: time.Now()}
			ev.Delta = &events.Part{Type: events.PartText, Text: end}
			pad := payload + over - len(events.AppendJSON(nil, ev))
			text := strings.Repeat("a", pad) + end
			ev.Delta.Text = text
			if l := len(events.AppendJSON(nil, ev)); l != payload+over {
				t.Fatalf("built %d bytes, want %d", l, payload+over)
			}
			res := &events.Event{Version: events.Version, Type: events.TypeResult, Session: "lim", Call: call, Tool: "t", Seq: 2, Time: ev.Time,
				Result: &events.Result{State: events.StateSuccess, Content: []events.Part{events.Text(text)}}}
			p.Observe(ev)
			p.Observe(res)
			if err := p.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			bus.Conn().Flush()
			var evs []*events.Event
			for done := false; !done; {
				select {
				case m := <-got:
					if len(m.Data) > payload {
						t.Fatalf("%q+%d: a message of %d bytes", end, over, len(m.Data))
					}
					e, err := events.Decode(m.Data)
					if err != nil {
						t.Fatal(err)
					}
					evs = append(evs, e)
					done = e.Type == events.TypeResult
				case <-time.After(10 * time.Second):
					t.Fatalf("%q+%d: %d events arrived; stats %+v", end, over, len(evs), p.Stats())
				}
			}
			var r events.Reassembler
			for i, e := range evs {
				if e.Seq != uint64(i+1) || e.Call != call {
					t.Fatalf("%q+%d: event %d is %s seq %d", end, over, i, e.Call, e.Seq)
				}
				if err := r.Add(e); err != nil {
					t.Fatal(err)
				}
			}
			content := r.Content()
			if len(content) != 1 || content[0].Text != text {
				t.Fatalf("%q+%d: the deltas add up to %d parts, not the text", end, over, len(content))
			}
			last := evs[len(evs)-1].Result
			if !last.ContentOmitted && !slices.EqualFunc(last.Content, content, events.Part.Equal) {
				t.Fatalf("%q+%d: the result's content differs", end, over)
			}
		}
	}
	if s := p.Stats(); s.Undelivered != 0 || s.Cut != 0 {
		t.Fatalf("stats %+v", s)
	}
}
