package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/durable"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

// agentProcess is one life of an agent's process: its own toolkit on the
// shared bucket.
type agentProcess struct {
	tk    *toolkit.Toolkit
	sess  *toolkit.Session
	store *durable.Store
	stop  func()
}

// writes counts the runs of the tool that is not idempotent.
var writes atomic.Int64

// newStore opens the store on the test's bucket, as a process does.
func newStore(t *testing.T, js jetstream.JetStream) *durable.Store {
	t.Helper()
	st, err := durable.New(context.Background(), js, "")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func startAgent(t *testing.T, js jetstream.JetStream) *agentProcess {
	t.Helper()
	st := newStore(t, js)
	// An asynchronous observer that a test may hold back (setLag), as the
	// store was when it recorded waits from suspend events: a lagging
	// observer must change nothing.
	tk := toolkit.New(toolkit.WithObserver(laggingObserver))
	ask, err := toolkit.NewExternalTool(toolkit.Spec{Name: "ask", Description: "asks a person"}, json.RawMessage(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	no := false
	return runAgent(t, tk, st, ask,
		toolkit.MustTool(toolkit.Spec{Name: "write", Idempotent: &no}, func(context.Context, struct{}) (string, error) {
			return "written " + string(rune('0'+writes.Add(1))), nil
		}),
		toolkit.MustTool(toolkit.Spec{Name: "look", ReadOnly: true}, func(context.Context, struct{}) (string, error) { return "looked", nil }))
}

// lagHook, when set (setLag), holds laggingObserver at each suspend event.
var lagHook atomic.Pointer[func(*events.Event)]

// laggingObserver is the asynchronous observer startAgent attaches.
var laggingObserver = toolkit.ObserverFunc(func(ev *events.Event) {
	if h := lagHook.Load(); h != nil && ev.Type == events.TypeSuspend {
		(*h)(ev)
	}
})

// setLag makes laggingObserver run f at each suspend event, until the test
// ends.
func setLag(t *testing.T, f func(*events.Event)) {
	lagHook.Store(&f)
	t.Cleanup(func() { lagHook.Store(nil) })
}

// runAgent registers the tools on tk behind the store's interceptor, has
// the store deliver answers, and opens the session "conv": one life of an
// agent's process, closed with the test.
func runAgent(t *testing.T, tk *toolkit.Toolkit, st *durable.Store, tools ...*toolkit.Tool) *agentProcess {
	t.Helper()
	if err := tk.Add(tools...); err != nil {
		t.Fatal(err)
	}
	if err := tk.Use(st.Interceptor()); err != nil {
		t.Fatal(err)
	}
	stop, err := st.Deliver(context.Background(), tk)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := tk.Session("conv")
	if err != nil {
		t.Fatal(err)
	}
	p := &agentProcess{tk: tk, sess: sess, store: st, stop: stop}
	t.Cleanup(p.close)
	return p
}

// close ends the process's life: its waiting calls are interrupted.
func (p *agentProcess) close() {
	if p.stop == nil {
		return
	}
	p.stop()
	p.stop = nil
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = p.tk.Close(ctx)
}

func waitSuspended(t *testing.T, st *durable.Store, call string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		rec, err := st.Get(context.Background(), "conv", call)
		if err == nil && rec.State == durable.Suspended {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("call %s never recorded as suspended: %+v %v", call, rec, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSurvivesRestart: a finished call is never run again, a waiting call
// is pending after the process restarts, an answer given while no process
// ran is the call's result when it runs again, and an answer reaches a call
// that waits in a running process.
func TestSurvivesRestart(t *testing.T) {
	js := natstest.JetStream(t)
	writes.Store(0)
	ctx := context.Background()

	first := startAgent(t, js)
	batch := first.sess.Start(ctx, []toolkit.Call{testutil.Call("w1", "write", `{}`), testutil.Call("a1", "ask", `{}`)})
	waitSuspended(t, first.store, "a1")
	first.close() // the process stops: a1 is interrupted, but stays pending
	rs := batch.Wait()
	if rs[0].Text() != "written 1" || rs[1].State != events.StateInterrupted {
		t.Fatalf("first life: %q / %s", rs[0].Text(), rs[1].State)
	}

	// While no process runs: the call is pending, and is answered.
	second := startAgent(t, js)
	pending, err := second.store.Pending(ctx, "conv")
	if err != nil || len(pending) != 1 || pending[0].Call.ID != "a1" || pending[0].Reason != "external" {
		t.Fatalf("pending %+v %v", pending, err)
	}
	if err := second.store.Answer(ctx, "conv", "a1", []events.Part{events.Text("blue")}, ""); err != nil {
		t.Fatal(err)
	}
	// The conversation runs the same calls again: nothing runs twice.
	rs = second.sess.Run(ctx, []toolkit.Call{testutil.Call("w1", "write", `{}`), testutil.Call("a1", "ask", `{}`)})
	if rs[0].Text() != "written 1" || rs[0].Meta[durable.MetaReplayed] != true || writes.Load() != 1 {
		t.Fatalf("w1 again: %q meta %v, %d writes", rs[0].Text(), rs[0].Meta, writes.Load())
	}
	if rs[1].State != events.StateSuccess || rs[1].Text() != "blue" {
		t.Fatalf("a1 after the restart: %s %q", rs[1].State, rs[1].Text())
	}
	if pending, _ := second.store.Pending(ctx, "conv"); len(pending) != 0 {
		t.Fatalf("still pending: %+v", pending)
	}

	// An answer to a call that waits now, in this process.
	batch = second.sess.Start(ctx, []toolkit.Call{testutil.Call("a2", "ask", `{}`)})
	waitSuspended(t, second.store, "a2")
	if err := second.store.Answer(ctx, "conv", "a2", nil, "nobody knows"); err != nil {
		t.Fatal(err)
	}
	r := batch.Wait()[0]
	if r.State != events.StateError || r.Text() != "Error: nobody knows" {
		t.Fatalf("a2: %s %q", r.State, r.Text())
	}
	if err := second.store.Answer(ctx, "conv", "a2", nil, "again"); err == nil {
		t.Fatal("a second answer was taken")
	}
	r = second.sess.Run(ctx, []toolkit.Call{testutil.Call("a2", "ask", `{}`)})[0]
	if r.Text() != "Error: nobody knows" || r.Meta[durable.MetaReplayed] != true {
		t.Fatalf("a2 again: %q %v", r.Text(), r.Meta)
	}
}

// TestCrashedWhileRunning: a call left running by a process that died is
// run again only if its tool is idempotent; otherwise the model is told it
// may have done its work.
func TestCrashedWhileRunning(t *testing.T) {
	js := natstest.JetStream(t)
	writes.Store(0)
	ctx := context.Background()
	p := startAgent(t, js)
	kv, err := js.KeyValue(ctx, durable.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	// What a process that died mid-call leaves: the claim, no outcome.
	for _, c := range []toolkit.Call{testutil.Call("w9", "write", `{}`), testutil.Call("l9", "look", `{}`)} {
		rec, _ := json.Marshal(durable.Record{Session: "conv", Call: c, State: durable.Running})
		if _, err := kv.Create(ctx, durable.KeyOf("conv", c.ID), rec); err != nil {
			t.Fatal(err)
		}
	}
	rs := p.sess.Run(ctx, []toolkit.Call{testutil.Call("w9", "write", `{}`), testutil.Call("l9", "look", `{}`)})
	if !errors.Is(rs[0].Err, durable.ErrMaybeRan) || writes.Load() != 0 {
		t.Fatalf("w9: %s %q, %d writes", rs[0].State, rs[0].Text(), writes.Load())
	}
	if rs[1].State != events.StateSuccess || rs[1].Text() != "looked" {
		t.Fatalf("l9: %s %q", rs[1].State, rs[1].Text())
	}
}
