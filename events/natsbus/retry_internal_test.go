package natsbus

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/events"
)

// TestRetryIsStoredOnce: a durable publish whose acknowledgement was lost is
// retried with the same Nats-Msg-Id, and the stream keeps one copy.
func TestRetryIsStoredOnce(t *testing.T) {
	ctx := context.Background()
	bus, err := Open(ctx, WithDurable(Durable{Memory: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close(ctx)
	p := bus.Publisher()
	ev := &events.Event{Version: events.Version, Type: events.TypeResult, Session: "s", Call: "c", Seq: 1, Time: time.Now(),
		Result: &events.Result{State: events.StateSuccess, Content: []events.Part{events.Text("ok")}}}
	p.Observe(ev)
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	<-bus.js.PublishAsyncComplete()

	// The same message, as the error handler would hand it back after a lost ack.
	w := p.newWire(ev)
	m := nats.NewMsg(w.subject(ev.Type))
	m.Data = events.AppendJSON(nil, &events.Event{Version: events.Version, Type: events.TypeResult, Session: "s", Call: "c", Seq: 1, Time: ev.Time, Result: ev.Result})
	stream, err := bus.js.Stream(ctx, bus.Stream())
	if err != nil {
		t.Fatal(err)
	}
	stored, err := stream.GetLastMsgForSubject(ctx, w.subject(ev.Type))
	if err != nil {
		t.Fatal(err)
	}
	id := stored.Header.Get(jetstream.MsgIDHeader)
	if !strings.HasPrefix(id, "s.c.") || !strings.HasSuffix(id, ".1") {
		t.Fatalf("Nats-Msg-Id %q is not <session>.<call>.<nonce>.<seq>", id)
	}
	m.Header.Set(jetstream.MsgIDHeader, id)
	p.retryMu.Lock()
	p.inflight[m] = struct{}{} // as it was, until its acknowledgement was lost
	p.retryMu.Unlock()
	p.retry(m, nats.ErrTimeout)
	p.publishRetries()
	<-bus.js.PublishAsyncComplete()
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 || p.Stats().Retried != 1 {
		t.Fatalf("%d messages stored, %d retried: a retry must be stored once", info.State.Msgs, p.Stats().Retried)
	}
}
