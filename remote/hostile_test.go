package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/internal/wire"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// fakeInfo answers the client's $SRV.INFO with one service whose endpoints
// are eps, as a worker that is not one of ours (or a hostile one) would.
func fakeInfo(t *testing.T, nc *nats.Conn, eps ...micro.EndpointInfo) {
	t.Helper()
	fakeInfoOf(t, nc, map[string]string{wire.MetaProtocol: "2"}, eps...)
}

// fakeInfoOf is fakeInfo with the service's metadata.
func fakeInfoOf(t *testing.T, nc *nats.Conn, md map[string]string, eps ...micro.EndpointInfo) {
	t.Helper()
	subj, err := micro.ControlSubject(micro.InfoVerb, wire.DefaultService, "")
	if err != nil {
		t.Fatal(err)
	}
	info, err := json.Marshal(micro.Info{ServiceIdentity: micro.ServiceIdentity{Name: wire.DefaultService, ID: "FAKE", Version: "1.0.0", Metadata: md},
		Type: micro.InfoResponseType, Endpoints: eps})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := nc.Subscribe(subj, func(m *nats.Msg) { _ = m.Respond(info) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestDiscoverKeepsToThePrefix: a worker's service info names the subject
// of each tool's endpoint; the client sends a tool's calls (the model's
// arguments, with the agent's credentials) only to <Prefix>.<tool>. Before,
// it sent them to whatever subject the answer named: a service answering
// under the workers' name could make the agent publish calls on any
// subject (another service's, JetStream's API, a wildcard), and the test's
// call landed on "victim.x".
func TestDiscoverKeepsToThePrefix(t *testing.T) {
	bus := natstest.Bus(t)
	nc := conn(t, bus)
	var landed atomic.Int64
	for _, s := range []string{"victim.x", "$JS.API.>"} {
		sub, err := nc.Subscribe(s, func(*nats.Msg) { landed.Add(1) })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	md := func(name string) map[string]string {
		return map[string]string{wire.MetaSpec: `{"name":"` + name + `"}`, wire.MetaSchema: `{"type":"object"}`}
	}
	fakeInfo(t, nc,
		micro.EndpointInfo{Name: "x", Subject: "victim.x", Metadata: md("x")},
		micro.EndpointInfo{Name: "purge", Subject: "$JS.API.STREAM.PURGE.TOOLSTREAM", Metadata: md("purge")},
		micro.EndpointInfo{Name: "any", Subject: wire.DefaultPrefix + ".*", Metadata: md("any")})
	c := remote.NewClient(conn(t, bus), remote.WithDiscoverWait(300*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tools, err := c.Discover(ctx)
	if len(tools) > 0 {
		agent := testutil.Kit(t)
		testutil.Add(t, agent, tools...)
		for _, tl := range tools {
			testutil.Run(t, agent, "s", testutil.Call("c-"+tl.Name(), tl.Name(), `{}`))
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		t.Fatalf("discovered %d tools with foreign subjects; %d calls landed on them", len(tools), landed.Load())
	}
	if err == nil || !strings.Contains(err.Error(), `"victim.x"`) || !strings.Contains(err.Error(), wire.DefaultPrefix+".x") {
		t.Fatalf("the error does not say which subject: %v", err)
	}
	if _, err := c.Tool(ctx, "x"); err == nil {
		t.Fatal("Tool found x")
	}
	// A real worker's tools next to them are found.
	serve(t, bus, workerKit(t, nil))
	tools, err = c.Discover(ctx)
	if err != nil || len(tools) != 3 {
		t.Fatalf("%d tools, %v", len(tools), err)
	}
	for _, tl := range tools {
		if tl.Name() == "x" || tl.Name() == "purge" || tl.Name() == "any" {
			t.Fatalf("discovered %s", tl.Name())
		}
	}
}

// TestFarDeadline: a call whose context's deadline is further than a
// request may say (30 days) runs; the worker's own bound is a fallback and
// needs no more. Before, the client sent the whole time left and every
// worker refused the call ("400 ... Toolstream-Timeout-Ms: not a number of
// milliseconds from 1 to 2592000000"), and likewise for a heartbeat that
// long.
func TestFarDeadline(t *testing.T) {
	bus := natstest.Bus(t)
	serve(t, bus, workerKit(t, nil), remote.WithTools("count"))
	for _, beat := range []time.Duration{0, 40 * 24 * time.Hour} {
		c := remote.NewClient(conn(t, bus), remote.WithHeartbeat(beat, 0))
		agent := testutil.Kit(t, toolkit.WithDefaultTimeout(0)) // the context's deadline is the call's
		testutil.Add(t, agent, discover(t, c, 1)...)
		ctx, cancel := context.WithTimeout(context.Background(), 40*24*time.Hour)
		r := testutil.Session(t, agent, "s").Run(ctx, []toolkit.Call{testutil.Call("c1", "count", `{"words":["x"]}`)})[0]
		cancel()
		if r.State != events.StateSuccess {
			t.Fatalf("heartbeat %v: %s %q", beat, r.State, r.Text())
		}
	}
}

// TestTwoWorkersTakeOneCall: workers of a tool in two queue groups both
// take a call sent once. The call goes on with the worker that accepted
// first; the other is told to stop at once (its handler's context is
// cancelled, so it does not finish the work), its frames and result are
// not the call's, and the result names it (MetaAlsoTakenBy). Before, both
// ran the call to its end silently, and the content was whichever result
// came first while meta.worker named whichever accept came last.
func TestTwoWorkersTakeOneCall(t *testing.T) {
	bus := natstest.Bus(t)
	var finished atomic.Int64
	ended := make(chan struct{}, 2) // each handler as it returns
	kit := func(name string) *toolkit.Toolkit {
		wk := testutil.Kit(t)
		testutil.Add(t, wk, toolkit.MustTool(toolkit.Spec{Name: "work"}, func(ctx context.Context, _ struct{}) (string, error) {
			defer func() { ended <- struct{}{} }()
			for i := range 3 {
				_ = stream.From(ctx).Text(fmt.Sprintf("%s %d\n", name, i))
				select {
				case <-ctx.Done():
					return "", ctx.Err()
				case <-time.After(100 * time.Millisecond):
				}
			}
			finished.Add(1)
			return "done by " + name, nil
		}))
		return wk
	}
	ids := map[string]string{}
	for _, g := range []string{"a", "b"} {
		w := serve(t, bus, kit(g), remote.WithQueueGroup(g))
		ids[w.ID()] = g
	}
	c := remote.NewClient(conn(t, bus))
	rec := &testutil.Recorder{}
	agent := testutil.Kit(t, toolkit.WithObserver(rec))
	testutil.Add(t, agent, discover(t, c, 1)...)
	r := testutil.Run(t, agent, "s", testutil.Call("c1", "work", `{}`))[0]
	ran, _ := r.Meta[remote.MetaWorker].(string)
	g := ids[ran]
	if r.State != events.StateSuccess || g == "" || r.Text() != fmt.Sprintf("%[1]s 0\n%[1]s 1\n%[1]s 2\ndone by %[1]s", g) {
		t.Fatalf("%s %q by %q (%s)", r.State, r.Text(), ran, g)
	}
	others, _ := r.Meta[remote.MetaAlsoTakenBy].([]string)
	if len(others) != 1 || ids[others[0]] == "" || others[0] == ran {
		t.Fatalf("also taken by %v", r.Meta[remote.MetaAlsoTakenBy])
	}
	if d := testutil.Deltas(rec.Of("c1")); !events.EqualContent(d, r.Content) {
		t.Fatalf("deltas %+v != result %+v", d, r.Content)
	}
	for range 2 {
		testutil.WaitFor(t, ended, "both handlers to return")
	}
	if n := finished.Load(); n != 1 {
		t.Fatalf("the work was done %d times", n)
	}
}

// TestIDsWithSpacesCrossTheWire: a session or call id that starts or ends
// with spaces (valid for the toolkit) reaches the worker's tool as it is.
// NATS trims header values: before, the tool saw "s" for " s ", and a call
// id of spaces only was refused ("400 a call needs the headers
// Toolstream-Session and Toolstream-Call") though the agent gave one.
func TestIDsWithSpacesCrossTheWire(t *testing.T) {
	bus := natstest.Bus(t)
	s := &seen{}
	serve(t, bus, workerKit(t, s), remote.WithTools("count"))
	c := remote.NewClient(conn(t, bus))
	agent := testutil.Kit(t)
	testutil.Add(t, agent, discover(t, c, 1)...)
	for _, id := range [][2]string{{" s ", "c1"}, {"s", "  "}, {"  ", " c\u00a0"}, {"\"q\" ", "\"c\""}} {
		r := testutil.Run(t, agent, id[0], testutil.Call(id[1], "count", `{"words":["x"]}`))[0]
		if r.State != events.StateSuccess {
			t.Fatalf("session %q call %q: %s %q", id[0], id[1], r.State, r.Text())
		}
		s.mu.Lock()
		got := s.info[len(s.info)-1]
		s.mu.Unlock()
		if got.Session != id[0] || got.CallID != id[1] {
			t.Fatalf("the tool saw session %q call %q, the agent sent %q %q", got.Session, got.CallID, id[0], id[1])
		}
	}
}

// TestDiscoverChecksTheProtocol: a service that speaks another version of
// the wire protocol (toolstream.protocol in its metadata), or says none, is
// not taken for a worker: its tools are left out, and Discover's error
// says why. Before, the client used them and sent them calls in a protocol
// they do not speak.
func TestDiscoverChecksTheProtocol(t *testing.T) {
	for _, md := range []map[string]string{{wire.MetaProtocol: "1"}, {wire.MetaProtocol: "3"}, nil} {
		bus := natstest.Bus(t)
		fakeInfoOf(t, conn(t, bus), md, micro.EndpointInfo{Name: "x", Subject: wire.DefaultPrefix + ".x",
			Metadata: map[string]string{wire.MetaSpec: `{"name":"x"}`, wire.MetaSchema: `{"type":"object"}`}})
		c := remote.NewClient(conn(t, bus), remote.WithDiscoverWait(300*time.Millisecond))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		tools, err := c.Discover(ctx)
		cancel()
		if len(tools) != 0 || err == nil || !strings.Contains(err.Error(), "protocol") {
			t.Fatalf("metadata %v: %d tools, %v", md, len(tools), err)
		}
	}
}

// TestAgentConnectionLost: when the agent's own NATS connection is gone
// (closed here; away and reconnecting alike), a call that hears nothing
// more says so instead of blaming its worker, which is alive. It is still
// a *LostError (the call may have done its work). Before, the error
// said "worker W stopped answering ...: it died, hangs or lost its
// connection".
func TestAgentConnectionLost(t *testing.T) {
	bus := natstest.Bus(t)
	wk := testutil.Kit(t)
	started, release := make(chan struct{}, 1), make(chan struct{})
	testutil.Add(t, wk, toolkit.MustTool(toolkit.Spec{Name: "wait", ReadOnly: true}, func(ctx context.Context, _ struct{}) (string, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-release:
			return "done", nil
		}
	}))
	serve(t, bus, wk)
	defer close(release) // before the worker stops (cleanups run later)
	nc := conn(t, bus)
	c := remote.NewClient(nc, remote.WithHeartbeat(20*time.Millisecond, 0))
	agent := testutil.Kit(t)
	testutil.Add(t, agent, discover(t, c, 1)...)
	batch := testutil.Session(t, agent, "s").Start(context.Background(), []toolkit.Call{testutil.Call("c1", "wait", `{}`)})
	testutil.WaitFor(t, started, "the worker to run the call")
	nc.Close()
	r := batch.Wait()[0]
	if !isLost(r.Err) || !strings.Contains(r.Err.Error(), "this agent's own NATS connection is closed") {
		t.Fatalf("%s: %v", r.State, r.Err)
	}
}

// TestNeverGiveUp: MissedHeartbeats large enough to mean "never give the
// worker up" does so. Before, Heartbeat × MissedHeartbeats overflowed into
// a negative duration and every call failed at once with *LostError
// ("no heartbeat for -2562047h47m16.854775808s" and the like).
func TestNeverGiveUp(t *testing.T) {
	bus := natstest.Bus(t)
	serve(t, bus, workerKit(t, nil), remote.WithTools("count"))
	c := remote.NewClient(conn(t, bus), remote.WithHeartbeat(time.Hour, math.MaxInt))
	if remote.LostAfter(c) <= 0 {
		t.Errorf("LostAfter %v", remote.LostAfter(c))
	}
	agent := testutil.Kit(t)
	testutil.Add(t, agent, discover(t, c, 1)...)
	r := testutil.Run(t, agent, "s", testutil.Call("c1", "count", `{"words":["x"]}`))[0]
	if r.State != events.StateSuccess {
		t.Fatalf("%s %q", r.State, r.Text())
	}
}

// TestManyBusyRetriesStayShort: the backoff between busy retries stays
// short however many retries are allowed (at most 200 ms, plus jitter).
// Before, it doubled without bound from 5 ms: with BusyRetries 12 the last
// wait was 10 s and the whole 20 s, so that a call meant to keep trying
// while workers are busy hung instead (here it ran into its 4 s deadline).
func TestManyBusyRetriesStayShort(t *testing.T) {
	bus := natstest.Bus(t)
	b := newBlock()
	wk := testutil.Kit(t)
	testutil.Add(t, wk, b.tool(toolkit.Spec{Name: "hold", ConcurrencySafe: true}))
	serve(t, bus, wk, remote.WithMaxInFlight(1), remote.WithMaxQueued(0))
	defer close(b.release)
	c := remote.NewClient(conn(t, bus), remote.WithBusyRetries(12))
	agent := testutil.Kit(t)
	testutil.Add(t, agent, discover(t, c, 1)...)
	sess := testutil.Session(t, agent, "s")
	sess.Start(context.Background(), []toolkit.Call{testutil.Call("c1", "hold", `{}`)})
	testutil.WaitFor(t, b.started, "the first call to start")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	r := sess.Run(ctx, []toolkit.Call{testutil.Call("c2", "hold", `{}`)})[0]
	if !errors.Is(r.Err, remote.ErrBusy) || !strings.Contains(r.Text(), "tried 13 times") {
		t.Fatalf("%s %q", r.State, r.Text())
	}
}

// TestClientPublishesOnlyItsSubjects: whatever a responder on a tool's
// subject writes in its frames (a subject for cancellations, as protocol 1
// took from the accept frame; a worker id that is a wildcard), the client
// publishes only the call, on <Prefix>.<tool>, and its cancellation, on the
// control subject, naming the call by its key and never its inbox. In
// protocol 1 a responder could make the agent publish on any subject it
// named (before a check was added): the cancelled call's message landed on
// "victim.cancel" and on "$JS.API.STREAM.PURGE.X".
func TestClientPublishesOnlyItsSubjects(t *testing.T) {
	for _, worker := range []string{"W1", "victim.>", "$JS.API.STREAM.PURGE.X"} {
		t.Run(worker, func(t *testing.T) {
			bus := natstest.Bus(t)
			wnc, vnc, anc := conn(t, bus), conn(t, bus), conn(t, bus)
			var victims []*nats.Subscription
			for _, s := range []string{"victim.>", "$JS.API.>", wire.DefaultPrefix + ".>"} {
				sub, err := vnc.SubscribeSync(s)
				if err != nil {
					t.Fatal(err)
				}
				victims = append(victims, sub)
			}
			took := make(chan string, 1)
			sub, err := wnc.Subscribe(wire.DefaultPrefix+".x", func(m *nats.Msg) {
				_ = wnc.PublishMsg(&nats.Msg{Subject: m.Reply, Header: nats.Header{wire.HeaderFrame: {"accept"}, wire.HeaderSeq: {"1"},
					wire.HeaderWorker: {worker}, "Toolstream-Control": {"victim.cancel"}}})
				took <- m.Reply
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sub.Unsubscribe() })
			if err := wnc.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := vnc.Flush(); err != nil {
				t.Fatal(err)
			}
			c := remote.NewClient(anc, remote.WithCancelWait(50*time.Millisecond))
			tl, err := c.NewTool(toolkit.Spec{Name: "x"}, json.RawMessage(`{"type":"object"}`))
			if err != nil {
				t.Fatal(err)
			}
			agent := testutil.Kit(t)
			testutil.Add(t, agent, tl)
			batch := testutil.Session(t, agent, "s").Start(context.Background(), []toolkit.Call{testutil.Call("c1", "x", `{}`)})
			var inbox string
			select {
			case inbox = <-took:
			case <-time.After(5 * time.Second):
				t.Fatal("the scripted worker did not take the call")
			}
			batch.Cancel()
			r := batch.Wait()[0]
			if r.State != events.StateInterrupted || !strings.Contains(r.Text(), "did not confirm") {
				t.Fatalf("%s %q", r.State, r.Text())
			}
			if err := anc.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := vnc.Flush(); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range victims {
				for {
					m, err := v.NextMsg(0)
					if err != nil {
						break
					}
					got = append(got, m.Subject+" "+string(m.Data))
					if m.Subject == control(wire.ControlCancel) && (string(m.Data) != wire.CallKey(inbox) || strings.Contains(string(m.Data), inbox)) {
						t.Errorf("the cancellation says %q, not the call's key", m.Data)
					}
				}
			}
			want := []string{wire.DefaultPrefix + ".x {}", control(wire.ControlCancel) + " " + wire.CallKey(inbox)}
			if !slices.Equal(got, want) {
				t.Errorf("the agent published %q, want %q", got, want)
			}
		})
	}
}

// TestWorkerPublishesNothingOnServerSubjects: a worker answers a call, a
// refusal or a cancellation on the reply subject the message gives, but
// never on one of the server's own ("$JS.API...", any "$" subject): its
// frames, refusals and cancel answers have empty bodies, and an empty
// message to $JS.API.STREAM.DELETE.<stream> deletes the stream. Before,
// whoever could publish to the tools' subjects could make a worker delete
// any stream of its account with the worker's credentials: each of the
// three messages below deleted the stream ("stream not found"). Now the
// call is dropped unanswered (counted as refused) and the cancellation is
// not answered; nothing reaches JetStream.
func TestWorkerPublishesNothingOnServerSubjects(t *testing.T) {
	bus := natstest.Bus(t)
	nc := conn(t, bus)
	wnc := conn(t, bus)
	w, err := remote.Serve(wnc, workerKit(t, nil), remote.WithTools("count"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.Stop(ctx)
	})
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	handled := func() uint64 { s := w.Stats(); return s.Calls + s.Refused }
	// A call made by hand whose result the worker keeps: a resync naming it
	// gets that result again, after the control messages before it.
	known := nc.NewInbox()
	frames, err := nc.SubscribeSync(known)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishMsg(&nats.Msg{Subject: wire.DefaultPrefix + ".count", Reply: known, Data: []byte(`{"words":["a"]}`),
		Header: nats.Header{wire.HeaderSession: {"s"}, wire.HeaderCall: {"known"}}}); err != nil {
		t.Fatal(err)
	}
	result := func() *nats.Msg {
		t.Helper()
		for {
			m, err := frames.NextMsg(5 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if m.Header.Get(wire.HeaderFrame) == "result" {
				return m
			}
		}
	}
	result() // the call's own
	ask := func() *nats.Msg {
		t.Helper()
		if err := nc.PublishMsg(&nats.Msg{Subject: control(wire.ControlResync), Data: []byte(wire.CallKey(known))}); err != nil {
			t.Fatal(err)
		}
		return result()
	}
	for i, tc := range []struct {
		name   string
		msg    *nats.Msg
		cancel bool
	}{
		{"a call", &nats.Msg{Subject: wire.DefaultPrefix + ".count", Data: []byte(`{"words":["a"]}`),
			Header: nats.Header{wire.HeaderSession: {"s"}, wire.HeaderCall: {"c1"}}}, false},
		{"a malformed call", &nats.Msg{Subject: wire.DefaultPrefix + ".count", Data: []byte(`{}`)}, false},
		{"a control message", &nats.Msg{Subject: control(wire.ControlCancel), Data: []byte(wire.CallKey("_INBOX.none"))}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("VICTIM%d", i)
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{"victim" + name + ".>"}}); err != nil {
				t.Fatal(err)
			}
			before := handled()
			tc.msg.Reply = "$JS.API.STREAM.DELETE." + name
			if err := nc.PublishMsg(tc.msg); err != nil {
				t.Fatal(err)
			}
			if tc.cancel {
				// The worker handles its control messages in order: once it
				// has answered a resync of a call it runs, it has handled the
				// message before.
				if m := ask(); m.Header.Get(wire.HeaderWorker) != w.ID() {
					t.Fatalf("the resync's answer: %v", m.Header)
				}
			} else {
				for deadline := time.Now().Add(5 * time.Second); handled() == before || w.Stats().InFlight > 0; time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("the worker did not take the call")
					}
				}
			}
			if err := wnc.Flush(); err != nil { // what the worker sent is at the server
				t.Fatal(err)
			}
			if _, err := js.Stream(ctx, name); err != nil {
				t.Fatalf("after %s with reply subject %s: %v", tc.name, tc.msg.Reply, err)
			}
		})
	}
}
