package remote_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/toolkit"
)

// heldDialer dials as a net.Dialer does, except while held: then a dial
// fails at once, as to a server that is down, so that a test chooses how
// long a client stays away after its server died. (A dial that waited
// would hold the connection's lock: nats.go dials under it.)
type heldDialer struct {
	held atomic.Bool
}

func (d *heldDialer) Dial(network, address string) (net.Conn, error) {
	if d.held.Load() {
		return nil, errors.New("held away by the test")
	}
	return (&net.Dialer{Timeout: 2 * time.Second}).Dial(network, address)
}

// TestResultAfterAgentReconnects: the agent's server dies while its call
// runs on a worker of another server, the worker sends the result while
// the agent is away (no one is subscribed to the inbox then: the server
// drops it), and the agent stays away for twice the time it would give a
// silent worker. Its call waits (the agent's own absence is not the
// worker's silence), asks for what it missed once it is back (a resync),
// and gets the kept result: a success, the tool having run once. In
// protocol 1 the result's two blind repeats, a heartbeat and two after it,
// were lost too, and the call failed with *LostError.
func TestResultAfterAgentReconnects(t *testing.T) {
	cl := natstest.NewCluster(t, 3)
	fast := []nats.Option{nats.DontRandomize(), nats.MaxReconnects(-1), nats.ReconnectWait(20 * time.Millisecond), nats.ReconnectJitter(0, 0)}
	wnc, err := nats.Connect(cl.URLs(1), fast...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wnc.Close)
	var runs atomic.Int32
	started, release := make(chan struct{}, 1), make(chan struct{})
	wk := testutil.Kit(t)
	testutil.Add(t, wk, toolkit.MustTool(toolkit.Spec{Name: "work"}, func(ctx context.Context, _ struct{}) (string, error) {
		runs.Add(1)
		started <- struct{}{}
		select {
		case <-release:
			return "done while the agent was away", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}))
	w, err := remote.Serve(wnc, wk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.Stop(ctx)
	})

	dialer := &heldDialer{}
	anc, err := nats.Connect(cl.URLs(0), append(fast, nats.SetCustomDialer(dialer))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(anc.Close)
	c := remote.NewClient(anc, remote.WithHeartbeat(100*time.Millisecond, 0))
	agent := testutil.Kit(t)
	testutil.Add(t, agent, discover(t, c, 1)...)
	batch := testutil.Session(t, agent, "s").Start(context.Background(), []toolkit.Call{testutil.Call("c1", "work", `{}`)})
	testutil.WaitFor(t, started, "the call to run on the worker")

	dialer.held.Store(true)
	cl.Kill(0)
	for deadline := time.Now().Add(5 * time.Second); anc.Status() != nats.RECONNECTING; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the agent's connection is %v, not reconnecting", anc.Status())
		}
	}
	close(release)
	for deadline := time.Now().Add(5 * time.Second); w.Stats().InFlight != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the worker did not finish the call")
		}
	}
	if err := wnc.Flush(); err != nil { // the result reached the server, which had nobody to give it to
		t.Fatal(err)
	}
	time.Sleep(2 * remote.LostAfter(c))
	select {
	case <-batch.Done():
		t.Fatalf("the call ended while the agent was away: %q", batch.Wait()[0].Text())
	default:
	}
	dialer.held.Store(false)
	r := batch.Wait()[0]
	if r.State != events.StateSuccess || r.Text() != "done while the agent was away" {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
	if st := c.Stats(); st.Resyncs == 0 {
		t.Fatalf("client stats %+v: no resync after the reconnection", st)
	}
}
