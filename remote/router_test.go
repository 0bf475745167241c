package remote_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/internal/wire"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// TestOneSubscriptionForAllCalls: a client's calls in flight share one
// subscription (a call does not make the servers learn and forget an inbox
// of its own), each still gets its own frames, and Close ends the calls
// still waiting at once with ErrClientClosed, and later ones too.
func TestOneSubscriptionForAllCalls(t *testing.T) {
	bus := natstest.Bus(t)
	b := newBlock()
	wk := testutil.Kit(t)
	testutil.Add(t, wk, b.tool(toolkit.Spec{Name: "hold", ConcurrencySafe: true}))
	serve(t, bus, wk)
	nc := conn(t, bus)
	c := remote.NewClient(nc)
	agent := testutil.Kit(t)
	testutil.Add(t, agent, discover(t, c, 1)...)
	sess := testutil.Session(t, agent, "s")

	// Finished calls: each its own result, nothing left subscribed but
	// the client's one subscription.
	const n = 8
	close(b.release)
	calls := make([]toolkit.Call, n)
	for i := range calls {
		calls[i] = testutil.Call(fmt.Sprint("c", i), "hold", `{}`)
	}
	for i, r := range sess.Run(context.Background(), calls) {
		if r.State != events.StateSuccess || r.Text() != "released" || r.Call.ID != calls[i].ID {
			t.Fatalf("call %d: %s %s %q", i, r.Call.ID, r.State, r.Text())
		}
	}
	if got := nc.NumSubscriptions(); got != 1 {
		t.Errorf("%d subscriptions after %d calls, want the client's one", got, n)
	}

	// Calls in flight when the client closes.
	b2 := newBlock()
	wk2 := testutil.Kit(t)
	testutil.Add(t, wk2, b2.tool(toolkit.Spec{Name: "wait", ConcurrencySafe: true}))
	serve(t, bus, wk2)
	wait, err := c.Tool(context.Background(), "wait")
	if err != nil {
		t.Fatal(err)
	}
	testutil.Add(t, agent, wait)
	for i := range calls {
		calls[i] = testutil.Call(fmt.Sprint("w", i), "wait", `{}`)
	}
	run := sess.Start(context.Background(), calls)
	for range n {
		testutil.WaitFor(t, b2.started, "the calls to start on the worker")
	}
	if got := nc.NumSubscriptions(); got != 1 {
		t.Errorf("%d subscriptions with %d calls in flight, want 1", got, n)
	}
	closed := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, r := range run.Wait() {
		if !errors.Is(r.Err, remote.ErrClientClosed) {
			t.Errorf("call %s in flight at Close: %s %v", r.Call.ID, r.State, r.Err)
		}
	}
	if took := time.Since(closed); took > time.Second {
		t.Errorf("the calls ended %v after Close", took)
	}
	if got := nc.NumSubscriptions(); got != 0 {
		t.Errorf("%d subscriptions after Close", got)
	}
	r := sess.Run(context.Background(), calls[:1])[0]
	if !errors.Is(r.Err, remote.ErrClientClosed) {
		t.Errorf("a call after Close: %s %v", r.State, r.Err)
	}
	close(b2.release)
}

// TestDurableBusKeepsEventsOnly: on a bus that keeps events in JetStream, a
// remote call's request (on <prefix>._tools.<tool>, under the events'
// prefix) is not stored, nor acknowledged to the call's inbox, and the
// call's streamed pieces (the tool writes the next once the agent saw the
// last) reach the agent's observers as they come (no reset and replay at
// the result, which a lost frame would force).
func TestDurableBusKeepsEventsOnly(t *testing.T) {
	bus := natstest.Bus(t, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	seen := make(chan struct{}, 8) // a delta reached the agent
	wk := testutil.Kit(t)
	testutil.Add(t, wk, toolkit.MustTool(toolkit.Spec{Name: "pieces"}, func(ctx context.Context, _ struct{}) (string, error) {
		em := stream.From(ctx)
		for _, p := range []string{"a", "b"} {
			if err := em.Text(p); err != nil {
				return "", err
			}
			select {
			case <-seen:
			case <-time.After(10 * time.Second):
				return "", errors.New("the agent never saw the delta " + p)
			}
		}
		return "c", nil
	}))
	serve(t, bus, wk)
	c := remote.NewClient(conn(t, bus))
	t.Cleanup(func() { _ = c.Close() })
	rec := &testutil.Recorder{}
	signal := toolkit.ObserverFunc(func(ev *events.Event) {
		if ev.Type == events.TypeDelta && ev.Delta != nil && ev.Delta.Text != "c" {
			seen <- struct{}{}
		}
	})
	agent := testutil.Kit(t, toolkit.WithInlineObserver(bus.Publisher()), toolkit.WithInlineObserver(rec), toolkit.WithInlineObserver(signal))
	testutil.Add(t, agent, discover(t, c, 1)...)
	r := testutil.Run(t, agent, "conv", testutil.Call("p1", "pieces", `{}`))[0]
	if r.State != events.StateSuccess || r.Text() != "abc" {
		t.Fatalf("call: %s %q", r.State, r.Text())
	}
	checkDeltas := func(call string) {
		t.Helper()
		var deltas []string
		for _, ev := range rec.Of(call) {
			if ev.Type == events.TypeDelta {
				if ev.Reset {
					t.Errorf("%s: a reset delta: the call's frames were not taken as they came", call)
				}
				deltas = append(deltas, ev.Delta.Text)
			}
		}
		if !slices.Equal(deltas, []string{"a", "b", "c"}) {
			t.Errorf("%s: deltas %q, want a, b, c as they came", call, deltas)
		}
	}
	checkDeltas("p1")
	if err := bus.Publisher().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, err := bus.JetStream().Stream(context.Background(), "TOOLSTREAM")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background(), jetstream.WithSubjectFilter(">"))
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs == 0 {
		t.Fatal("the stream kept no events at all")
	}
	for subj := range info.State.Subjects {
		if strings.HasPrefix(subj, wire.DefaultPrefix+".") {
			t.Errorf("the events stream kept a remote call: %s", subj)
		}
		if _, _, _, err := bus.Subjects().Parse(subj); err != nil {
			t.Errorf("the events stream kept a subject that is not an event's: %s (%v)", subj, err)
		}
	}

	// A stream of the application's own that keeps the calls acknowledges
	// each to the call's inbox: the acknowledgement is not a frame.
	if _, err := bus.JetStream().CreateStream(context.Background(), jetstream.StreamConfig{
		Name: "CALLS", Subjects: []string{wire.DefaultPrefix + ".pieces"}, Storage: jetstream.MemoryStorage,
	}); err != nil {
		t.Fatal(err)
	}
	r = testutil.Run(t, agent, "conv", testutil.Call("p2", "pieces", `{}`))[0]
	if r.State != events.StateSuccess || r.Text() != "abc" {
		t.Fatalf("call with its request kept: %s %q", r.State, r.Text())
	}
	checkDeltas("p2")
}

// TestSessionNamedToolsSeesNoCalls: the calls' subjects share the events'
// prefix but not their shape, so a subscription to a session's events
// (here a session named "tools") receives that session's events and never
// a call.
func TestSessionNamedToolsSeesNoCalls(t *testing.T) {
	bus := natstest.Bus(t)
	wk := testutil.Kit(t)
	testutil.Add(t, wk, sharedTools(nil)...)
	serve(t, bus, wk)
	c := remote.NewClient(conn(t, bus))
	t.Cleanup(func() { _ = c.Close() })
	agent := testutil.Kit(t, toolkit.WithInlineObserver(bus.Publisher()))
	testutil.Add(t, agent, discover(t, c, len(sharedTools(nil)))...)

	watcher := conn(t, bus)
	msgs := make(chan string, 256)
	sub, err := watcher.Subscribe(bus.Subjects().Session("tools"), func(m *nats.Msg) { msgs <- m.Subject })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := watcher.Flush(); err != nil {
		t.Fatal(err)
	}
	r := testutil.Run(t, agent, "tools", testutil.Call("c1", "count", `{"words":["a","b"]}`))[0]
	if r.State != events.StateSuccess {
		t.Fatalf("call: %s %q", r.State, r.Text())
	}
	if err := bus.Publisher().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := watcher.Flush(); err != nil {
		t.Fatal(err)
	}
	var types []events.Type
	deadline := time.After(5 * time.Second)
	for len(types) == 0 || types[len(types)-1] != events.TypeResult {
		select {
		case subj := <-msgs:
			session, call, typ, err := bus.Subjects().Parse(subj)
			if err != nil || session != "tools" || call != "c1" {
				t.Fatalf("the session's subscription got %s (%v)", subj, err)
			}
			types = append(types, typ)
		case <-deadline:
			t.Fatalf("the session's events did not all arrive: %v", types)
		}
	}
}

// TestCloseBeforeAnyCall: a client closed before its first call never
// subscribes, and its calls fail with ErrClientClosed without being sent.
func TestCloseBeforeAnyCall(t *testing.T) {
	bus := natstest.Bus(t)
	nc := conn(t, bus)
	c := remote.NewClient(nc)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	tool, err := c.NewTool(toolkit.Spec{Name: "count"}, []byte(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	agent := testutil.Kit(t)
	testutil.Add(t, agent, tool)
	r := testutil.Run(t, agent, "s", testutil.Call("c1", "count", `{}`))[0]
	if !errors.Is(r.Err, remote.ErrClientClosed) {
		t.Errorf("a call on a closed client: %s %v", r.State, r.Err)
	}
	if got := nc.NumSubscriptions(); got != 0 {
		t.Errorf("%d subscriptions on a client closed before any call", got)
	}
}

// TestControlSubjectIsNoEvent: a control message never lands where events
// do: its subject is not an event's (the events' parser refuses it) and
// has five tokens, so no stream or subscription over the events
// (toolstream.*.*.*) takes it. A four-token control subject, in an early
// version of protocol 2, was kept in the durable bus's stream after a
// cancellation.
func TestControlSubjectIsNoEvent(t *testing.T) {
	bus := natstest.Bus(t)
	for _, kind := range []string{wire.ControlCancel, wire.ControlResync} {
		subj := wire.ControlSubject(wire.DefaultPrefix, wire.DefaultService, kind)
		if n := strings.Count(subj, ".") + 1; n == 4 {
			t.Errorf("%s has four tokens, as an event's subject", subj)
		}
		if _, _, _, err := bus.Subjects().Parse(subj); err == nil {
			t.Errorf("%s parses as an event's subject", subj)
		}
	}
}
