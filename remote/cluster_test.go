package remote_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/groups/natskv"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// On a three-node cluster with the events stream and the group state kept
// on all three (replicas 3), the agent connects to node 0 and the worker to
// node 1; one of them is killed in the middle of a run.
func TestClusterAgentNodeDies(t *testing.T)  { clusterRun(t, 0) }
func TestClusterWorkerNodeDies(t *testing.T) { clusterRun(t, 1) }

// counter counts the events an agent's toolkit produced.
type counter struct{ n atomic.Int64 }

func (c *counter) Observe(*events.Event) { c.n.Add(1) }

func clusterRun(t *testing.T, victim int) {
	testutil.Long(t)
	if testing.Short() {
		t.Skip("a three-node cluster takes seconds")
	}
	cl := natstest.NewCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fast := []nats.Option{nats.DontRandomize(), nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond), nats.ReconnectJitter(0, 0)}

	// The worker, on node 1: a tool that streams in steps.
	wnc, err := nats.Connect(cl.URLs(1), fast...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wnc.Close)
	wk := testutil.Kit(t)
	testutil.Add(t, wk, toolkit.MustTool(toolkit.Spec{Name: "work", ReadOnly: true, ConcurrencySafe: true},
		func(ctx context.Context, in slowIn) (string, error) {
			em := stream.From(ctx)
			for i := range in.Steps {
				em.Step("step", i+1, in.Steps)
				_ = em.Text(fmt.Sprintf("%d,", i))
				select {
				case <-ctx.Done():
					return "", ctx.Err()
				case <-time.After(30 * time.Millisecond):
				}
			}
			return "done", nil
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

	// The agent, on node 0: durable events (R3), groups in KV (R3).
	bus, err := natsbus.Open(ctx, natsbus.WithURL(cl.URLs(0)), natsbus.WithNATSOptions(fast...),
		natsbus.WithDurable(natsbus.Durable{Stream: "TS_EVENTS", Replicas: 3}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = bus.Close(ctx)
	})
	store, err := natskv.New(ctx, bus.JetStream(), "TS_GROUPS", natskv.WithReplicas(3))
	if err != nil {
		t.Fatal(err)
	}
	count := &counter{}
	agent := testutil.Kit(t, toolkit.WithInlineObserver(bus.Publisher()), toolkit.WithInlineObserver(count))
	mgr, err := groups.Install(agent, groups.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	testutil.Add(t, agent, toolkit.MustTool(toolkit.Spec{Name: "note"}, func(context.Context, struct{}) (string, error) { return "noted", nil }),
		toolkit.MustTool(toolkit.Spec{Name: "more"}, func(context.Context, struct{}) (string, error) { return "more", nil }))
	if err := mgr.Add(groups.Group{Name: "notes", Description: "notes", Tools: []string{"note"}},
		groups.Group{Name: "extra", Description: "more", Tools: []string{"more"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := mgr.Activate(ctx, "conv", "notes"); err != nil {
		t.Fatal(err)
	}
	// The default heartbeats (1 s x 3): the agent's own absence does not
	// count, and its resync, or the worker's after its own reconnection,
	// brings back what was lost.
	c := remote.NewClient(bus.Conn())
	testutil.Add(t, agent, discover(t, c, 1)...)
	sess := testutil.Session(t, agent, "conv")

	// The run: batches of three remote calls and a local one; the victim
	// dies while the second batch runs.
	const batches = 4
	killed := make(chan struct{})
	var once sync.Once
	stop := agent.ObserveInline(toolkit.ObserverFunc(func(ev *events.Event) {
		if ev.Type == events.TypeProgress && ev.Call == "b1-0" {
			once.Do(func() { go func() { cl.Kill(victim); close(killed) }() })
		}
	}))
	defer stop()
	var results []toolkit.Result
	for b := range batches {
		calls := []toolkit.Call{
			testutil.Call(fmt.Sprintf("b%d-0", b), "work", `{"steps":15}`),
			testutil.Call(fmt.Sprintf("b%d-1", b), "work", `{"steps":15}`),
			testutil.Call(fmt.Sprintf("b%d-2", b), "work", `{"steps":15}`),
			testutil.Call(fmt.Sprintf("b%d-n", b), "note", `{}`),
		}
		results = append(results, sess.Run(ctx, calls)...)
	}
	select {
	case <-killed:
	case <-time.After(10 * time.Second):
		t.Fatal("the node was never killed")
	}
	want := ""
	for i := range 15 {
		want += fmt.Sprintf("%d,", i)
	}
	for _, r := range results {
		w := want + "done"
		if r.Call.Name == "note" {
			w = "noted"
		}
		if r.State != events.StateSuccess || r.Text() != w {
			t.Errorf("%s: %s %q", r.Call.ID, r.State, r.Text())
		}
	}

	// Every event once in the stream: what the toolkit produced is what
	// the publisher handed over and what a replay reads, no (call, seq)
	// twice.
	if err := bus.Publisher().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	produced := count.n.Load()
	var pst natsbus.PublisherStats
	deadline := time.Now().Add(20 * time.Second)
	for {
		pst = bus.Publisher().Stats()
		if int64(pst.Published) >= produced || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if int64(pst.Published) != produced || pst.Undelivered != 0 {
		t.Fatalf("produced %d events, publisher stats %+v", produced, pst)
	}
	type key struct {
		call string
		seq  uint64
	}
	var mu sync.Mutex
	seen := map[key]int{}
	total := 0
	stopReplay, err := bus.Replay(ctx, bus.Subjects().Session("conv"), 0, func(_ uint64, ev *events.Event) {
		mu.Lock()
		seen[key{ev.Call, ev.Seq}]++
		total++
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	for {
		mu.Lock()
		n := total
		mu.Unlock()
		if int64(n) >= produced || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // room for a duplicate to show
	stopReplay()
	var twice []key
	for k, n := range seen {
		if n > 1 {
			twice = append(twice, k)
		}
	}
	if int64(total) != produced || len(twice) > 0 {
		t.Fatalf("replayed %d events (%d distinct), produced %d; stored twice: %v", total, len(seen), produced, twice)
	}
	t.Logf("node %d killed mid-run: %d calls done, %d events produced = published = replayed once each (publisher retried %d)",
		victim, len(results), produced, pst.Retried)

	// The group state survived, and can still change.
	active, err := mgr.Active(ctx, "conv")
	if err != nil || !slices.Equal(active, []string{"notes"}) {
		t.Fatalf("active groups after the kill: %v %v", active, err)
	}
	if _, err := mgr.Activate(ctx, "conv", "extra"); err != nil {
		t.Fatalf("changing groups after the kill: %v", err)
	}
	other, err := natskv.New(ctx, bus.JetStream(), "TS_GROUPS", natskv.WithReplicas(3))
	if err != nil {
		t.Fatal(err)
	}
	st, err := other.Load(ctx, "conv")
	if err != nil || !st["notes"] || !st["extra"] {
		t.Fatalf("state read anew: %v %v", st, err)
	}
}
