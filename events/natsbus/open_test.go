package natsbus_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

// TestOpenWithURLFromEnv: TOOLSTREAM_NATS_URL connects to that server
// instead of embedding one; events arrive there.
func TestOpenWithURLFromEnv(t *testing.T) {
	ns := startNATS(t)
	t.Setenv(natsbus.EnvURL, ns.url())
	bus := natstest.Bus(t, natsbus.WithNATSOptions(nats.Name("env test")))
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

// TestListenWinsOverTheURLFromEnv: a program that asks for a listening
// embedded server (WithListen) gets one with TOOLSTREAM_NATS_URL set too:
// the variable stands in for WithURL only. Before, Open connected to the
// variable's server, Server() was nil and nothing listened on the address.
func TestListenWinsOverTheURLFromEnv(t *testing.T) {
	ns := startNATS(t)
	t.Setenv(natsbus.EnvURL, ns.url())
	bus := natstest.Bus(t, natsbus.WithListen("127.0.0.1:0"))
	if bus.Server() == nil {
		t.Fatalf("WithListen gave no embedded server: connected to %s", bus.Conn().ConnectedUrl())
	}
	url := bus.Server().ClientURL()
	if url == ns.url() {
		t.Fatalf("the embedded server's URL is the variable's, %s", url)
	}
	if m := clientGets(t, bus, url, bus.Subjects().Session("listen"), "listen"); !strings.HasPrefix(m.Subject, "toolstream.listen.call-0.") {
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
	bus := natstest.Bus(t, natsbus.WithWebSocket("127.0.0.1:0"))
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
	bus, err := natsbus.Open(context.Background(), natsbus.WithURL(ns.url()), natsbus.WithNATSOptions(nats.ReconnectBufSize(4096)))
	if err != nil {
		t.Fatal(err)
	}
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
		if r.State != events.StateSuccess {
			t.Fatalf("%s: %s", r.Call.ID, r.State)
		}
	}
	s := bus.Publisher().Stats()
	if s.Undelivered == 0 {
		t.Fatalf("nothing counted as undelivered: %+v", s)
	}
	// What the reconnect buffer holds is lost when the bus closes with
	// NATS still away: counted too, and Close says so.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = bus.Close(ctx)
	if after := bus.Publisher().Stats(); after.Undelivered <= s.Undelivered || err == nil || !strings.Contains(err.Error(), "reconnect buffer") {
		t.Fatalf("Close with NATS away: %v; stats before %+v, after %+v", err, s, after)
	}
}

// TestOpenPortTaken: an embedded server asked to listen on a port that is
// taken fails at once, naming the address and the system's reason, for
// NATS clients and for WebSocket alike.
func TestOpenPortTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr := l.Addr().String()
	for name, opt := range map[string]natsbus.Option{"listen": natsbus.WithListen(addr), "websocket": natsbus.WithWebSocket(addr)} {
		start := time.Now()
		bus, err := natsbus.Open(context.Background(), opt, natsbus.WithDurable(natsbus.Durable{Memory: true}))
		took := time.Since(start)
		if err == nil {
			bus.Close(context.Background())
			t.Fatalf("%s: opened on a taken port", name)
		}
		if !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "address already in use") || !errors.Is(err, syscall.EADDRINUSE) {
			t.Errorf("%s: %v", name, err)
		}
		if took > 500*time.Millisecond {
			t.Errorf("%s: took %v to fail", name, took)
		}
		t.Logf("%s, after %v: %v", name, took, err)
	}
}

// TestOpenServerFailsAtOnce: what stops the embedded server after it was
// created (here a JetStream store it cannot make) is reported at once, not
// after a wait for a server that never gets ready.
func TestOpenServerFailsAtOnce(t *testing.T) {
	file := t.TempDir() + "/not-a-dir"
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	bus, err := natsbus.Open(context.Background(), natsbus.WithStoreDir(file+"/store"))
	took := time.Since(start)
	if err == nil {
		bus.Close(context.Background())
		t.Fatal("opened with a store under a file")
	}
	if !strings.Contains(err.Error(), "JetStream") || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("error: %v", err)
	}
	if took > 2*time.Second {
		t.Errorf("took %v to fail", took)
	}
	t.Logf("after %v: %v", took, err)
}

// TestOpenUnreachableURL: a URL where nothing listens fails fast with the
// reason and without the password; a server that accepts but never answers
// fails within the caller's deadline. Durable or not, Open never returns a
// bus that is not connected.
func TestOpenUnreachableURL(t *testing.T) {
	port := freePort(t)
	for _, durable := range []bool{false, true} {
		opts := []natsbus.Option{natsbus.WithURL(fmt.Sprintf("nats://user:secret@127.0.0.1:%d", port))}
		if durable {
			opts = append(opts, natsbus.WithDurable(natsbus.Durable{}))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		start := time.Now()
		bus, err := natsbus.Open(ctx, opts...)
		took := time.Since(start)
		cancel()
		if err == nil {
			bus.Close(context.Background())
			t.Fatalf("durable %v: connected to nothing", durable)
		}
		want := fmt.Sprintf("cannot connect to NATS at nats://user:xxxxx@127.0.0.1:%d", port)
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "secret") {
			t.Errorf("durable %v: %v", durable, err)
		}
		if took > 500*time.Millisecond {
			t.Errorf("durable %v: took %v to fail", durable, took)
		}
		t.Logf("durable %v, after %v: %v", durable, took, err)
	}

	// A listener that never speaks NATS.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{})
	defer func() { silent.Close(); <-accepted }()
	go func() {
		defer close(accepted)
		var held []net.Conn
		for {
			c, err := silent.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	bus, err := natsbus.Open(ctx, natsbus.WithURL("nats://"+silent.Addr().String()), natsbus.WithDurable(natsbus.Durable{}))
	took := time.Since(start)
	if err == nil {
		bus.Close(context.Background())
		t.Fatal("connected to a server that never answers")
	}
	if !strings.Contains(err.Error(), "cannot connect to NATS at nats://"+silent.Addr().String()) {
		t.Errorf("silent server: %v", err)
	}
	if took > time.Second {
		t.Errorf("silent server: took %v with a 300ms deadline", took)
	}
	t.Logf("refused: see above; silent server after %v: %v", took, err)
}
