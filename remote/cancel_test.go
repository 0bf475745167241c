package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/toolkit"
)

// controlOf is a worker's control subject, where its callers send
// cancellations (its accept frames say so too).
func controlOf(w *remote.Worker) string { return remote.DefaultPrefix + "._cancel." + w.ID() }

// cancelHeldCall starts a call of "held", which a scripted worker takes
// with an accept frame naming worker and control as the subject for
// cancellations, cancels it once taken, and returns its result. The
// client would wait an hour for a confirmation, and the engine an hour for
// the handler: the call ends sooner only if the answer is heeded.
func cancelHeldCall(t *testing.T, bus *natsbus.Bus, worker, control string) toolkit.Result {
	t.Helper()
	nc := conn(t, bus)
	took := make(chan struct{}, 1)
	sub, err := nc.Subscribe(remote.DefaultPrefix+".held", func(m *nats.Msg) {
		_ = nc.PublishMsg(&nats.Msg{Subject: m.Reply, Header: nats.Header{
			remote.HeaderFrame: {"accept"}, remote.HeaderSeq: {"1"},
			remote.HeaderWorker: {worker}, remote.HeaderControl: {control}}})
		took <- struct{}{}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	c := remote.NewClient(conn(t, bus), remote.ClientOptions{CancelWait: time.Hour})
	tl, err := c.NewTool(toolkit.Spec{Name: "held"}, json.RawMessage(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	agent := testutil.Kit(t, toolkit.WithCancelGrace(time.Hour))
	testutil.Add(t, agent, tl)
	batch := testutil.Session(t, agent, "s").Start(context.Background(), []toolkit.Call{testutil.Call("c1", "held", `{}`)})
	testutil.WaitFor(t, took, "the scripted worker to take the call")
	batch.Cancel()
	testutil.WaitFor(t, batch.Done(), "the cancelled call to end (it waits for an hour if the answer is not heeded)")
	return batch.Wait()[0]
}

// TestCancelRefusedStopsTheWait: when the worker a cancellation goes to
// answers that it does not run the call, the caller stops waiting at once
// and says so, although it would wait an hour for a confirmation (and the
// engine an hour for the handler). The call is taken by a scripted worker
// whose accept frame names a real worker's control subject: that worker
// never ran the call and refuses the cancellation with 404.
func TestCancelRefusedStopsTheWait(t *testing.T) {
	bus := natstest.Bus(t)
	real := serve(t, bus, workerKit(t, nil), remote.WorkerOptions{Tools: []string{"count"}})
	r := cancelHeldCall(t, bus, real.ID(), controlOf(real))
	if r.State != toolkit.StateInterrupted ||
		!strings.Contains(r.Text(), "worker "+real.ID()+" refused the cancellation (404)") ||
		!strings.Contains(r.Text(), "runs no call with reply subject") {
		t.Fatalf("cancelled call: %s %q", r.State, r.Text())
	}
}

// TestWorkerAnswersCancellations: a cancellation with a reply subject is
// answered there: refused with 400 when it names no call, with 404 when no
// such call runs on the worker, taken (a cancel frame without an error)
// when it does; the call's result frame follows.
func TestWorkerAnswersCancellations(t *testing.T) {
	bus := natstest.Bus(t)
	b := newBlock()
	wk := testutil.Kit(t)
	testutil.Add(t, wk, b.tool(toolkit.Spec{Name: "hold"}))
	w := serve(t, bus, wk, remote.WorkerOptions{})
	nc := conn(t, bus)

	ask := func(body string) *nats.Msg {
		t.Helper()
		m, err := nc.Request(controlOf(w), []byte(body), 5*time.Second)
		if err != nil {
			t.Fatalf("cancellation %q: %v", body, err)
		}
		if m.Header.Get(remote.HeaderFrame) != "cancel" || m.Header.Get(remote.HeaderWorker) != w.ID() {
			t.Fatalf("cancellation %q answered with headers %v", body, m.Header)
		}
		return m
	}
	if m := ask(""); m.Header.Get(micro.ErrorCodeHeader) != "400" {
		t.Fatalf("a cancellation naming no call: %v", m.Header)
	}
	if m := ask("_INBOX.nobody"); m.Header.Get(micro.ErrorCodeHeader) != "404" ||
		!strings.Contains(m.Header.Get(micro.ErrorHeader), `runs no call with reply subject "_INBOX.nobody"`) {
		t.Fatalf("a cancellation of an unknown call: %v", m.Header)
	}

	// A call sent by hand, as docs/scale-out.md describes the protocol.
	inbox := nc.NewInbox()
	frames, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	call := nats.NewMsg(remote.DefaultPrefix + ".hold")
	call.Reply = inbox
	call.Data = []byte(`{}`)
	call.Header.Set(remote.HeaderSession, "s")
	call.Header.Set(remote.HeaderCall, "c1")
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
			if m.Header.Get(remote.HeaderFrame) != "hb" {
				return m
			}
		}
	}
	if m := next(); m.Header.Get(remote.HeaderFrame) != "accept" || m.Header.Get(remote.HeaderControl) != controlOf(w) {
		t.Fatalf("first frame: %v", m.Header)
	}
	testutil.WaitFor(t, b.started, "the call to start")
	cancel := &nats.Msg{Subject: controlOf(w), Reply: inbox, Data: []byte(inbox)}
	if err := nc.PublishMsg(cancel); err != nil {
		t.Fatal(err)
	}
	if m := next(); m.Header.Get(remote.HeaderFrame) != "cancel" || m.Header.Get(micro.ErrorCodeHeader) != "" {
		t.Fatalf("the answer to the cancellation of a running call: %v", m.Header)
	}
	if err := <-b.ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("the handler ended with %v", err)
	}
	m := next()
	if m.Header.Get(remote.HeaderFrame) != "result" || !strings.Contains(string(m.Data), `"state":"interrupted"`) {
		t.Fatalf("after the cancellation: %v %s", m.Header, m.Data)
	}
	// Once its result went, the call is unknown: the answer says so.
	if m := ask(inbox); m.Header.Get(micro.ErrorCodeHeader) != "404" {
		t.Fatalf("a cancellation of a call that ended: %v", m.Header)
	}
}

// TestCancelAfterTheCallEnded: when the call's result was on its way as the
// caller cancelled (a scripted worker sends a success as the cancellation
// reaches it), the cancelled call says that the worker had finished it,
// not that it stopped it: the tool's work was done.
func TestCancelAfterTheCallEnded(t *testing.T) {
	bus := natstest.Bus(t)
	nc := conn(t, bus)
	ctl, err := nc.Subscribe(remote.DefaultPrefix+"._cancel.W", func(m *nats.Msg) {
		_ = nc.PublishMsg(&nats.Msg{Subject: string(m.Data), Data: []byte(`{"state":"success","content":[{"type":"text","text":"done"}]}`),
			Header: nats.Header{remote.HeaderFrame: {"result"}, remote.HeaderSeq: {"2"}}})
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ctl.Unsubscribe() }()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	r := cancelHeldCall(t, bus, "W", remote.DefaultPrefix+"._cancel.W")
	if r.State != toolkit.StateInterrupted || !strings.Contains(r.Text(), "worker W had finished the call (success) before the cancellation reached it") {
		t.Fatalf("cancelled call: %s %q", r.State, r.Text())
	}
}
