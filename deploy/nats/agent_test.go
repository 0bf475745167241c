package natsdeploy_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/durable"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/groups/natskv"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

const session = "demo" // the session toolstream.conf's viewer may read

// openBus opens a bus as p through the public API, closed at the end of the
// test.
func (d *deployment) openBus(p party, opts ...natsbus.Option) (*natsbus.Bus, *client) {
	d.t.Helper()
	c := &client{who: p, errs: make(chan error, 256)}
	nopts := append(d.options(p), c.errorHandler())
	bus, err := natsbus.Open(within(d.t, 10*time.Second), append([]natsbus.Option{natsbus.WithURL(d.url()), natsbus.WithNATSOptions(nopts...)}, opts...)...)
	if err != nil {
		d.t.Fatalf("%s: opening the bus: %v", p, err)
	}
	d.t.Cleanup(func() {
		if err := bus.Close(within(d.t, 10*time.Second)); err != nil {
			d.t.Errorf("%s: closing the bus: %v", p, err)
		}
	})
	c.Conn = bus.Conn()
	return bus, c
}

type linesIn struct {
	Text string `json:"text"`
}

// countLines is the worker's tool: it reports progress and streams each line
// back as a delta.
func countLines() *toolkit.Tool {
	return toolkit.MustTool(toolkit.Spec{Name: "count_lines", Description: "counts lines", ReadOnly: true, ConcurrencySafe: true},
		func(ctx context.Context, in linesIn) (string, error) {
			em := stream.From(ctx)
			lines := strings.Split(in.Text, "\n")
			for i, l := range lines {
				em.Step("line "+l, i+1, len(lines))
				_ = em.Text(l + "\n")
			}
			return fmt.Sprintf("%d lines", len(lines)), nil
		})
}

// serveWorker starts a worker as the worker party, serving tools.
func (d *deployment) serveWorker(tools ...*toolkit.Tool) (*remote.Worker, *client) {
	d.t.Helper()
	c := d.connect(worker)
	tk := toolkit.New()
	d.t.Cleanup(func() { _ = tk.Close(within(d.t, 5*time.Second)) })
	if err := tk.Add(tools...); err != nil {
		d.t.Fatal(err)
	}
	w, err := remote.Serve(c.Conn, tk)
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { _ = w.Stop(within(d.t, 5*time.Second)) })
	return w, c
}

// collector gathers events and says when one of a type has come.
type collector struct {
	mu  sync.Mutex
	evs []*events.Event
	got chan events.Type
}

func newCollector() *collector { return &collector{got: make(chan events.Type, 1024)} }

func (c *collector) add(ev *events.Event) {
	c.mu.Lock()
	c.evs = append(c.evs, ev)
	c.mu.Unlock()
	c.got <- ev.Type
}

func (c *collector) waitFor(t *testing.T, who string, typ events.Type) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-c.got:
			if got == typ {
				return
			}
		case <-timeout:
			t.Fatalf("%s: no %s event within 10s", who, typ)
		}
	}
}

func (c *collector) all() []*events.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*events.Event(nil), c.evs...)
}

// TestAgentWorksEndToEnd: with every party on its own user of
// toolstream.conf, over TLS, the agent runs a call on a remote worker
// (discovered through $SRV) with the durable store and the group state in
// their buckets; a viewer of the session sees the call's events live and by
// replay, an approver sees the approval a second call asks for and the
// suspension, and the call goes on once approved. No party is refused
// anything on the way.
func TestAgentWorksEndToEnd(t *testing.T) {
	d := deploy(t, "toolstream.conf")
	bus, agentConn := d.openBus(agent, natsbus.WithDurable(natsbus.Durable{}))
	js := bus.JetStream()
	store, err := durable.New(within(t, 10*time.Second), js, "")
	if err != nil {
		t.Fatal(err)
	}
	groupState, err := natskv.New(within(t, 10*time.Second), js, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := groupState.Update(within(t, 5*time.Second), session, func(map[string]bool) (map[string]bool, error) {
		return map[string]bool{"files": true}, nil
	}); err != nil {
		t.Fatal(err)
	}

	_, workerConn := d.serveWorker(countLines())

	viewerBus, viewerConn := d.openBus(viewer)
	live := newCollector()
	if _, err := viewerBus.Subscribe(viewerBus.Subjects().Session(session), live.add); err != nil {
		t.Fatal(err)
	}
	approverConn := d.connect(approver)
	asked := newCollector()
	for _, typ := range []events.Type{interceptors.ApprovalEvent, events.TypeSuspend} {
		if _, err := approverConn.Subscribe("toolstream.*.*."+string(typ), func(m *nats.Msg) {
			if ev, err := events.Decode(m.Data); err == nil {
				asked.add(ev)
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []*client{viewerConn, approverConn} {
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
	}

	perms := interceptors.NewPermissions()
	tk := toolkit.New(toolkit.WithInlineObserver(bus.Publisher()))
	t.Cleanup(func() { _ = tk.Close(within(t, 5*time.Second)) })
	if err := tk.Use(store.Interceptor()); err != nil {
		t.Fatal(err)
	}
	if err := tk.Use(perms.Interceptor()); err != nil {
		t.Fatal(err)
	}
	stopDeliver, err := store.Deliver(within(t, 10*time.Second), tk, durable.WithPermissions(perms))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopDeliver)
	rc := remote.NewClient(bus.Conn())
	t.Cleanup(func() { _ = rc.Close() })
	tool, err := rc.Tool(within(t, 5*time.Second), "count_lines")
	if err != nil {
		t.Fatal(err)
	}
	note := toolkit.MustTool(toolkit.Spec{Name: "write_note", Description: "writes a note (asks first: not read-only)"},
		func(_ context.Context, in linesIn) (string, error) { return "noted: " + in.Text, nil })
	if err := tk.Add(tool, note); err != nil {
		t.Fatal(err)
	}
	sess, err := tk.Session(session)
	if err != nil {
		t.Fatal(err)
	}

	res := sess.Run(within(t, 10*time.Second), []toolkit.Call{{ID: "c1", Name: "count_lines", Args: []byte(`{"text":"a\nb\nc"}`)}})[0]
	if res.IsError() || res.Text() != "a\nb\nc\n3 lines" {
		t.Fatalf("the remote call: %s %q %v", res.State, res.Text(), res.Err)
	}
	live.waitFor(t, "the viewer, live", events.TypeResult)

	batch := sess.Start(within(t, 10*time.Second), []toolkit.Call{{ID: "c2", Name: "write_note", Args: []byte(`{"text":"hi"}`)}})
	asked.waitFor(t, "the approver", interceptors.ApprovalEvent)
	// The approver decides over HTTP; its handler gives the decision to the
	// store, whose watch in the agent passes it on.
	if err := store.Approve(within(t, 10*time.Second), session, "c2", nil); err != nil {
		t.Fatal(err)
	}
	if res := batch.Wait()[0]; res.IsError() || res.Text() != "noted: hi" {
		t.Fatalf("the approved call: %s %q %v", res.State, res.Text(), res.Err)
	}
	if err := bus.Publisher().Flush(within(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	live.waitFor(t, "the viewer, live", events.TypeResult)

	// The durable store recorded both calls.
	for _, id := range []string{"c1", "c2"} {
		rec, err := store.Get(within(t, 5*time.Second), session, id)
		if err != nil {
			t.Fatalf("the stored call %s: %v", id, err)
		}
		if rec.State != durable.Done {
			t.Errorf("the stored call %s: %+v", id, rec)
		}
	}

	// The bridge, a process of its own, serves the session over SSE from
	// the stream: the same events the viewer saw live.
	bridgeBus, bridgeConn := d.openBus(bridge, natsbus.WithDurable(natsbus.Durable{Bind: true}))
	sse := httptest.NewServer(bridgeBus.SSEHandler())
	t.Cleanup(sse.Close)
	replayed := readSSE(t, sse.URL+"?session="+session, len(live.all()))
	if got := eventKeys(replayed); got != eventKeys(live.all()) {
		t.Errorf("the bridge served:\n%s\nthe viewer saw live:\n%s", got, eventKeys(live.all()))
	}
	if !strings.Contains(eventKeys(live.all()), "c1 delta") || !strings.Contains(eventKeys(live.all()), "c1 progress") {
		t.Errorf("the viewer did not see the remote call's progress and deltas:\n%s", eventKeys(live.all()))
	}
	var approverSaw []string
	for _, ev := range asked.all() {
		approverSaw = append(approverSaw, ev.Call+" "+string(ev.Type))
	}
	slices.Sort(approverSaw) // two subscriptions: no order between them
	if got := strings.Join(approverSaw, ", "); got != "c2 approval, c2 approval, c2 suspend" {
		t.Errorf("the approver saw %s", got)
	}

	for _, c := range []*client{agentConn, workerConn, viewerConn, approverConn, bridgeConn} {
		c.clean(t)
	}
}

// eventKeys lists events as "call type seq" lines.
func eventKeys(evs []*events.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "%s %s %d\n", ev.Call, ev.Type, ev.Seq)
	}
	return b.String()
}

// readSSE reads n events from an SSE stream.
func readSSE(t *testing.T, url string, n int) []*events.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("SSE: %s", resp.Status)
	}
	var out []*events.Event
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for len(out) < n && sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		ev, err := events.Decode([]byte(data))
		if err != nil {
			t.Fatalf("SSE: %v: %s", err, data)
		}
		out = append(out, ev)
	}
	if len(out) < n {
		t.Fatalf("SSE: %d of %d events (%v)", len(out), n, sc.Err())
	}
	return out
}
