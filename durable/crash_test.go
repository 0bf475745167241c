package durable_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/durable"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

// processConn opens a connection of its own to the bus's server, for one
// process of a test: kill closes it, so that nothing the process does
// afterwards reaches the server, as when it is killed. The bucket and the
// server stay.
func processConn(t *testing.T, bus *natsbus.Bus) (js jetstream.JetStream, kill func()) {
	t.Helper()
	nc, err := nats.Connect("", nats.InProcessServer(bus.Server()), nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	return js, nc.Close
}

// observerBehind holds the agent's asynchronous observer at the suspend
// events of call until release: it has not recorded anything of them.
func observerBehind(t *testing.T, call string) (release func()) {
	hold := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(hold) }) }
	setLag(t, func(ev *events.Event) {
		if ev.Call == call {
			<-hold
		}
	})
	t.Cleanup(release)
	return release
}

// untilSuspendedNotice reads the batch's notices until the call is reported
// waiting: whoever follows the batch (or its suspend event) has been asked.
func untilSuspendedNotice(t *testing.T, b *toolkit.Batch, call string) {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		for r := range b.Results() {
			if r.Call.ID == call && r.State == events.StateSuspended {
				done <- ""
				return
			} else if r.Call.ID == call {
				done <- fmt.Sprintf("%s %q", r.State, r.Text())
				return
			}
		}
		done <- "no notice"
	}()
	select {
	case got := <-done:
		if got != "" {
			t.Fatalf("call %s ended without waiting: %s", call, got)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("call %s was never reported waiting", call)
	}
}

// TestKilledWhileAskingOutside: a process killed while an external call
// waits, before the store's observer has recorded the wait, leaves the call
// recorded as waiting. After the restart it is pending, and run again it
// waits again and takes the answer. Before, the record stayed "running": the
// question was lost (Pending missed it, Answer was refused) and the call run
// again failed with ErrMaybeRan.
func TestKilledWhileAskingOutside(t *testing.T) {
	bus := natstest.Bus(t)
	js, err := jetstream.New(bus.Conn())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	release := observerBehind(t, "k1")
	js1, kill := processConn(t, bus)
	first := startAgent(t, js1)
	batch := first.sess.Start(ctx, []toolkit.Call{testutil.Call("k1", "ask", `{}`)})
	untilSuspendedNotice(t, batch, "k1")
	kill()
	release()
	first.close() // what is left of it: nothing it does reaches the server

	second := startAgent(t, js)
	rec, err := second.store.Get(ctx, "conv", "k1")
	if err != nil || rec.State != durable.Suspended || rec.Reason != "external" {
		t.Fatalf("after the kill the call is recorded as %q (%q), %v: want suspended (external)", rec.State, rec.Reason, err)
	}
	if pending, err := second.store.Pending(ctx, "conv"); err != nil || len(pending) != 1 || pending[0].Call.ID != "k1" {
		t.Fatalf("pending after the kill: %+v %v", pending, err)
	}
	again := second.sess.Start(ctx, []toolkit.Call{testutil.Call("k1", "ask", `{}`)})
	untilSuspendedNotice(t, again, "k1")
	if err := second.store.Answer(ctx, "conv", "k1", []events.Part{events.Text("blue")}, ""); err != nil {
		t.Fatal(err)
	}
	if r := again.Wait()[0]; r.State != events.StateSuccess || r.Text() != "blue" {
		t.Fatalf("k1 run again: %s %q %v", r.State, r.Text(), r.Err)
	}
	if r := second.sess.Run(ctx, []toolkit.Call{testutil.Call("k1", "ask", `{}`)})[0]; r.Text() != "blue" || r.Meta[durable.MetaReplayed] != true {
		t.Fatalf("k1 once more: %q %v", r.Text(), r.Meta)
	}
}

// TestKilledWhileAskingForApproval: the same for a call that waits for a
// person's approval: run again after the kill, the person is asked again,
// and a decision given through the store runs it once. Before, it failed
// with ErrMaybeRan although the tool had never run.
func TestKilledWhileAskingForApproval(t *testing.T) {
	bus := natstest.Bus(t)
	js, err := jetstream.New(bus.Conn())
	if err != nil {
		t.Fatal(err)
	}
	edits.paths = nil
	ctx := context.Background()
	call := testutil.Call("k2", "edit", `{"path":"a.txt"}`)
	release := observerBehind(t, "k2")
	js1, kill := processConn(t, bus)
	first := startApprovals(t, js1)
	first.sess.Start(ctx, []toolkit.Call{call})
	for deadline := time.Now().Add(5 * time.Second); first.asked.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("nobody was asked")
		}
	}
	kill()
	release()
	first.close()

	second := startApprovals(t, js)
	rec, err := second.store.Get(ctx, "conv", "k2")
	if err != nil || rec.State != durable.Suspended || rec.Reason != "approval" {
		t.Fatalf("after the kill the call is recorded as %q (%q), %v: want suspended (approval)", rec.State, rec.Reason, err)
	}
	batch := second.sess.Start(ctx, []toolkit.Call{call})
	for deadline := time.Now().Add(5 * time.Second); second.asked.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			r := batch.Wait()[0]
			t.Fatalf("run again, nobody was asked: %s %q", r.State, r.Text())
		}
	}
	if err := second.store.Approve(ctx, "conv", "k2", nil); err != nil {
		t.Fatal(err)
	}
	if r := batch.Wait()[0]; r.State != events.StateSuccess || r.Text() != "edited a.txt" {
		t.Fatalf("k2 run again: %s %q", r.State, r.Text())
	}
	if got := editsRun(); len(got) != 1 || second.asked.Load() != 1 {
		t.Fatalf("runs %v, asked %d", got, second.asked.Load())
	}
}

// TestLateSuspendEventChangesNothing: the suspend event of an earlier
// process, handled by its observer only after a later process runs the call
// again (approved while no process ran it), leaves the call recorded as
// running. Before, it marked the running call suspended, with its approval:
// when the later process was killed during the run, the next one ran the
// tool again without asking (twice in all), where a call that may have done
// its work must fail with ErrMaybeRan.
func TestLateSuspendEventChangesNothing(t *testing.T) {
	bus := natstest.Bus(t)
	js, err := jetstream.New(bus.Conn())
	if err != nil {
		t.Fatal(err)
	}
	edits.paths = nil
	ctx := context.Background()
	call := testutil.Call("s1", "edit", `{"path":"block"}`) // its first run waits until its process stops
	st := newStore(t, js)

	// The first process asks; its observer falls behind; it stops.
	release := observerBehind(t, "s1")
	first := startApprovals(t, js)
	batch := first.sess.Start(ctx, []toolkit.Call{call})
	for deadline := time.Now().Add(5 * time.Second); first.asked.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("nobody was asked")
		}
	}
	// The first process stops delivering decisions, then closes; its
	// observer holds the close. The approval comes once its call is
	// interrupted: before, a decision could reach the first process while
	// it stopped, and it ran the tool itself (a test of ordering, not of
	// the late event).
	delivering := make(chan struct{})
	closed := make(chan error, 1)
	go func() {
		first.stop()
		first.stop = nil
		close(delivering)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		closed <- first.tk.Close(ctx) // returns once its observer is through
	}()
	<-delivering
	if r := batch.Wait()[0]; r.State != events.StateInterrupted {
		t.Fatalf("the first process's run ended %s %q: want interrupted", r.State, r.Text())
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if pending, _ := st.Pending(ctx, "conv"); len(pending) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stopped call is not pending")
		}
	}
	if err := st.Approve(ctx, "conv", "s1", nil); err != nil {
		t.Fatal(err)
	}

	// A second process runs it: approved, the tool runs (and blocks).
	js2, kill := processConn(t, bus)
	second := startApprovals(t, js2)
	second.sess.Start(ctx, []toolkit.Call{call})
	for deadline := time.Now().Add(5 * time.Second); len(editsRun()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("s1 never ran in the second process")
		}
	}
	// Now the first process's observer gets to the suspend event.
	release()
	if err := <-closed; err != nil {
		t.Fatalf("the first process did not stop: %v", err)
	}
	rec, err := st.Get(ctx, "conv", "s1")
	if err != nil || rec.State != durable.Running {
		t.Errorf("while it runs again, s1 is recorded as %q (%q), %v: want running", rec.State, rec.Reason, err)
	}

	// The second process is killed while the tool runs.
	kill()
	second.close()
	third := startApprovals(t, js)
	r := third.sess.Run(ctx, []toolkit.Call{call})[0]
	if !errors.Is(r.Err, durable.ErrMaybeRan) || len(editsRun()) != 1 || third.asked.Load() != 0 {
		t.Fatalf("third process: %s %q, runs %v, asked %d", r.State, r.Text(), editsRun(), third.asked.Load())
	}
}

// TestOutcomeStoredAfterALongWait: the outcome of a call that waited longer
// than the bound of one read or write (DefaultElectionWait; 200 ms here) is stored, for
// an external call and an approved one. Before, the bound counted from the
// call's start: after such a wait every write failed ("context deadline
// exceeded", logged), the outcome was not stored and the call, run again,
// waited again (the approved tool ran a second time).
func TestOutcomeStoredAfterALongWait(t *testing.T) {
	t.Cleanup(durable.SetDefaultElectionWait(200 * time.Millisecond))
	js := natstest.JetStream(t)
	edits.paths = nil
	ctx := context.Background()
	outside, approvals := startAgent(t, js), startApprovals(t, js)
	w1 := outside.sess.Start(ctx, []toolkit.Call{testutil.Call("w1", "ask", `{}`)})
	w2 := approvals.sess.Start(ctx, []toolkit.Call{testutil.Call("w2", "edit", `{"path":"a.txt"}`)})
	untilSuspendedNotice(t, w1, "w1")
	for deadline := time.Now().Add(5 * time.Second); approvals.asked.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("nobody was asked")
		}
	}
	time.Sleep(500 * time.Millisecond) // the person takes their time
	st := outside.store
	if err := st.Answer(ctx, "conv", "w1", []events.Part{events.Text("later")}, ""); err != nil {
		t.Fatal(err)
	}
	if err := st.Approve(ctx, "conv", "w2", nil); err != nil {
		t.Fatal(err)
	}
	if r1, r2 := w1.Wait()[0], w2.Wait()[0]; r1.Text() != "later" || r2.Text() != "edited a.txt" {
		t.Fatalf("results %q %q", r1.Text(), r2.Text())
	}
	for _, id := range []string{"w1", "w2"} {
		if rec, err := st.Get(ctx, "conv", id); err != nil || rec.State != durable.Done {
			t.Fatalf("%s is recorded as %q, %v: want done", id, rec.State, err)
		}
	}
	r1 := outside.sess.Run(ctx, []toolkit.Call{testutil.Call("w1", "ask", `{}`)})[0]
	r2 := approvals.sess.Run(ctx, []toolkit.Call{testutil.Call("w2", "edit", `{"path":"a.txt"}`)})[0]
	if r1.Meta[durable.MetaReplayed] != true || r2.Meta[durable.MetaReplayed] != true || len(editsRun()) != 1 {
		t.Fatalf("run again: %v %v, runs %v", r1.Meta, r2.Meta, editsRun())
	}
}
