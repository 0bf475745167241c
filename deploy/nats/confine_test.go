package natsdeploy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/durable"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/groups/natskv"
	"github.com/toolstream/toolstream/internal/testutil"
)

// withState deploys toolstream.conf and has the agent make what the others
// must not touch: the events stream with an event of the session and one of
// another, a stored call, a session's group state.
func withState(t *testing.T) *deployment {
	t.Helper()
	d := deploy(t, "toolstream.conf")
	bus, _ := d.openBus(agent, natsbus.WithDurable(natsbus.Durable{}))
	js := bus.JetStream()
	ctx := within(t, 10*time.Second)
	store, err := durable.New(ctx, js, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Pending(ctx, session); err != nil {
		t.Fatal(err)
	}
	groupState, err := natskv.New(ctx, js, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := groupState.Update(ctx, session, func(map[string]bool) (map[string]bool, error) {
		return map[string]bool{"files": true}, nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{session, "other"} {
		ev := &events.Event{Version: events.Version, Type: events.TypeStart, Session: s, Call: "c1", Tool: "count_lines", Seq: 1, Time: time.Now(), Start: &events.Start{Args: []byte("{}")}}
		if _, err := js.Publish(ctx, bus.Subjects().Event(ev), events.AppendJSON(nil, ev)); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// What no party but the agent may publish: events (forged ones, of the
// session the viewer reads too), tool calls, control messages, discovery,
// the buckets, JetStream's API on the stream and the buckets.
var agentsOnly = []string{
	"toolstream.demo.c1.result",
	"toolstream.demo._.answer",
	"toolstream._tools.count_lines",
	"toolstream._tools._control.toolstream_tools",
	"$SRV.PING", "$SRV.INFO.toolstream_tools",
	"$KV.toolstream_calls.c.ZGVtbw.YzE",
	"$KV.toolstream_groups.s_ZGVtbw",
	"$JS.API.STREAM.DELETE.TOOLSTREAM",
	"$JS.API.STREAM.PURGE.TOOLSTREAM",
	"$JS.API.STREAM.INFO.TOOLSTREAM",
	"$JS.API.STREAM.MSG.GET.KV_toolstream_calls",
	"$JS.API.DIRECT.GET.KV_toolstream_calls.$KV.toolstream_calls.c.ZGVtbw.YzE",
	"$JS.API.DIRECT.GET.KV_toolstream_groups.$KV.toolstream_groups.s_ZGVtbw",
	"$JS.API.DIRECT.GET.TOOLSTREAM",
	"$JS.API.CONSUMER.CREATE.TOOLSTREAM.spy",
	"$JS.API.CONSUMER.CREATE.TOOLSTREAM.spy.toolstream.*.*.*",
	"$JS.API.CONSUMER.CREATE.TOOLSTREAM.spy.toolstream.other.>",
	"$JS.API.CONSUMER.DURABLE.CREATE.TOOLSTREAM.spy",
	"$JS.API.CONSUMER.CREATE.KV_toolstream_calls.spy.$KV.toolstream_calls.>",
	"$JS.API.CONSUMER.LIST.TOOLSTREAM",
}

// What only the agent may read: every event, other sessions', the calls'
// inboxes, the buckets' subjects.
var agentsToRead = []string{
	">", "toolstream.>", "toolstream.*.*.*", "toolstream.other.>", "toolstream.*.*.result",
	"_INBOX.>", "$KV.toolstream_calls.>", "$KV.toolstream_groups.>", "$JS.EVENT.>",
}

// TestWorkerConfined: a worker publishes to a caller's inbox only as an
// answer to a request it received (as many answers as it likes), never to
// another inbox of the same client; it cannot read events, the calls'
// inboxes or the buckets (through the public API either), nor take calls
// outside the queue group or of tools it does not serve; it can send no
// event, call, control message or JetStream request of its own.
func TestWorkerConfined(t *testing.T) {
	d := withState(t)
	a := d.connect(agent)
	w := d.connect(worker)

	calls, err := w.QueueSubscribeSync("toolstream._tools.count_lines", "toolstream")
	if err != nil {
		t.Fatal(err)
	}
	w.clean(t)
	inbox := a.NewInbox()
	frames, err := a.SubscribeSync(inbox + ".*")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := a.PublishRequest("toolstream._tools.count_lines", inbox+".1", []byte(`{"text":"x"}`)); err != nil {
		t.Fatal(err)
	}
	req, err := calls.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"accept", "hb", "delta"} {
		if err := w.Publish(req.Reply, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	// Another inbox of the same client, which no request gave the worker.
	if err := w.Publish(inbox+".2", []byte("forged")); err != nil {
		t.Fatal(err)
	}
	w.refused(t, "Publish", inbox+".2")
	if err := w.Publish(req.Reply, []byte("result")); err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 4 {
		m, err := frames.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("the agent's inbox after %v: %v", got, err)
		}
		got = append(got, strings.TrimPrefix(m.Subject, inbox)+" "+string(m.Data))
	}
	// The forged message, had it gone through, would have come before the
	// last answer, which the worker sent after it on the same connection.
	if want := ".1 accept,.1 hb,.1 delta,.1 result"; strings.Join(got, ",") != want {
		t.Errorf("the agent's inbox got %v, want %s", got, want)
	}

	w.cannotSubscribe(t, agentsToRead...)
	w.cannotSubscribe(t, "toolstream.demo.>", "toolstream._tools.>")
	// Its tools outside the queue group (every call, to read or to answer
	// first), or a tool it does not serve.
	for _, q := range []string{"spy", ""} {
		if _, err := w.QueueSubscribeSync("toolstream._tools.count_lines", q); err != nil {
			t.Fatal(err)
		}
		what := `Subscription to "toolstream._tools.count_lines"`
		if q != "" {
			what += ` using queue "` + q + `"`
		}
		waitRefusal(t, w, what)
	}
	if _, err := w.QueueSubscribeSync("toolstream._tools.write_note", "toolstream"); err != nil {
		t.Fatal(err)
	}
	waitRefusal(t, w, `Subscription to "toolstream._tools.write_note" using queue "toolstream"`)

	w.cannotPublish(t, agentsOnly...)
	w.cannotPublish(t, inbox+".1.x", "_INBOX_tools.x")

	// The public API says the same: the worker cannot open the calls'
	// bucket.
	js, err := jetstream.New(w.Conn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.KeyValue(within(t, 2*time.Second), durable.DefaultBucket); err == nil {
		t.Error("the worker opened the calls' bucket")
	}
	// It has no inbox to hear an answer on, nor the right to ask.
	waitRefusal(t, w, `Subscription to "_INBOX.`)
	w.refused(t, "Publish", "$JS.API.STREAM.INFO.KV_toolstream_calls")
}

// TestViewerConfined: the viewer of one session reads that session's
// events as they are published and nothing else (another session, every
// session, the calls, the inboxes, the buckets), and publishes nothing at
// all: no event, call, control message, and no JetStream request, not even
// one that would read its own session from the stream.
func TestViewerConfined(t *testing.T) {
	d := withState(t)
	bus, v := d.openBus(viewer, natsbus.WithDurable(natsbus.Durable{Bind: true}))

	v.cannotPublish(t, agentsOnly...)
	v.cannotPublish(t, "_INBOX.x", "_INBOX_tools.x", "toolstream.demo.c1.start",
		"$JS.API.CONSUMER.CREATE.TOOLSTREAM.mine.toolstream.demo.>", "$JS.API.CONSUMER.MSG.NEXT.TOOLSTREAM.mine")
	v.cannotSubscribe(t, agentsToRead...)
	v.cannotSubscribe(t, "toolstream._tools.>", "toolstream._tools.count_lines", "toolstream.*.*.approval")

	// Its session live: what the agent publishes there, and only that.
	got := make(chan *events.Event, 16)
	sub, err := bus.Subscribe(bus.Subjects().Session(session), func(ev *events.Event) { got <- ev })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	v.clean(t)
	a, _ := d.openBus(agent)
	for _, s := range []string{"other", session} {
		ev := &events.Event{Version: events.Version, Type: events.TypeProgress, Session: s, Call: "c1", Tool: "count_lines", Seq: 2, Time: time.Now(),
			Progress: &events.Progress{Message: s}}
		if err := a.Conn().Publish(a.Subjects().Event(ev), events.AppendJSON(nil, ev)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case ev := <-got:
		if ev.Session != session {
			t.Errorf("the viewer got an event of %q", ev.Session)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the viewer got nothing of its session within 10s")
	}

	// From the stream: refused.
	if _, err := bus.Replay(within(t, 2*time.Second), bus.Subjects().Session(session), 0, func(uint64, *events.Event) {}); err == nil {
		t.Error("the viewer replays from the stream")
	}
	// It has no inbox to hear an answer on, nor the right to ask.
	waitRefusal(t, v, `Subscription to "_INBOX.`)
	waitRefusal(t, v, `Publish to "$JS.API.CONSUMER.CREATE.TOOLSTREAM.`)
}

// TestApproverConfined: the approver reads requests for approval and
// suspensions of every session as they are published, nothing else, and
// publishes nothing (its decisions go over HTTP).
func TestApproverConfined(t *testing.T) {
	d := withState(t)
	a := d.connect(approver)
	a.cannotPublish(t, agentsOnly...)
	a.cannotPublish(t, "toolstream.demo.c2.approval", "_INBOX.x",
		"$JS.API.CONSUMER.CREATE.TOOLSTREAM.spy.toolstream.*.*.approval")
	a.cannotSubscribe(t, agentsToRead...)
	a.cannotSubscribe(t, "toolstream.demo.>", "toolstream.*.*.delta", "toolstream.*.*.progress", "toolstream.*._.*", "toolstream._tools.>")
	for _, typ := range []string{"approval", "suspend"} {
		if _, err := a.SubscribeSync("toolstream.*.*." + typ); err != nil {
			t.Fatal(err)
		}
	}
	a.clean(t)
}

// TestBridgeIsTrustedWithTheBuckets holds docs/security.md's reason for
// giving viewers and approvers no JetStream request at all: the server sends
// the answer to a request to the request's reply subject, whatever the
// requester may publish to, so the bridge, whose user may only create
// consumers and read the stream, can have an answer written over a call's
// record in the calls' bucket. (Should a NATS release stop this,
// the test fails and the documentation is to be revised.)
func TestBridgeIsTrustedWithTheBuckets(t *testing.T) {
	d := withState(t)
	bus, _ := d.openBus(agent, natsbus.WithDurable(natsbus.Durable{}))
	kv, err := bus.JetStream().KeyValue(within(t, 5*time.Second), durable.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	const record = "c.ZGVtbw.YzE" // call c1 of session demo
	b := d.connect(bridge)
	b.cannotPublish(t, "$KV.toolstream_calls."+record)
	w, err := kv.Watch(within(t, 10*time.Second), record, jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	req := `{"stream_name":"TOOLSTREAM","config":{"name":"x","filter_subject":"toolstream.demo.>","ack_policy":"none"}}`
	if err := b.PublishRequest("$JS.API.CONSUMER.CREATE.TOOLSTREAM.x.toolstream.demo.>", "$KV.toolstream_calls."+record, []byte(req)); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-w.Updates():
		if e == nil || !strings.Contains(string(e.Value()), "consumer_create_response") {
			t.Fatalf("the call's record became %v", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the answer was not written into the bucket: NATS may have closed the hole docs/security.md describes")
	}
	b.clean(t)
}

// TestRefusalsSaySo: a party that opens the bus in a way its user may not
// (creating the stream, replaying a session it may not read) gets an error
// that says the server refused it and what to do, not a bare timeout.
func TestRefusalsSaySo(t *testing.T) {
	testutil.Long(t)
	d := withState(t)
	c := &client{who: bridge, errs: make(chan error, 256)}
	_, err := natsbus.Open(within(t, 3*time.Second), natsbus.WithURL(d.url()),
		natsbus.WithNATSOptions(append(d.options(bridge), c.errorHandler())...), natsbus.WithDurable(natsbus.Durable{}))
	if err == nil || !strings.Contains(err.Error(), "Permissions Violation") || !strings.Contains(err.Error(), "Durable{Bind: true}") {
		t.Errorf("the bridge creating the stream: %v", err)
	}
	bus, _ := d.openBus(viewer, natsbus.WithDurable(natsbus.Durable{Bind: true}))
	_, err = bus.Replay(within(t, 3*time.Second), bus.Subjects().Session(session), 0, func(uint64, *events.Event) {})
	if err == nil || !strings.Contains(err.Error(), "Permissions Violation") {
		t.Errorf("the viewer replaying: %v", err)
	}
}
