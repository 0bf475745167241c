//go:build toolstream_testhooks

package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/internal/wire"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/toolkit"
)

// lateRequest serves the tool "work" (which counts its runs) from n
// workers, holds the first call in the endpoint handler of whichever worker
// micro hands it to, stops that worker while the call is held, and only
// then lets the handler go on: the request micro delivers after Stop
// returned (what a drained subscription does with a request already on its
// way). It returns the call's result, the stopped worker, the others and
// how many times the tool ran.
func lateRequest(t *testing.T, n int) (r toolkit.Result, stopped *remote.Worker, others []*remote.Worker, ran int32) {
	t.Helper()
	bus := natstest.Bus(t)
	var runs atomic.Int32
	var workers []*remote.Worker
	held := make(chan *remote.Worker, 1)
	release := make(chan struct{})
	var once sync.Once
	for range n {
		wk := testutil.Kit(t)
		testutil.Add(t, wk, toolkit.MustTool(toolkit.Spec{Name: "work"}, func(context.Context, struct{}) (string, error) {
			runs.Add(1)
			return "done", nil
		}))
		w := serve(t, bus, wk)
		remote.OnRequest(t, w, func() {
			once.Do(func() {
				held <- w
				<-release
			})
		})
		workers = append(workers, w)
	}
	c := remote.NewClient(conn(t, bus))
	tl, err := c.NewTool(toolkit.Spec{Name: "work"}, json.RawMessage(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	agent := testutil.Kit(t)
	testutil.Add(t, agent, tl)
	batch := testutil.Session(t, agent, "s").Start(context.Background(), []toolkit.Call{testutil.Call("c1", "work", `{}`)})
	select {
	case stopped = <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("no worker's handler got the call")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := stopped.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	close(release) // the handler goes on after Stop returned
	r = batch.Wait()[0]
	for _, w := range workers {
		if w != stopped {
			others = append(others, w)
		}
	}
	return r, stopped, others, runs.Load()
}

// TestStopRefusesLateRequest: a call that micro hands to a stopped worker's
// handler after Stop returned never runs there: it is refused (503, the
// worker is stopping) and, with no other worker, the caller is told at once
// that no worker serves the tool.
func TestStopRefusesLateRequest(t *testing.T) {
	r, stopped, _, ran := lateRequest(t, 1)
	if ran != 0 {
		t.Fatalf("the tool ran %d times on a stopped worker", ran)
	}
	if r.State != events.StateError || !errors.Is(r.Err, remote.ErrNoWorkers) || !strings.Contains(r.Text(), `no worker serves the tool "work"`) {
		t.Fatalf("the late call: %s %q (%v)", r.State, r.Text(), r.Err)
	}
	if st := stopped.Stats(); st.Calls != 0 || st.Refused != 1 || st.InFlight != 0 {
		t.Fatalf("the stopped worker's stats %+v: want the call refused, not taken", st)
	}
}

// TestStopLateRequestFailsOver: the same late call, with another worker
// serving the tool, runs once, on the other worker.
func TestStopLateRequestFailsOver(t *testing.T) {
	r, stopped, others, ran := lateRequest(t, 2)
	if r.State != events.StateSuccess || r.Text() != "done" || ran != 1 {
		t.Fatalf("the late call: %s %q (%v), the tool ran %d times", r.State, r.Text(), r.Err, ran)
	}
	if got := r.Meta[remote.MetaWorker]; got != others[0].ID() {
		t.Fatalf("the call ran on worker %v, want %s (not the stopped %s)", got, others[0].ID(), stopped.ID())
	}
	if st := stopped.Stats(); st.Calls != 0 || st.Refused != 1 {
		t.Fatalf("the stopped worker's stats %+v", st)
	}
}

// TestCloseDuringBusyBackoff: a call refused as busy and waiting to be sent
// again when its client is closed fails at once with ErrClientClosed and is
// not sent again: no worker runs a call nobody follows.
func TestCloseDuringBusyBackoff(t *testing.T) {
	bus := natstest.Bus(t)
	nc := conn(t, bus)
	// The scripted worker refuses the first send as busy; later sends stay
	// in reqs, where the readLoop of nc puts them before it reads the
	// answer to a flush.
	reqs := make(chan *nats.Msg, 16)
	sub, err := nc.ChanSubscribe(wire.DefaultPrefix+".work", reqs)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	refused := make(chan struct{})
	go func() {
		defer close(refused)
		select {
		case m := <-reqs:
			_ = nc.PublishMsg(&nats.Msg{Subject: m.Reply, Header: nats.Header{
				micro.ErrorCodeHeader: {"503"}, micro.ErrorHeader: {"worker W is busy"}, wire.HeaderWorker: {"W"}}})
		case <-time.After(10 * time.Second):
		}
	}()
	cc := conn(t, bus)
	c := remote.NewClient(cc, remote.WithBusyRetries(3))
	remote.OnBackoff(t, c, func() { _ = c.Close() })
	tl, err := c.NewTool(toolkit.Spec{Name: "work"}, json.RawMessage(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	agent := testutil.Kit(t)
	testutil.Add(t, agent, tl)
	r := testutil.Run(t, agent, "s", testutil.Call("c1", "work", `{}`))[0]
	testutil.WaitFor(t, refused, "the first send to be refused")
	// Round trips: the server has whatever the client sent before the call
	// ended, and nc has received it.
	if err := cc.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := len(reqs); n != 0 {
		t.Fatalf("the call was sent %d more times after the client was closed", n)
	}
	if !errors.Is(r.Err, remote.ErrClientClosed) || !strings.Contains(r.Text(), "was not sent again") {
		t.Fatalf("the call: %s %q (%v)", r.State, r.Text(), r.Err)
	}
}
