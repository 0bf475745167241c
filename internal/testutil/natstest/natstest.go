// Package natstest opens real NATS buses for tests: an embedded server,
// closed when the test ends.
package natstest

import (
	"context"
	"testing"
	"time"

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
