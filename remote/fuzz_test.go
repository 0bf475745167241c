package remote_test

import (
	"context"
	"encoding/json"
	"strconv"
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

// FuzzFrames: whatever frames a worker sends (any kinds, numbers, bodies,
// resets, garbage, nothing at all), the call ends within the heartbeat bound
// with exactly one final result whose content is what its deltas add up to.
// A script is lines "kind|seq|reset|data", where reset is "1" for a reset
// delta and may end with "c<index>/<count>" for a chunk, and kind may end
// with "@<worker>" for a frame of another worker than W. After its lines the scripted
// worker refuses the call (the error headers of micro), which ends a call
// that the script left open at once, whatever the frames before; a script
// whose last line is "silent" leaves the worker silent instead, and the call
// ends when the client gives the worker up (two heartbeats of 10 ms).
func FuzzFrames(f *testing.F) {
	for _, s := range []string{
		"accept|1|0|\ndelta|2|0|" + part("a") + "\nresult|3|0|{\"state\":\"success\",\"content\":[{\"type\":\"text\",\"text\":\"a\"}]}",
		"accept|1|0|\ndelta|3|0|" + part("b") + "\nresult|4|0|{\"state\":\"success\",\"content\":[{\"type\":\"text\",\"text\":\"ab\"}]}",
		"accept|1|0|\ndelta|2|1|" + part("x") + "\nprogress|3|0|{\"message\":\"m\",\"fraction\":2}\nresult|4|0|{\"state\":\"error\",\"content\":[],\"error\":\"e\"}",
		"accept|1|0|\nresult|2|0|{\"state\":\"success\",\"content_omitted\":true}",
		"delta|1|0|{\"type\":\"json\",\"json\":{\"a\":1}}\nresult|2|0|{\"state\":\"success\",\"content\":[{\"type\":\"json\",\"json\":{\"a\":1}}]}",
		"delta|1|0|not json\nresult|2|0|{\"state\":\"bogus\",\"content\":[{\"type\":\"binary\",\"data\":\"AA==\"}]}",
		"hb|1|0|\nhb|2|0|",
		"",
		"result|x|0|null",
		"accept|1|0|\ndelta|2|0|" + part("a") + "\nsilent",
		"hb|1|0|\nsilent",
		"accept|1|0|\ncancel|0|0|\ndelta|2|0|" + part("a") + "\nresult|3|0|{\"state\":\"success\",\"content\":[{\"type\":\"text\",\"text\":\"a\"}]}",
		// A second worker that takes the call: its frames mix in, its
		// result is not the call's.
		"accept|1|0|\naccept@V|1|0|\ndelta@V|2|0|" + part("v") + "\ndelta|2|0|" + part("a") + "\nresult@V|3|0|{\"state\":\"success\",\"content\":[{\"type\":\"text\",\"text\":\"v\"}]}\nresult|3|0|{\"state\":\"success\",\"content\":[{\"type\":\"text\",\"text\":\"a\"}]}",
		"accept@V|1|0|\naccept|1|0|\nresult|2|0|{\"state\":\"success\",\"content_omitted\":true}",
		// A part in chunks, whole and broken.
		"accept|1|0|\ndelta|2|c0/2|{\"type\":\"json\",\ndelta|3|c1/2|\"json\":[1]}\nresult|4|0|{\"state\":\"success\",\"content_omitted\":true}",
		"accept|1|0|\ndelta|2|0|" + part("a") + "\ndelta|3|1c0/2|{\"type\":\"json\",\ndelta|4|c1/2|\"json\":[1]}\nresult|5|0|{\"state\":\"success\",\"content\":[{\"type\":\"json\",\"json\":[1]}]}",
		"accept|1|0|\ndelta|2|c0/3|{\"type\":\"json\",\ndelta|3|c1/3|\"json\":[1]}\nresult|4|0|{\"state\":\"success\",\"content_omitted\":true}",
		"accept|1|0|\ndelta|2|c1/2|{\"type\":\"json\",\ndelta|3|c0/2|\"json\":[1]}\nresult|4|0|{\"state\":\"success\",\"content\":[]}",
		"accept|1|0|\ndelta|2|c0/2|{\"type\":\"json\",\ndelta|3|0|" + part("a") + "\nresult|4|0|{\"state\":\"success\",\"content_omitted\":true}",
		"accept|1|0|\ndelta|2|c0/1|{\"type\":\"text\",\"text\":\"a\"}\nresult|3|0|{\"state\":\"success\",\"content_omitted\":true,\"meta_omitted\":true}",
	} {
		f.Add(s)
	}
	bus := natstest.Bus(f)
	nc, err := nats.Connect("", nats.InProcessServer(bus.Server()))
	if err != nil {
		f.Fatal(err)
	}
	defer nc.Close()
	var mu sync.Mutex
	var script string
	sub, err := nc.Subscribe(wire.DefaultPrefix+".x", func(m *nats.Msg) {
		mu.Lock()
		s := script
		mu.Unlock()
		lines := strings.Split(s, "\n")
		silent := lines[len(lines)-1] == "silent"
		if silent {
			lines = lines[:len(lines)-1]
		}
		for _, line := range lines {
			kind, rest, _ := strings.Cut(line, "|")
			seq, rest, _ := strings.Cut(rest, "|")
			reset, data, _ := strings.Cut(rest, "|")
			kind, worker, _ := strings.Cut(kind, "@")
			if worker == "" {
				worker = "W"
			}
			h := nats.Header{wire.HeaderFrame: {kind}, wire.HeaderSeq: {seq}, wire.HeaderWorker: {worker}}
			if r, chunk, ok := strings.Cut(reset, "c"); ok {
				h.Set(wire.HeaderChunk, chunk)
				reset = r
			}
			if reset == "1" {
				h.Set(wire.HeaderReset, "1")
			}
			_ = nc.PublishMsg(&nats.Msg{Subject: m.Reply, Header: h, Data: []byte(data)})
		}
		if !silent {
			_ = nc.PublishMsg(&nats.Msg{Subject: m.Reply, Header: nats.Header{
				micro.ErrorCodeHeader: {"500"}, micro.ErrorHeader: {"the script ended"}, wire.HeaderWorker: {"W"}}})
		}
	})
	if err != nil {
		f.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.Flush(); err != nil {
		f.Fatal(err)
	}
	cnc, err := nats.Connect("", nats.InProcessServer(bus.Server()))
	if err != nil {
		f.Fatal(err)
	}
	defer cnc.Close()
	c := remote.NewClient(cnc, remote.WithHeartbeat(10*time.Millisecond, 2))
	tl, err := c.NewTool(toolkit.Spec{Name: "x"}, json.RawMessage(`{"type":"object"}`))
	if err != nil {
		f.Fatal(err)
	}
	// One toolkit for all inputs, a session of its own for each: an input
	// costs a round trip through the server, not a toolkit's start and
	// close, and the minimizer runs thousands of them.
	rec := &testutil.Recorder{}
	tk := toolkit.New(toolkit.WithInlineObserver(rec))
	defer func() { _ = tk.Close(context.Background()) }()
	if err := tk.Add(tl); err != nil {
		f.Fatal(err)
	}
	var n atomic.Uint64
	f.Fuzz(func(t *testing.T, s string) {
		mu.Lock()
		script = s
		mu.Unlock()
		rec.Reset()
		sess, err := tk.Session("s" + strconv.FormatUint(n.Add(1), 10))
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		start := time.Now()
		r := sess.Run(context.Background(), []toolkit.Call{{ID: "c", Name: "x", Args: json.RawMessage(`{}`)}})[0]
		if !r.Final() {
			t.Fatalf("not final: %s", r.State)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("took %v", took)
		}
		evs := rec.Of("c")
		results := 0
		for _, ev := range evs {
			if ev.Type == events.TypeResult {
				results++
			}
		}
		if results != 1 {
			t.Fatalf("%d result events", results)
		}
		if d := testutil.Deltas(evs); !events.EqualContent(d, r.Content) {
			t.Fatalf("deltas %+v != result %+v", d, r.Content)
		}
	})
}

// FuzzWorkerRequest: whatever headers and body a request carries (session,
// call, timeout, heartbeat, arguments), a worker answers it, at once and
// precisely: a refusal with micro's error headers (400 for a malformed
// call), or frames numbered from 1 without a gap, each naming the worker,
// ending with a result frame that decodes; a control message whatever its
// body names no call and changes nothing. It never panics, never stays
// silent, and keeps no call in flight after.
func FuzzWorkerRequest(f *testing.F) {
	for _, s := range [][5]string{
		{"s", "c", "", "", `{"a":1}`},
		{"s", "c", "1", "10", `not json`},
		{"", "c", "", "", `{}`},
		{"s", "", "5000", "", `{}`},
		{"s", "c", "-1", "", `{}`},
		{"s", "c", "", "99999999999999999999", `{}`},
		{" s ", "c\r\nToolstream-Session: t", "0x10", "1e3", `{"a":` + strings.Repeat("[", 10000)},
		{strings.Repeat("é", 300), "c", "1", "1", `null`},
		{"s", "c", "2592000000", "30000", ``},
		{`" s "`, `" "`, "", "", `{}`},
		{`"s`, `""`, "", "", `{}`},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4])
	}
	bus := natstest.Bus(f)
	wnc, err := nats.Connect("", nats.InProcessServer(bus.Server()))
	if err != nil {
		f.Fatal(err)
	}
	defer wnc.Close()
	wk := toolkit.New()
	defer func() { _ = wk.Close(context.Background()) }()
	echo, err := toolkit.NewRawTool(toolkit.Spec{Name: "echo", ConcurrencySafe: true}, json.RawMessage(`{"type":"object"}`),
		func(_ context.Context, args json.RawMessage) ([]events.Part, error) {
			return []events.Part{events.Text(string(args))}, nil
		})
	if err != nil {
		f.Fatal(err)
	}
	if err := wk.Add(echo); err != nil {
		f.Fatal(err)
	}
	w, err := remote.Serve(wnc, wk)
	if err != nil {
		f.Fatal(err)
	}
	defer func() { _ = w.Stop(context.Background()) }()
	nc, err := nats.Connect("", nats.InProcessServer(bus.Server()))
	if err != nil {
		f.Fatal(err)
	}
	defer nc.Close()
	f.Fuzz(func(t *testing.T, session, call, timeout, beat, body string) {
		inbox := nats.NewInbox()
		ch := make(chan *nats.Msg, 64)
		sub, err := nc.ChanSubscribe(inbox, ch)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = sub.Unsubscribe() }()
		next := func(what string) *nats.Msg {
			select {
			case m := <-ch:
				return m
			case <-time.After(3 * time.Second):
				t.Fatalf("no answer (%s)", what)
				return nil
			}
		}
		// A control message whose body is whatever the input says: it
		// names no call of the worker, which goes on serving (the call
		// below is answered).
		for _, kind := range []string{wire.ControlCancel, wire.ControlResync, "other"} {
			if err := nc.PublishMsg(&nats.Msg{Subject: control(kind), Reply: inbox, Data: []byte(body)}); err != nil {
				t.Fatal(err)
			}
		}
		h := nats.Header{}
		for k, v := range map[string]string{wire.HeaderSession: session, wire.HeaderCall: call, wire.HeaderTimeout: timeout, wire.HeaderHeartbeat: beat} {
			if v != "" {
				h.Set(k, v)
			}
		}
		// An id that starts with a quote goes (also) as a quoted id.
		if strings.HasPrefix(session, `"`) {
			h.Set(wire.HeaderSessionQuoted, session)
		}
		if strings.HasPrefix(call, `"`) {
			h.Set(wire.HeaderCallQuoted, call)
		}
		if err := nc.PublishMsg(&nats.Msg{Subject: wire.DefaultPrefix + ".echo", Reply: inbox, Header: h, Data: []byte(body)}); err != nil {
			return // a request the client refuses to send (too large)
		}
		for seq := uint64(1); ; seq++ {
			m := next("the call")
			if code := m.Header.Get(micro.ErrorCodeHeader); code != "" {
				if seq != 1 || code != "400" && code != "409" || m.Header.Get(micro.ErrorHeader) == "" {
					t.Fatalf("refusal %s after %d frames: %v", code, seq-1, m.Header)
				}
				break
			}
			if m.Header.Get(wire.HeaderWorker) != w.ID() {
				t.Fatalf("frame %q names worker %q, not %q", m.Header.Get(wire.HeaderFrame), m.Header.Get(wire.HeaderWorker), w.ID())
			}
			if got, _ := strconv.ParseUint(m.Header.Get(wire.HeaderSeq), 10, 64); got != seq {
				t.Fatalf("frame %q numbered %d, want %d", m.Header.Get(wire.HeaderFrame), got, seq)
			}
			if m.Header.Get(wire.HeaderFrame) == "result" {
				var r struct {
					State events.State `json:"state"`
				}
				if err := json.Unmarshal(m.Data, &r); err != nil || r.State == "" {
					t.Fatalf("result frame %q: %v", m.Data, err)
				}
				break
			}
		}
		for start := time.Now(); w.Stats().InFlight != 0; time.Sleep(time.Millisecond) {
			if time.Since(start) > 2*time.Second {
				t.Fatalf("%d calls in flight after the result", w.Stats().InFlight)
			}
		}
	})
}

// FuzzDiscover: whatever a service answering $SRV.INFO under the workers'
// name says, Discover returns within its wait, without a panic, and only
// tools that the answer describes, on the client's prefix, from a service
// that speaks the client's protocol.
func FuzzDiscover(f *testing.F) {
	for _, s := range []string{
		`{"name":"toolstream_tools","id":"A","version":"1.0.0","metadata":{"toolstream.protocol":"2"},"endpoints":[{"name":"x","subject":"toolstream._tools.x","metadata":{"toolstream.spec":"{\"name\":\"x\"}","toolstream.schema":"{\"type\":\"object\"}"}}]}`,
		`{"metadata":{"toolstream.protocol":"1"},"endpoints":[{"name":"x","subject":"toolstream._tools.x","metadata":{"toolstream.spec":"{\"name\":\"x\"}","toolstream.schema":"{}"}}]}`,
		`{"metadata":{"toolstream.protocol":"2"},"endpoints":[{"name":"x","subject":"elsewhere","metadata":{"toolstream.spec":"{\"name\":\"x\"}","toolstream.schema":"{}"}}]}`,
		`{"endpoints":[{"name":"x.*","subject":"toolstream._tools.x.*","metadata":{"toolstream.spec":"{\"name\":\"x.*\"}","toolstream.schema":"{}"}}]}`,
		`{"endpoints":[{"name":"x","subject":"toolstream._tools.x","metadata":{"toolstream.spec":"{\"name\":\"x\",\"timeout_ms\":-5}","toolstream.schema":"{\"type\":7}","toolstream.output_schema":"[]"}}]}`,
		`{"endpoints":null}`,
		`[]`,
		``,
		`{"endpoints":[{"name":"","subject":"toolstream._tools.","metadata":null}]}`,
	} {
		f.Add(s)
	}
	bus := natstest.Bus(f)
	nc, err := nats.Connect("", nats.InProcessServer(bus.Server()))
	if err != nil {
		f.Fatal(err)
	}
	defer nc.Close()
	var mu sync.Mutex
	var answer string
	subj, err := micro.ControlSubject(micro.InfoVerb, wire.DefaultService, "")
	if err != nil {
		f.Fatal(err)
	}
	sub, err := nc.Subscribe(subj, func(m *nats.Msg) {
		mu.Lock()
		a := answer
		mu.Unlock()
		_ = m.Respond([]byte(a))
	})
	if err != nil {
		f.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.Flush(); err != nil {
		f.Fatal(err)
	}
	c := remote.NewClient(nc, remote.WithDiscoverWait(200*time.Millisecond))
	f.Fuzz(func(t *testing.T, s string) {
		mu.Lock()
		answer = s
		mu.Unlock()
		start := time.Now()
		tools, _ := c.Discover(context.Background())
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("took %v", took)
		}
		var info micro.Info
		_ = json.Unmarshal([]byte(s), &info)
		if len(tools) > 0 && info.Metadata[wire.MetaProtocol] != "2" {
			t.Fatalf("%d tools of a service of protocol %q", len(tools), info.Metadata[wire.MetaProtocol])
		}
		for _, tl := range tools {
			ok := false
			for _, ep := range info.Endpoints {
				ok = ok || ep.Name == tl.Name() && ep.Subject == wire.DefaultPrefix+"."+tl.Name()
			}
			if !ok {
				t.Fatalf("tool %q is no endpoint of the answer on the client's prefix", tl.Name())
			}
		}
	})
}
