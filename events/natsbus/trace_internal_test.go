package natsbus

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events"
	wirenames "github.com/toolstream/toolstream/internal/wire"
)

// TestTracedEventAtTheLimit: a traced event whose JSON is as large as the
// publisher allows, with the longest trace state it sends, fits in one
// message with its headers (it was given up with "maximum payload exceeded":
// the room kept for the trace headers was 4 bytes short of what nats.go
// writes).
func TestTracedEventAtTheLimit(t *testing.T) {
	ctx := context.Background()
	bus, err := Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close(ctx)
	got := make(chan *nats.Msg, 16)
	sub, err := bus.Conn().ChanSubscribe(bus.Subjects().Session("tr"), got)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	bus.Conn().Flush()

	trace := events.TraceContext{
		Parent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		State:  "k=" + strings.Repeat("v", 510),
	}
	payload := int(bus.Conn().MaxPayload())
	for _, over := range []int{-1, 0} { // one byte under the limit, and at it
		p := bus.Publisher()
		before := p.Stats()
		ev := &events.Event{Version: events.Version, Type: events.TypeDelta, Session: "tr", Call: "c", Tool: "t", Seq: 1,
			Time: time.Now(), Trace: trace}
		ev.Delta = &events.Part{Type: events.PartText}
		limit := payload - traceRoom(trace)
		ev.Delta.Text = strings.Repeat("x", limit+over-len(events.AppendJSON(nil, ev)))
		if n := len(events.AppendJSON(nil, ev)); n != limit+over {
			t.Fatalf("the event is %d bytes, want %d", n, limit+over)
		}
		p.Observe(ev)
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		bus.Conn().Flush()
		after := p.Stats()
		if after.Undelivered != before.Undelivered || after.Split != before.Split {
			t.Fatalf("an event of %d bytes (limit %d): stats %+v", limit+over, limit, after)
		}
		select {
		case m := <-got:
			if m.Header.Get(wirenames.HeaderTraceState) != trace.State || len(m.Data) != limit+over {
				t.Fatalf("received %d bytes, trace state %d bytes", len(m.Data), len(m.Header.Get(wirenames.HeaderTraceState)))
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the event did not arrive")
		}
	}
}
