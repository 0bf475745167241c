package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/internal/wire"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// conn opens a client connection to the bus's embedded server, closed at
// the end of the test.
func conn(t *testing.T, bus *natsbus.Bus) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect("", nats.InProcessServer(bus.Server()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// serve starts a worker for tk on its own connection, stopped at the end of
// the test (before the connection closes).
func serve(t *testing.T, bus *natsbus.Bus, tk *toolkit.Toolkit, opts ...remote.WorkerOption) *remote.Worker {
	t.Helper()
	nc := conn(t, bus)
	w, err := remote.Serve(nc, tk, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.Stop(ctx)
	})
	return w
}

// seen records what the worker's tools saw of their calls.
type seen struct {
	mu    sync.Mutex
	info  []toolkit.CallInfo
	trace []events.TraceContext
}

type countIn struct {
	Words []string `json:"words"`
}

type countOut struct {
	N int `json:"n"`
}

// sharedTools are served by workers and also run in process, to compare.
func sharedTools(s *seen) []*toolkit.Tool {
	retried := 0
	var mu sync.Mutex
	return []*toolkit.Tool{
		toolkit.MustTool(toolkit.Spec{Name: "count", Description: "counts words", ReadOnly: true, ConcurrencySafe: true},
			func(ctx context.Context, in countIn) (countOut, error) {
				if s != nil {
					info, _ := toolkit.CallInfoFrom(ctx)
					tr, _ := remote.TraceContext(ctx)
					s.mu.Lock()
					s.info = append(s.info, info)
					s.trace = append(s.trace, tr)
					s.mu.Unlock()
				}
				em := stream.From(ctx)
				for i, w := range in.Words {
					em.Step("word "+w, i+1, len(in.Words))
					_ = em.Text(w + "\n")
				}
				em.SetMeta("words", len(in.Words))
				return countOut{N: len(in.Words)}, nil
			}),
		toolkit.MustTool(toolkit.Spec{Name: "fail", Description: "fails after streaming"},
			func(ctx context.Context, _ struct{}) (string, error) {
				_ = stream.From(ctx).Text("partial\n")
				return "", errors.New("disk full")
			}),
		toolkit.MustTool(toolkit.Spec{Name: "twice", Description: "fails once, then works"},
			func(ctx context.Context, _ struct{}) (string, error) {
				mu.Lock()
				retried++
				n := retried
				mu.Unlock()
				_ = stream.From(ctx).Text(fmt.Sprintf("attempt %d\n", n))
				if n%2 == 1 {
					return "", interceptors.Transient(errors.New("flaky"))
				}
				return "ok", nil
			}),
	}
}

// retryTwice retries the tool "twice" without waiting long.
func retryTwice() toolkit.Interceptor {
	retry := interceptors.Retry(interceptors.RetryBackoff(time.Millisecond, time.Millisecond))
	retry.Tools = []string{"twice"}
	return retry
}

// workerKit is a worker's toolkit: the shared tools with a Retry of its own
// (the worker's chain: what belongs to the tool).
func workerKit(t *testing.T, s *seen) *toolkit.Toolkit {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, sharedTools(s)...)
	if err := tk.Use(retryTwice()); err != nil {
		t.Fatal(err)
	}
	return tk
}

// discover discovers the workers' tools and wants that many. On a cluster
// a worker's subscriptions reach the other servers a moment after it
// serves (on a busy machine, seconds): fewer tools are asked for again, for
// up to 20 s.
func discover(t *testing.T, c *remote.Client, want int) []*toolkit.Tool {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		tools, err := c.Discover(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if len(tools) == want || len(tools) > want || time.Now().After(deadline) {
			if len(tools) != want {
				t.Fatalf("discovered %d tools, want %d", len(tools), want)
			}
			return tools
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRemoteLikeLocal: a remote call gives the model exactly what the same
// tool gives in process (content, state, error text, structured output),
// its events go out once on the usual subjects through the agent's
// publisher (start, progress, deltas adding up, one result, seq gap-free),
// and the worker's tool sees the call's session, id, agent and trace context.
func TestRemoteLikeLocal(t *testing.T) {
	bus := natstest.Bus(t)
	s := &seen{}
	w := serve(t, bus, workerKit(t, s))

	c := remote.NewClient(conn(t, bus))
	tools := discover(t, c, 3)
	byName := map[string]*toolkit.Tool{}
	for _, tl := range tools {
		byName[tl.Name()] = tl
	}
	if sp := byName["count"].Spec(); !sp.ReadOnly || !sp.ConcurrencySafe || sp.Description != "counts words" {
		t.Fatalf("count's spec travelled as %+v", sp)
	}
	local := toolkit.MustTool(toolkit.Spec{Name: "count"}, func(context.Context, countIn) (countOut, error) { return countOut{}, nil })
	if string(byName["count"].Definition().Parameters) != string(local.Definition().Parameters) || len(byName["count"].Definition().OutputSchema) == 0 {
		t.Fatalf("schemas: in %s, out %s", byName["count"].Definition().Parameters, byName["count"].Definition().OutputSchema)
	}

	rec := &testutil.Recorder{}
	agent := testutil.Kit(t, toolkit.WithInlineObserver(bus.Publisher()), toolkit.WithObserver(rec))
	testutil.Add(t, agent, tools...)
	inproc := testutil.Kit(t)
	testutil.Add(t, inproc, sharedTools(nil)...)
	if err := inproc.Use(retryTwice()); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var wire []*events.Event
	sub, err := bus.Subscribe(bus.Subjects().Session("conv-1"), func(ev *events.Event) {
		mu.Lock()
		wire = append(wire, ev)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()

	calls := []toolkit.Call{
		testutil.Call("c1", "count", `{"words":["a","b","c"]}`),
		testutil.Call("c2", "fail", `{}`),
		testutil.Call("c3", "twice", `{}`),
	}
	ctx := toolkit.WithAgent(remote.WithTraceContext(context.Background(), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "k=v"), "planner")
	got := testutil.Session(t, agent, "conv-1").Run(ctx, calls)
	want := testutil.Session(t, inproc, "conv-1").Run(context.Background(), calls)
	for i := range calls {
		g, w := got[i], want[i]
		if g.State != w.State || !events.EqualContent(g.Content, w.Content) {
			t.Errorf("%s: remote %s %q, in process %s %q", calls[i].ID, g.State, g.Text(), w.State, w.Text())
		}
		if (g.Err == nil) != (w.Err == nil) || g.Err != nil && g.Err.Error() != w.Err.Error() {
			t.Errorf("%s: remote error %v, in process %v", calls[i].ID, g.Err, w.Err)
		}
		if d := testutil.Deltas(rec.Of(calls[i].ID)); !events.EqualContent(d, g.Content) {
			t.Errorf("%s: deltas %+v do not add up to the result %+v", calls[i].ID, d, g.Content)
		}
	}
	if got[0].Meta["words"] != float64(3) || got[0].Meta[remote.MetaWorker] != w.ID() {
		t.Errorf("meta %v: want words 3 and worker %s", got[0].Meta, w.ID())
	}
	if got[0].Text() != "a\nb\nc\n{\"n\":3}" {
		t.Errorf("count: %q", got[0].Text())
	}

	// On the wire: each call's events once, gap-free, one result, last.
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := 0
		for _, ev := range wire {
			if ev.Type == events.TypeResult {
				n++
			}
		}
		mu.Unlock()
		if n == len(calls) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // anything more would be a duplicate
	mu.Lock()
	defer mu.Unlock()
	for _, c := range calls {
		var evs []*events.Event
		for _, ev := range wire {
			if ev.Call == c.ID {
				evs = append(evs, ev)
			}
		}
		results, progress := 0, 0
		for i, ev := range evs {
			if ev.Seq != uint64(i+1) {
				t.Fatalf("%s: event %d has seq %d", c.ID, i, ev.Seq)
			}
			if ev.Type == events.TypeResult {
				results++
			}
			if ev.Type == events.TypeProgress {
				progress++
			}
			testutil.CheckEvent(t, events.AppendJSON(nil, ev))
		}
		if results != 1 || evs[len(evs)-1].Type != events.TypeResult || evs[0].Type != events.TypeStart {
			t.Fatalf("%s: %d results; types %v", c.ID, results, testutil.Types(evs))
		}
		if c.ID == "c1" && progress != 3 {
			t.Errorf("c1: %d progress events on the wire, want 3", progress)
		}
		if evs[0].Agent != "planner" {
			t.Errorf("%s: agent %q", c.ID, evs[0].Agent)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.info) != 1 || s.info[0].Session != "conv-1" || s.info[0].CallID != "c1" || s.info[0].Agent != "planner" {
		t.Errorf("the worker's tool saw %+v", s.info)
	}
	if len(s.trace) != 1 || s.trace[0].Parent != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" || s.trace[0].State != "k=v" {
		t.Errorf("trace context on the worker: %+v", s.trace)
	}
}

// TestNoResponders: a remote tool nobody serves fails at once with a clear
// error result.
func TestNoResponders(t *testing.T) {
	bus := natstest.Bus(t)
	c := remote.NewClient(conn(t, bus))
	tl, err := c.NewTool(toolkit.Spec{Name: "absent"}, json.RawMessage(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	agent := testutil.Kit(t)
	testutil.Add(t, agent, tl)
	start := time.Now()
	r := testutil.Run(t, agent, "s", testutil.Call("c1", "absent", `{}`))[0]
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("took %v: no responders must fail at once", took)
	}
	if r.State != events.StateError || !errors.Is(r.Err, remote.ErrNoWorkers) || !strings.Contains(r.Text(), `no worker serves the tool "absent"`) {
		t.Fatalf("%s %q (%v)", r.State, r.Text(), r.Err)
	}
	if _, err := c.Tool(context.Background(), "absent"); !errors.Is(err, remote.ErrNoWorkers) {
		t.Fatalf("Tool: %v", err)
	}
}

// block is a worker tool that waits until released or cancelled, and says
// when it started and how it ended.
type block struct {
	started chan struct{}
	release chan struct{}
	ended   chan error
}

func newBlock() *block {
	return &block{started: make(chan struct{}, 16), release: make(chan struct{}), ended: make(chan error, 16)}
}

func (b *block) tool(spec toolkit.Spec) *toolkit.Tool {
	return toolkit.MustTool(spec, func(ctx context.Context, _ struct{}) (string, error) {
		b.started <- struct{}{}
		select {
		case <-b.release:
			b.ended <- nil
			return "released", nil
		case <-ctx.Done():
			b.ended <- ctx.Err()
			return "", ctx.Err()
		}
	})
}

// TestBusyRefused: a worker runs at most MaxInFlight calls and holds at
// most MaxQueued more; with no queue, the next one is refused at once,
// clearly, and counted.
func TestBusyRefused(t *testing.T) {
	bus := natstest.Bus(t)
	b := newBlock()
	wk := testutil.Kit(t)
	testutil.Add(t, wk, b.tool(toolkit.Spec{Name: "hold", ConcurrencySafe: true}))
	w := serve(t, bus, wk, remote.WithMaxInFlight(1), remote.WithMaxQueued(0))
	c := remote.NewClient(conn(t, bus), remote.WithBusyRetries(2))
	agent := testutil.Kit(t)
	testutil.Add(t, agent, discover(t, c, 1)...)
	sess := testutil.Session(t, agent, "s")
	first := sess.Start(context.Background(), []toolkit.Call{testutil.Call("c1", "hold", `{}`)})
	testutil.WaitFor(t, b.started, "the first call to start")
	start := time.Now()
	r := sess.Run(context.Background(), []toolkit.Call{testutil.Call("c2", "hold", `{}`)})[0]
	if !errors.Is(r.Err, remote.ErrBusy) || !strings.Contains(r.Text(), "busy: 1 calls running and 0 waiting, its limits") || !strings.Contains(r.Text(), "tried 3 times") {
		t.Fatalf("second call: %s %q", r.State, r.Text())
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the refusal took %v", took)
	}
	close(b.release)
	if r := first.Wait()[0]; r.State != events.StateSuccess {
		t.Fatalf("first call: %s %q", r.State, r.Text())
	}
	if st := w.Stats(); st.Refused != 3 || st.Calls != 1 || st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestCancelCrossesTheWire: cancelling the agent's batch, or its deadline
// passing, ends the handler on the worker within the cancel grace.
func TestCancelCrossesTheWire(t *testing.T) {
	bus := natstest.Bus(t)
	b := newBlock()
	wk := testutil.Kit(t)
	testutil.Add(t, wk, b.tool(toolkit.Spec{Name: "hold"}))
	serve(t, bus, wk)
	c := remote.NewClient(conn(t, bus))
	agent := testutil.Kit(t, toolkit.WithDefaultTimeout(400*time.Millisecond))
	testutil.Add(t, agent, discover(t, c, 1)...)
	sess := testutil.Session(t, agent, "s")

	batch := sess.Start(context.Background(), []toolkit.Call{testutil.Call("c1", "hold", `{}`)})
	testutil.WaitFor(t, b.started, "the call to start on the worker")
	cancelled := time.Now()
	batch.Cancel()
	select {
	case err := <-b.ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the worker's handler ended with %v", err)
		}
		if took := time.Since(cancelled); took > 250*time.Millisecond {
			t.Errorf("the handler stopped %v after the cancel", took)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the worker's handler was not cancelled")
	}
	r := batch.Wait()[0]
	if r.State != events.StateInterrupted || !strings.Contains(r.Text(), "stopped the call") {
		t.Fatalf("cancelled call: %s %q", r.State, r.Text())
	}

	// The deadline: 400 ms on the agent, the same on the worker.
	start := time.Now()
	r = sess.Run(context.Background(), []toolkit.Call{testutil.Call("c2", "hold", `{}`)})[0]
	testutil.WaitFor(t, b.started, "the second call to start")
	select {
	case err := <-b.ended:
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			t.Fatalf("the worker's handler ended with %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the worker's handler outlived the deadline")
	}
	if r.State != events.StateTimeout {
		t.Fatalf("call past its deadline: %s %q", r.State, r.Text())
	}
	if took := time.Since(start); took > 900*time.Millisecond {
		t.Errorf("the timed-out call took %v", took)
	}
}

// TestLimitsRunOnTheAgent: the agent's interceptors decide before anything
// is sent: a call over the limit never reaches a worker.
func TestLimitsRunOnTheAgent(t *testing.T) {
	bus := natstest.Bus(t)
	w := serve(t, bus, workerKit(t, nil), remote.WithTools("count"))
	c := remote.NewClient(conn(t, bus))
	agent := testutil.Kit(t)
	testutil.Add(t, agent, discover(t, c, 1)...)
	if err := agent.Use(interceptors.CallLimits(interceptors.PerSession(1, "count"))); err != nil {
		t.Fatal(err)
	}
	rs := testutil.Run(t, agent, "s", testutil.Call("c1", "count", `{"words":["x"]}`), testutil.Call("c2", "count", `{"words":["y"]}`))
	// The two run in parallel: either may be the one over the limit.
	if (rs[0].State == events.StateSuccess) == (rs[1].State == events.StateSuccess) {
		t.Fatalf("results %s %q / %s %q", rs[0].State, rs[0].Text(), rs[1].State, rs[1].Text())
	}
	if st := w.Stats(); st.Calls != 1 {
		t.Fatalf("the worker got %d calls, want 1", st.Calls)
	}
}

// TestDiscoverable: the micro service answers $SRV.PING, INFO and STATS;
// the endpoints carry the tool's spec and schema, the stats the worker's
// counters.
func TestDiscoverable(t *testing.T) {
	bus := natstest.Bus(t)
	w := serve(t, bus, workerKit(t, nil), remote.WithMaxInFlight(7))
	nc := conn(t, bus)
	ask := func(verb micro.Verb) []byte {
		subj, err := micro.ControlSubject(verb, wire.DefaultService, "")
		if err != nil {
			t.Fatal(err)
		}
		m, err := nc.Request(subj, nil, 2*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", subj, err)
		}
		return m.Data
	}
	var ping micro.Ping
	if err := json.Unmarshal(ask(micro.PingVerb), &ping); err != nil || ping.ID != w.ID() {
		t.Fatalf("ping %+v %v", ping, err)
	}
	var info micro.Info
	if err := json.Unmarshal(ask(micro.InfoVerb), &info); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ep := range info.Endpoints {
		names = append(names, ep.Name)
		if ep.QueueGroup != wire.DefaultQueueGroup || ep.Subject != wire.DefaultPrefix+"."+ep.Name ||
			!json.Valid([]byte(ep.Metadata[wire.MetaSchema])) || !json.Valid([]byte(ep.Metadata[wire.MetaSpec])) {
			t.Errorf("endpoint %+v", ep)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"count", "fail", "twice"}) {
		t.Fatalf("endpoints %v", names)
	}
	var stats micro.Stats
	if err := json.Unmarshal(ask(micro.StatsVerb), &stats); err != nil || len(stats.Endpoints) != 3 {
		t.Fatalf("stats %+v %v", stats, err)
	}
	var ws remote.WorkerStats
	if err := json.Unmarshal(stats.Endpoints[0].Data, &ws); err != nil || ws.MaxInFlight != 7 {
		t.Fatalf("stats data %s: %v", stats.Endpoints[0].Data, err)
	}
}

// TestResolver: a tool a worker starts serving after the agent started is
// found when the model calls it.
func TestResolver(t *testing.T) {
	bus := natstest.Bus(t)
	c := remote.NewClient(conn(t, bus))
	agent := testutil.Kit(t, toolkit.WithToolResolver(c.Resolver()))
	r := testutil.Run(t, agent, "s", testutil.Call("c1", "count", `{"words":["x"]}`))[0]
	if !isErr[*toolkit.UnknownToolError](r.Err) {
		t.Fatalf("before any worker: %s %q", r.State, r.Text())
	}
	serve(t, bus, workerKit(t, nil))
	r = testutil.Run(t, agent, "s", testutil.Call("c2", "count", `{"words":["x"]}`))[0]
	if r.State != events.StateSuccess || r.Text() != "x\n{\"n\":1}" {
		t.Fatalf("after: %s %q", r.State, r.Text())
	}
}

// TestSameCallIDAgain: a call id sent again as soon as its result came (a
// retry, or a benchmark's loop) is taken, not refused as a duplicate.
func TestSameCallIDAgain(t *testing.T) {
	bus := natstest.Bus(t)
	serve(t, bus, workerKit(t, nil), remote.WithTools("count"))
	c := remote.NewClient(conn(t, bus))
	agent := testutil.Kit(t)
	testutil.Add(t, agent, discover(t, c, 1)...)
	sess := testutil.Session(t, agent, "s")
	for i := range 300 {
		r := sess.Run(context.Background(), []toolkit.Call{testutil.Call("same", "count", `{"words":["x"]}`)})[0]
		if r.State != events.StateSuccess {
			t.Fatalf("run %d: %s %q", i, r.State, r.Text())
		}
	}
}

// TestTransientCrossesTheWire: an error the tool marked transient on the
// worker is retried by the agent's ordinary Retry, like in process.
func TestTransientCrossesTheWire(t *testing.T) {
	bus := natstest.Bus(t)
	var mu sync.Mutex
	tries := map[string]int{}
	wk := testutil.Kit(t)
	testutil.Add(t, wk, toolkit.MustTool(toolkit.Spec{Name: "flaky"}, func(ctx context.Context, _ struct{}) (string, error) {
		info, _ := toolkit.CallInfoFrom(ctx)
		mu.Lock()
		tries[info.CallID]++
		n := tries[info.CallID]
		mu.Unlock()
		if n == 1 {
			return "", interceptors.Transient(errors.New("service unavailable"))
		}
		return fmt.Sprintf("attempt %d", n), nil
	}))
	serve(t, bus, wk)
	c := remote.NewClient(conn(t, bus))
	agent := testutil.Kit(t)
	testutil.Add(t, agent, discover(t, c, 1)...)
	if err := agent.Use(interceptors.Retry(interceptors.RetryBackoff(time.Millisecond, time.Millisecond))); err != nil {
		t.Fatal(err)
	}
	r := testutil.Run(t, agent, "s", testutil.Call("c1", "flaky", `{}`))[0]
	if r.State != events.StateSuccess || r.Text() != "attempt 2" {
		t.Fatalf("%s %q", r.State, r.Text())
	}
}

// TestBadRequests: a request without the call's headers, or with a
// duration that is not one, is refused with 400 and the reason; the worker
// runs nothing.
func TestBadRequests(t *testing.T) {
	bus := natstest.Bus(t)
	w := serve(t, bus, workerKit(t, nil), remote.WithTools("count"))
	nc := conn(t, bus)
	for _, h := range []nats.Header{
		{},
		{wire.HeaderSession: {"s"}},
		{wire.HeaderSession: {"s"}, wire.HeaderCall: {"c"}, wire.HeaderTimeout: {"-5"}},
		{wire.HeaderSession: {"s"}, wire.HeaderCall: {"c"}, wire.HeaderTimeout: {"99999999999999999"}},
		{wire.HeaderSession: {"s"}, wire.HeaderCall: {"c"}, wire.HeaderHeartbeat: {"soon"}},
	} {
		m, err := nc.RequestMsg(&nats.Msg{Subject: wire.DefaultPrefix + ".count", Header: h, Data: []byte(`{"words":[]}`)}, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if m.Header.Get(micro.ErrorCodeHeader) != "400" || m.Header.Get(micro.ErrorHeader) == "" {
			t.Errorf("headers %v: answer %v", h, m.Header)
		}
	}
	if st := w.Stats(); st.Calls != 0 || st.Refused != 5 {
		t.Fatalf("stats %+v", st)
	}
}

// TestRoomForTheNextCall: a worker at its limit of one call takes the
// caller's next call as soon as the previous result came back.
func TestRoomForTheNextCall(t *testing.T) {
	bus := natstest.Bus(t)
	serve(t, bus, workerKit(t, nil), remote.WithTools("count"), remote.WithMaxInFlight(1))
	c := remote.NewClient(conn(t, bus), remote.WithBusyRetries(0))
	agent := testutil.Kit(t)
	testutil.Add(t, agent, discover(t, c, 1)...)
	sess := testutil.Session(t, agent, "s")
	for i := range 300 {
		r := sess.Run(context.Background(), []toolkit.Call{testutil.Call(fmt.Sprint("c", i), "count", `{"words":["x"]}`)})[0]
		if r.State != events.StateSuccess {
			t.Fatalf("call %d: %s %q", i, r.State, r.Text())
		}
	}
}
