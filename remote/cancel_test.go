package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/internal/wire"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/toolkit"
)

// control is the control subject of the default prefix and service.
// control is the control subject of a kind, under the default prefix and
// service.
func control(kind string) string {
	return wire.ControlSubject(wire.DefaultPrefix, wire.DefaultService, kind)
}

// heldCall is a call of "held" taken by a scripted worker W, which answers
// with an accept frame and then does what onCancel says when a
// cancellation names the call.
func heldCall(t *testing.T, bus *natsbus.Bus, opt remote.ClientOption, onCancel func(nc *nats.Conn, inbox string)) *toolkit.Batch {
	t.Helper()
	nc := conn(t, bus)
	took := make(chan string, 1)
	sub, err := nc.Subscribe(wire.DefaultPrefix+".held", func(m *nats.Msg) {
		_ = nc.PublishMsg(&nats.Msg{Subject: m.Reply, Header: nats.Header{
			wire.HeaderFrame: {"accept"}, wire.HeaderSeq: {"1"}, wire.HeaderWorker: {"W"}}})
		took <- m.Reply
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	var inbox atomic.Pointer[string]
	ctl, err := nc.Subscribe(control(wire.ControlCancel), func(m *nats.Msg) {
		if in := inbox.Load(); in != nil && string(m.Data) == wire.CallKey(*in) {
			onCancel(nc, *in)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ctl.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	c := remote.NewClient(conn(t, bus), opt)
	tl, err := c.NewTool(toolkit.Spec{Name: "held"}, json.RawMessage(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	agent := testutil.Kit(t, toolkit.WithCancelGrace(time.Hour))
	testutil.Add(t, agent, tl)
	batch := testutil.Session(t, agent, "s").Start(context.Background(), []toolkit.Call{testutil.Call("c1", "held", `{}`)})
	select {
	case in := <-took:
		inbox.Store(&in)
	case <-time.After(5 * time.Second):
		t.Fatal("the scripted worker did not take the call")
	}
	return batch
}

// TestCancelWaitsForTheHolder: a cancellation the worker that holds the
// call does not confirm ends the wait after CancelWait, and says which
// worker stayed silent; one it confirms ends the wait with the result that
// follows, long before an hour's CancelWait.
func TestCancelWaitsForTheHolder(t *testing.T) {
	bus := natstest.Bus(t)
	batch := heldCall(t, bus, remote.WithCancelWait(50*time.Millisecond), func(*nats.Conn, string) {})
	batch.Cancel()
	testutil.WaitFor(t, batch.Done(), "the cancelled call to end")
	if r := batch.Wait()[0]; r.State != events.StateInterrupted || !strings.Contains(r.Text(), "worker W did not confirm within 50ms") {
		t.Fatalf("unconfirmed: %s %q", r.State, r.Text())
	}

	batch = heldCall(t, bus, remote.WithCancelWait(time.Hour), func(nc *nats.Conn, inbox string) {
		for i, h := range []nats.Header{{wire.HeaderFrame: {"cancel"}}, {wire.HeaderFrame: {"result"}}} {
			h.Set(wire.HeaderWorker, "W")
			h.Set(wire.HeaderSeq, []string{"2", "3"}[i])
			_ = nc.PublishMsg(&nats.Msg{Subject: inbox, Header: h, Data: []byte(`{"state":"interrupted","content":[]}`)})
		}
	})
	batch.Cancel()
	testutil.WaitFor(t, batch.Done(), "the cancelled call to end (it waits for an hour if the answer is not heeded)")
	if r := batch.Wait()[0]; r.State != events.StateInterrupted || !strings.Contains(r.Text(), "worker W stopped the call") {
		t.Fatalf("confirmed: %s %q", r.State, r.Text())
	}
}

// TestCancelAfterTheCallEnded: when the call's result was on its way as the
// caller cancelled (a scripted worker sends a success as the cancellation
// reaches it), the cancelled call says that the worker had finished it,
// not that it stopped it: the tool's work was done.
func TestCancelAfterTheCallEnded(t *testing.T) {
	bus := natstest.Bus(t)
	batch := heldCall(t, bus, remote.WithCancelWait(time.Hour), func(nc *nats.Conn, inbox string) {
		_ = nc.PublishMsg(&nats.Msg{Subject: inbox, Data: []byte(`{"state":"success","content":[{"type":"text","text":"done"}]}`),
			Header: nats.Header{wire.HeaderFrame: {"result"}, wire.HeaderSeq: {"2"}, wire.HeaderWorker: {"W"}}})
	})
	batch.Cancel()
	testutil.WaitFor(t, batch.Done(), "the cancelled call to end")
	if r := batch.Wait()[0]; r.State != events.StateInterrupted || !strings.Contains(r.Text(), "worker W had finished the call (success) before the cancellation reached it") {
		t.Fatalf("cancelled call: %s %q", r.State, r.Text())
	}
}

// TestWorkerAnswersCancellations: a call sent by hand, as docs/scale-out.md
// describes the protocol. A control message that names no call of the
// worker changes nothing; one that names the running call by its key gets a
// cancel frame on the call's inbox, the handler's context is cancelled, and
// the result frame follows; once the call ended, a cancellation gets its
// result again (kept for KeepResults). No control message carries an inbox.
func TestWorkerAnswersCancellations(t *testing.T) {
	bus := natstest.Bus(t)
	b := newBlock()
	wk := testutil.Kit(t)
	testutil.Add(t, wk, b.tool(toolkit.Spec{Name: "hold"}))
	w := serve(t, bus, wk)
	nc := conn(t, bus)

	inbox := nc.NewInbox()
	frames, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	call := nats.NewMsg(wire.DefaultPrefix + ".hold")
	call.Reply = inbox
	call.Data = []byte(`{}`)
	call.Header.Set(wire.HeaderSession, "s")
	call.Header.Set(wire.HeaderCall, "c1")
	if err := nc.PublishMsg(call); err != nil {
		t.Fatal(err)
	}
	next := func() *nats.Msg {
		t.Helper()
		for {
			m, err := frames.NextMsg(5 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if m.Header.Get(wire.HeaderWorker) != w.ID() {
				t.Fatalf("a frame that names worker %q, not %q: %v", m.Header.Get(wire.HeaderWorker), w.ID(), m.Header)
			}
			if m.Header.Get(wire.HeaderFrame) != "hb" {
				return m
			}
		}
	}
	cancel := func(key string) {
		t.Helper()
		if err := nc.PublishMsg(&nats.Msg{Subject: control(wire.ControlCancel), Data: []byte(key)}); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WaitFor(t, b.started, "the call to start")
	if m := next(); m.Header.Get(wire.HeaderFrame) != "accept" {
		t.Fatalf("first frame: %v", m.Header)
	}
	cancel(wire.CallKey(nc.NewInbox())) // another call's: nothing happens
	cancel(wire.CallKey(inbox))
	if m := next(); m.Header.Get(wire.HeaderFrame) != "cancel" {
		t.Fatalf("the answer to the cancellation of a running call: %v", m.Header)
	}
	if err := <-b.ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("the handler ended with %v", err)
	}
	m := next()
	if m.Header.Get(wire.HeaderFrame) != "result" || !strings.Contains(string(m.Data), `"state":"interrupted"`) {
		t.Fatalf("after the cancellation: %v %s", m.Header, m.Data)
	}
	cancel(wire.CallKey(inbox))
	if again := next(); again.Header.Get(wire.HeaderFrame) != "result" || string(again.Data) != string(m.Data) {
		t.Fatalf("a cancellation of a call that ended: %v %s", again.Header, again.Data)
	}
}
