// Package natstest opens real NATS buses for tests: an embedded server,
// closed when the test ends.
package natstest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/events/natsbus"
)

// Bus opens a bus (an embedded server unless the options say otherwise)
// closed at the end of the test.
func Bus(t testing.TB, opts ...natsbus.Option) *natsbus.Bus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := natsbus.Open(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("closing the bus: %v", err)
		}
	})
	return b
}

// JetStream returns a JetStream context on a new embedded server closed at
// the end of the test.
func JetStream(t testing.TB) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(Bus(t).Conn())
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// APIWatch counts the JetStream API requests a test makes on bus's server:
// direct gets (answered by any replica) and message gets (answered by the
// stream's leader).
type APIWatch struct {
	nc                      *nats.Conn
	from                    *nats.Conn // the bus's connection, which makes the requests
	direct, leader, barrier *nats.Subscription
}

// WatchAPI starts counting the requests made on bus's connection; the
// watching connection closes with the test.
func WatchAPI(t testing.TB, bus *natsbus.Bus) *APIWatch {
	t.Helper()
	nc, err := nats.Connect("", nats.InProcessServer(bus.Server()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	w := &APIWatch{nc: nc, from: bus.Conn()}
	if w.direct, err = nc.SubscribeSync("$JS.API.DIRECT.GET.>"); err == nil {
		w.leader, err = nc.SubscribeSync("$JS.API.STREAM.MSG.GET.>")
	}
	if err == nil {
		w.barrier, err = nc.SubscribeSync(nats.NewInbox())
	}
	if err == nil {
		err = nc.Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// Counts returns the direct and leader gets made so far on the bus's
// connection. A flush of the watcher is not enough: the server can answer
// a request (and the test go on to its next) before it hands the watcher
// its copy. Counts publishes a marker on the bus's connection instead: the
// server hands a connection's messages to a subscriber in the order that
// connection sent them, so once the marker is back, every earlier request
// is too.
func (w *APIWatch) Counts(t testing.TB) (direct, leader int) {
	t.Helper()
	if err := w.from.Publish(w.barrier.Subject, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := w.barrier.NextMsg(10 * time.Second); err != nil {
		t.Fatalf("the marker after the requests: %v", err)
	}
	direct, _, _ = w.direct.Pending()
	leader, _, _ = w.leader.Pending()
	return direct, leader
}
