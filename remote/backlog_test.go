//go:build toolstream_testhooks

package remote_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/toolkit"
)

// backlog serves "slow" (runs until release) and "echo" from one worker
// whose endpoint handler holds every request after the first until hold
// is closed: the requests wait unread, as a spike's do in a busy worker's
// backlog. The client gives a worker 60 ms of silence.
func backlog(t *testing.T) (c *remote.Client, agent *toolkit.Toolkit, started, entered chan struct{}, hold, release chan struct{}) {
	t.Helper()
	bus := natstest.Bus(t)
	wk := testutil.Kit(t)
	release, started = make(chan struct{}), make(chan struct{}, 1)
	testutil.Add(t, wk,
		toolkit.MustTool(toolkit.Spec{Name: "slow"}, func(ctx context.Context, _ struct{}) (string, error) {
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return "slow done", nil
		}),
		toolkit.MustTool(toolkit.Spec{Name: "echo", ReadOnly: true}, func(_ context.Context, in struct{ S string }) (string, error) { return in.S, nil }))
	w := serve(t, bus, wk)
	entered, hold = make(chan struct{}, 8), make(chan struct{})
	var first atomic.Bool
	remote.OnRequest(t, w, func() {
		if first.CompareAndSwap(false, true) {
			return
		}
		entered <- struct{}{}
		<-hold
	})
	c = remote.NewClient(conn(t, bus), remote.WithHeartbeat(20*time.Millisecond, 3))
	agent = testutil.Kit(t)
	for _, name := range []string{"slow", "echo"} {
		tl, err := c.Tool(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		testutil.Add(t, agent, tl)
	}
	return c, agent, started, entered, hold, release
}

// TestBacklogIsNotLoss: a call no worker has read yet, while the worker
// answers the client's other calls, waits (bounded by its deadline)
// instead of failing as lost after the heartbeat window: a spike's calls
// wait in a busy worker's backlog as they do in its queue. Before, it
// failed with "no worker answered the call of "echo" within 60ms".
func TestBacklogIsNotLoss(t *testing.T) {
	_, agent, started, entered, hold, release := backlog(t)
	defer close(release)
	slow := testutil.Session(t, agent, "a").Start(context.Background(), []toolkit.Call{testutil.Call("s", "slow", `{}`)})
	<-started
	echo := testutil.Session(t, agent, "b").Start(context.Background(), []toolkit.Call{testutil.Call("e", "echo", `{"S":"hi"}`)})
	<-entered
	time.Sleep(600 * time.Millisecond) // ten windows of silence for the unread call, heartbeats for the slow one
	close(hold)
	r := echo.Wait()[0]
	if r.State != events.StateSuccess || r.Text() != "hi" {
		t.Fatalf("the call held unread: %s %q", r.State, r.Text())
	}
	release <- struct{}{}
	if r := slow.Wait()[0]; r.State != events.StateSuccess {
		t.Fatalf("slow: %s %q", r.State, r.Text())
	}
}

// TestSilentServiceIsLoss: with nothing from any worker, a call no worker
// read fails as lost after the window, as before: the backlog rule needs
// the workers to be heard.
func TestSilentServiceIsLoss(t *testing.T) {
	_, agent, _, entered, hold, release := backlog(t)
	defer close(release)
	defer close(hold)
	first := testutil.Session(t, agent, "a").Run(context.Background(), []toolkit.Call{testutil.Call("e0", "echo", `{"S":"first"}`)})
	if first[0].State != events.StateSuccess {
		t.Fatalf("first call: %s %q", first[0].State, first[0].Text())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b := testutil.Session(t, agent, "b").Start(ctx, []toolkit.Call{testutil.Call("e", "echo", `{"S":"hi"}`)})
	<-entered
	r := b.Wait()[0]
	var lost *remote.LostError
	if !errors.As(r.Err, &lost) || lost.Worker != "" {
		t.Fatalf("want a LostError naming no worker, got %s %q (%v)", r.State, r.Text(), r.Err)
	}
}
