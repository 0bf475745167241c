package natsbus_test

import (
	"context"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	wirenames "github.com/toolstream/toolstream/internal/wire"
)

// TestSSECarriesTraceContext: SSE has no headers, so the bridge puts a
// message's traceparent and tracestate headers into the event's JSON, and
// events.Decode reads them back; a stored event (caught up) and a live one
// alike. A message without them streams unchanged; header values that are
// not plain printable text (another publisher's) are left out rather than
// breaking the JSON.
func TestSSECarriesTraceContext(t *testing.T) {
	bus := natstest.Bus(t, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	srv := httptest.NewServer(bus.SSEHandler())
	defer srv.Close()
	js := bus.JetStream()
	ctx := context.Background()
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	publish := func(typ string, header nats.Header) string {
		t.Helper()
		body := `{"v":1,"type":` + strconv.Quote(typ) + `,"session":"s","seq":1,"time":"2026-11-29T12:00:00Z","data":{"traceparent":"nested, not the event's"}}`
		m := &nats.Msg{Subject: bus.Subjects().Call("s", "", typ), Data: []byte(body), Header: header}
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
		return body
	}
	traced := nats.Header{wirenames.HeaderTraceParent: {parent}, wirenames.HeaderTraceState: {"congo=t61rcWkgMzE"}}
	publish("stored_traced", traced)
	plain := publish("stored_plain", nil)
	publish("stored_foreign", nats.Header{wirenames.HeaderTraceParent: {parent}, wirenames.HeaderTraceState: {`a"b\`}})

	resp := sseGet(t, srv.URL, "s", "")
	defer resp.Body.Close()
	got := readSSE(t, resp, 3)
	publish("live_traced", nats.Header{wirenames.HeaderTraceParent: {parent}})
	got = append(got, readSSE(t, resp, 1)...)
	if len(got) != 4 {
		t.Fatalf("streamed %d frames: %+v", len(got), got)
	}
	want := []struct {
		parent, state string
	}{{parent, "congo=t61rcWkgMzE"}, {"", ""}, {parent, ""}, {parent, ""}}
	for i, f := range got {
		ev, err := events.Decode([]byte(f.data))
		if err != nil {
			t.Fatalf("frame %s: %v\n%s", f.event, err, f.data)
		}
		var p, s string
		if ev.Trace != nil {
			p, s = ev.Trace.TraceParent(), ev.Trace.TraceState()
		}
		if p != want[i].parent || s != want[i].state {
			t.Errorf("frame %s: trace %q %q, want %q %q\n%s", f.event, p, s, want[i].parent, want[i].state, f.data)
		}
		if p != "" && !strings.HasPrefix(f.data, `{"traceparent":"`+parent+`"`) {
			t.Errorf("frame %s does not open with its trace: %s", f.event, f.data)
		}
	}
	if got[1].data != plain {
		t.Errorf("an event without trace headers changed on the way:\n%s\nwant\n%s", got[1].data, plain)
	}
}
