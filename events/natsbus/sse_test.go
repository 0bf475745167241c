package natsbus_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	wirenames "github.com/toolstream/toolstream/internal/wire"
)

type sseEvent struct {
	id    uint64
	event string
	data  string
}

// readSSE reads frames from an SSE response until n frames arrived or the
// body ends.
func readSSE(t testing.TB, resp *http.Response, n int) []sseEvent {
	t.Helper()
	// A stream that stalls ends the read: the test fails instead of hanging.
	stall := time.AfterFunc(20*time.Second, func() { resp.Body.Close() })
	defer stall.Stop()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != "" {
				out = append(out, cur)
				if len(out) == n {
					return out
				}
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			id, err := strconv.ParseUint(strings.TrimPrefix(line, "id: "), 10, 64)
			if err != nil {
				t.Fatalf("bad id line %q", line)
			}
			cur.id = id
		case strings.HasPrefix(line, "event: "):
			cur.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		}
	}
	return out
}

func sseGet(t testing.TB, base, session, lastID string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"?session="+url.QueryEscape(session), nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestSSEResume: a real HTTP client reads a session's events, drops the
// connection mid-run and reconnects with Last-Event-ID: it ends with every
// event exactly once and none of another session's.
func TestSSEResume(t *testing.T) {
	bus := natstest.Bus(t, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	tk := kit(t, bus)
	srv := httptest.NewServer(bus.SSEHandler())
	defer srv.Close()

	mine, _ := tk.Session("sse a.>")
	other, _ := tk.Session("sse")
	run := mine.Start(context.Background(), callsFor(3, 30))
	otherRun := other.Start(context.Background(), callsFor(2, 5))

	resp := sseGet(t, srv.URL, "sse a.>", "")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	first := readSSE(t, resp, 25)
	resp.Body.Close() // the browser goes away mid-run
	if len(first) != 25 {
		t.Fatalf("%d frames before the disconnect", len(first))
	}
	run.Wait()
	otherRun.Wait()

	total := 3 * (1 + 30 + 31 + 1)
	resp = sseGet(t, srv.URL, "sse a.>", strconv.FormatUint(first[len(first)-1].id, 10))
	defer resp.Body.Close()
	rest := readSSE(t, resp, total-len(first))

	all := append(first, rest...)
	if len(all) != total {
		t.Fatalf("%d frames in all, want %d", len(all), total)
	}
	var evs []*events.Event
	for i, f := range all {
		if i > 0 && f.id != all[i-1].id+1 && f.id <= all[i-1].id {
			t.Fatalf("frame ids go %d then %d", all[i-1].id, f.id)
		}
		ev, err := events.Decode([]byte(f.data))
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if ev.Session != "sse a.>" {
			t.Fatalf("frame of session %q in another session's stream", ev.Session)
		}
		if string(ev.Type) != f.event {
			t.Fatalf("frame event %q carries a %s", f.event, ev.Type)
		}
		evs = append(evs, ev)
	}
	checkCalls(t, evs)
}

func TestSSEErrors(t *testing.T) {
	durable := natstest.Bus(t, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	plain := natstest.Bus(t)
	d := httptest.NewServer(durable.SSEHandler())
	defer d.Close()
	p := httptest.NewServer(plain.SSEHandler())
	defer p.Close()

	for _, tc := range []struct {
		base, session, last string
		status              int
		body                string
	}{
		{d.URL, "", "", http.StatusBadRequest, "bad session id: empty"},
		{d.URL, "a\x01b", "", http.StatusBadRequest, "control character"},
		{d.URL, "ok", "seven", http.StatusBadRequest, "bad Last-Event-ID"},
		{p.URL, "ok", "", http.StatusServiceUnavailable, "not durable"},
	} {
		resp := sseGet(t, tc.base, tc.session, tc.last)
		body := make([]byte, 512)
		n, _ := resp.Body.Read(body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(body[:n]), tc.body) {
			t.Errorf("%q %q: %d %q", tc.session, tc.last, resp.StatusCode, body[:n])
		}
	}
	// EventSource polyfills send the last id in the query.
	resp, err := http.Get(d.URL + "?session=ok&lastEventId=seven")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("lastEventId=seven: %d", resp.StatusCode)
	}
	resp, err = http.Post(d.URL+"?session=x", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", resp.StatusCode)
	}
}

// TestSSEKeepAlive: an idle stream gets comment lines, which EventSource
// ignores.
func TestSSEKeepAlive(t *testing.T) {
	bus := natstest.Bus(t, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	srv := httptest.NewServer(bus.SSEHandler(natsbus.WithKeepAlive(20*time.Millisecond, 0)))
	defer srv.Close()
	resp := sseGet(t, srv.URL, "idle", "")
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, ": keep-alive") {
			return
		}
	}
	t.Fatal("no keep-alive comment")
}

// TestSSESkipsBadTypes: a message on a session's subject whose type token
// does not decode to a valid type name (here one with a newline, which
// would split the SSE frame) is not streamed; the events around it are.
func TestSSESkipsBadTypes(t *testing.T) {
	bus := natstest.Bus(t, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	srv := httptest.NewServer(bus.SSEHandler())
	defer srv.Close()
	js := bus.JetStream()
	ctx := context.Background()
	for _, typ := range []string{"before", "evil\ndata: injected", "after"} {
		subj := bus.Subjects().Call("s", "", typ)
		body := `{"v":1,"type":` + strconv.Quote(typ) + `,"session":"s","seq":1,"time":"2026-11-29T12:00:00Z","data":{}}`
		if _, err := js.Publish(ctx, subj, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	resp := sseGet(t, srv.URL, "s", "")
	defer resp.Body.Close()
	got := readSSE(t, resp, 2)
	if len(got) != 2 || got[0].event != "before" || got[1].event != "after" {
		t.Fatalf("streamed %+v", got)
	}
}

func TestCheckType(t *testing.T) {
	for typ, ok := range map[string]bool{"approval": true, "turn_2": true, "a-b": true, strings.Repeat("x", 64): true,
		"": false, strings.Repeat("x", 65): false, "a.b": false, "a b": false, "a\nb": false, "é": false, ">": false} {
		if err := events.CheckType(events.Type(typ)); (err == nil) != ok {
			t.Errorf("CheckType(%q) = %v", typ, err)
		}
	}
}

// TestSSEResumeAtEveryPosition: a session whose events include a delta too
// large for one message (sent as several): a client that reconnects with
// the id of any frame it read gets exactly the frames after it, in order,
// and the pieces add up to the text.
func TestSSEResumeAtEveryPosition(t *testing.T) {
	bus := natstest.Bus(t, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	srv := httptest.NewServer(bus.SSEHandler())
	defer srv.Close()
	p := bus.Publisher()
	text := strings.Repeat("日本語 \"x\" 😀\n", int(2.5*float64(bus.Conn().MaxPayload()))/20)
	now := time.Now()
	for i, ev := range []*events.Event{
		{Type: events.TypeStart, Start: &events.Start{}},
		{Type: events.TypeDelta, Delta: &events.Part{Type: events.PartText, Text: text}},
		{Type: events.TypeResult, Result: &events.Result{State: events.StateSuccess, Content: []events.Part{events.Text(text)}}},
	} {
		ev.Version, ev.Session, ev.Call, ev.Tool, ev.Seq, ev.Time = events.Version, "every", "c", "t", uint64(i+1), now
		p.Observe(ev)
		other := &events.Event{Version: events.Version, Type: events.TypeStart, Session: "another", Call: "c", Tool: "t", Seq: uint64(i + 1), Time: now, Start: &events.Start{}}
		p.Observe(other)
	}
	ctx := context.Background()
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	<-bus.JetStream().PublishAsyncComplete()

	resp := sseGet(t, srv.URL, "every", "")
	all := readSSE(t, resp, 5) // start, three pieces, result
	resp.Body.Close()
	if len(all) != 5 {
		t.Fatalf("%d frames", len(all))
	}
	var r events.Reassembler
	for i, f := range all {
		ev, err := events.Decode([]byte(f.data))
		if err != nil {
			t.Fatal(err)
		}
		if ev.Seq != uint64(i+1) || ev.Session != "every" || (i > 0 && f.id <= all[i-1].id) {
			t.Fatalf("frame %d: id %d, %s seq %d", i, f.id, ev.Session, ev.Seq)
		}
		if err := r.Add(ev); err != nil {
			t.Fatal(err)
		}
	}
	if c := r.Content(); len(c) != 1 || c[0].Text != text {
		t.Fatal("the pieces do not add up to the text")
	}
	for i := range len(all) - 1 {
		resp := sseGet(t, srv.URL, "every", strconv.FormatUint(all[i].id, 10))
		got := readSSE(t, resp, len(all)-i-1)
		resp.Body.Close()
		if len(got) != len(all)-i-1 {
			t.Fatalf("after frame %d: %d frames, want %d", i, len(got), len(all)-i-1)
		}
		for j, f := range got {
			if f.id != all[i+1+j].id || f.data != all[i+1+j].data {
				t.Fatalf("after frame %d: frame %d is id %d, want %d", i, j, f.id, all[i+1+j].id)
			}
		}
	}
}

// TestSSESkipsBadData: a message on an event subject whose data would break
// the stream's framing (a line break: it could make up frames, ids and
// types of its own) is not streamed; nor is a trace context spliced into
// data that does not start with a field.
func TestSSESkipsBadData(t *testing.T) {
	bus := natstest.Bus(t, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	srv := httptest.NewServer(bus.SSEHandler())
	defer srv.Close()
	js := bus.JetStream()
	ctx := context.Background()
	body := func(typ string) string {
		return `{"v":1,"type":"` + typ + `","session":"s","seq":1,"time":"2026-11-29T12:00:00Z","data":{}}`
	}
	injected := "\n\nid: 999999\nevent: result\ndata: {\"forged\":true}"
	msgs := []*nats.Msg{
		{Subject: bus.Subjects().Call("s", "", "before"), Data: []byte(body("before"))},
		{Subject: bus.Subjects().Call("s", "", "lf"), Data: []byte(body("lf") + injected)},
		{Subject: bus.Subjects().Call("s", "", "cr"), Data: []byte(body("cr") + strings.ReplaceAll(injected, "\n", "\r"))},
		{Subject: bus.Subjects().Call("s", "", "empty"), Data: []byte("{}"),
			Header: nats.Header{wirenames.HeaderTraceParent: []string{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}},
		{Subject: bus.Subjects().Call("s", "", "after"), Data: []byte(body("after"))},
	}
	for _, m := range msgs {
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	resp := sseGet(t, srv.URL, "s", "")
	defer resp.Body.Close()
	got := readSSE(t, resp, 3)
	var kinds []string
	for _, f := range got {
		kinds = append(kinds, f.event)
		if f.id == 999999 || strings.Contains(f.data, "forged") || (f.data != "{}" && !json.Valid([]byte(f.data))) {
			t.Fatalf("streamed %+v", got)
		}
	}
	if strings.Join(kinds, " ") != "before empty after" {
		t.Fatalf("streamed %+v", got)
	}
}
