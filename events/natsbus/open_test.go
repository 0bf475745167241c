package natsbus_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/toolkit"
)

// TestOpenWithURLFromEnv: TOOLSTREAM_NATS_URL connects to that server
// instead of embedding one; events arrive there.
func TestOpenWithURLFromEnv(t *testing.T) {
	ns := startNATS(t)
	t.Setenv(natsbus.EnvURL, ns.url())
	bus := openBus(t, natsbus.WithNATSOptions(nats.Name("env test")))
	if bus.Server() != nil {
		t.Fatal("an embedded server was started although a URL was set")
	}
	if got := bus.Conn().ConnectedUrl(); got != ns.url() {
		t.Fatalf("connected to %s", got)
	}
	// A client of that server sees the events.
	if m := clientGets(t, bus, ns.url(), bus.Subjects().Session("env"), "env"); !strings.HasPrefix(m.Subject, "toolstream.env.call-0.") {
		t.Fatalf("subject %s", m.Subject)
	}
}

// clientGets connects another client to url, subscribes it to subject, runs
// one call in session through bus and returns the first message the client
// gets.
func clientGets(t *testing.T, bus *natsbus.Bus, url, subject, session string) *nats.Msg {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	got := make(chan *nats.Msg, 64)
	sub, err := nc.ChanSubscribe(subject, got)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	sess, _ := kit(t, bus).Session(session)
	sess.Run(context.Background(), callsFor(1, 1))
	select {
	case m := <-got:
		return m
	case <-time.After(10 * time.Second):
		t.Fatalf("no event for a client of %s", url)
		return nil
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := natsbus.Open(ctx, natsbus.WithPrefix("bad prefix")); err == nil {
		t.Error("a prefix with a space was accepted")
	}
	if _, err := natsbus.Open(ctx, natsbus.WithListen("nonsense")); err == nil || !strings.Contains(err.Error(), "listen address") {
		t.Errorf("bad listen address: %v", err)
	}
	_, err := natsbus.Open(ctx, natsbus.WithURL("nats://user:secret@127.0.0.1:1"), natsbus.WithNATSOptions(nats.RetryOnFailedConnect(false)))
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("connecting to nothing: %v (a password must never show)", err)
	}
}

// TestEmbeddedStoreIsPrivateAndRemoved: the embedded server's JetStream
// store is a directory of its own, gone after Close.
func TestEmbeddedStoreIsPrivateAndRemoved(t *testing.T) {
	ctx := context.Background()
	a, err := natsbus.Open(ctx, natsbus.WithDurable(natsbus.Durable{}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := natsbus.Open(ctx, natsbus.WithDurable(natsbus.Durable{}))
	if err != nil {
		t.Fatal(err)
	}
	da, db := a.Server().StoreDir(), b.Server().StoreDir()
	if da == db {
		t.Fatalf("two buses share the store %s", da)
	}
	for _, bus := range []*natsbus.Bus{a, b} {
		if err := bus.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{da, db} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("store %s still there after Close: %v", d, err)
		}
	}
}

// TestWebSocketListener: a client connecting over WebSocket (as nats.js in
// a browser would) receives the events.
func TestWebSocketListener(t *testing.T) {
	bus := openBus(t, natsbus.WithWebSocket("127.0.0.1:0"))
	url := bus.WebSocketURL()
	if !strings.HasPrefix(url, "ws://127.0.0.1:") {
		t.Fatalf("websocket URL %q", url)
	}
	m := clientGets(t, bus, url, bus.Subjects().AllOfType(events.TypeResult), "ws")
	if ev, err := events.Decode(m.Data); err != nil || ev.Type != events.TypeResult || ev.Session != "ws" {
		t.Fatalf("%v %+v", err, ev)
	}
}

// TestUndeliveredIsCounted: when NATS is gone for good and the reconnect
// buffer is full, tools still finish on time and the publisher counts and
// logs what it could not deliver.
func TestUndeliveredIsCounted(t *testing.T) {
	ns := startNATS(t)
	bus := openBus(t, natsbus.WithURL(ns.url()), natsbus.WithNATSOptions(nats.ReconnectBufSize(4096)))
	tk := toolkit.New(toolkit.WithInlineObserver(bus.Publisher()), toolkit.WithFlushTimeout(100*time.Millisecond))
	defer tk.Close(context.Background())
	kitTools(t, tk)
	ns.stop() // and it never comes back
	// Until the client notices, publishes go to the socket's buffer and are
	// lost unseen (core NATS); the case here is a client that knows.
	for deadline := time.Now().Add(10 * time.Second); bus.Conn().Status() == nats.CONNECTED; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the client did not notice the server was gone within 10s")
		}
	}
	sess, _ := tk.Session("gone")
	start := time.Now()
	rs := sess.Run(context.Background(), callsFor(4, 50))
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the run took %v with NATS gone", took)
	}
	for _, r := range rs {
		if r.State != toolkit.StateSuccess {
			t.Fatalf("%s: %s", r.Call.ID, r.State)
		}
	}
	if s := bus.Publisher().Stats(); s.Undelivered == 0 {
		t.Fatalf("nothing counted as undelivered: %+v", s)
	}
}
