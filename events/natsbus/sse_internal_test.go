package natsbus

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/toolstream/toolstream/events"
	wirenames "github.com/toolstream/toolstream/internal/wire"
)

// SetViewerQueue sets how many live frames may wait for one SSE viewer, for
// the length of the test.
func SetViewerQueue(t testing.TB, n int) {
	old := viewerQueue
	viewerQueue = n
	t.Cleanup(func() { viewerQueue = old })
}

// SetHubLinger sets how long the SSE bridge's shared consumer outlives its
// last viewer, for the length of the test.
func SetHubLinger(t testing.TB, d time.Duration) {
	old := hubLinger
	hubLinger = d
	t.Cleanup(func() { hubLinger = old })
}

// CatchUps counts the times an SSE viewer fell behind the live events and
// read them back from the stream.
func (b *Bus) CatchUps() int64 { return b.hub.catchUps.Load() }

// FuzzLastEventID: the Last-Event-ID parser takes a decimal stream sequence
// (spaces around it allowed) and refuses anything else with a message that
// quotes it; it never panics.
func FuzzLastEventID(f *testing.F) {
	for _, s := range []string{"0", "1", "42", " 7 ", "18446744073709551615", "18446744073709551616", "-1", "+1",
		"0x10", "1e3", "1_000", "", " ", "seven", "12\n", "١٢", "00012", "9999999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseLastEventID(s)
		trimmed := strings.TrimSpace(s)
		digits := trimmed != ""
		for _, c := range []byte(trimmed) {
			if c < '0' || c > '9' {
				digits = false
			}
		}
		if err != nil {
			if digits && len(strings.TrimLeft(trimmed, "0")) < 20 {
				t.Fatalf("%q refused: %v", s, err)
			}
			if !strings.HasPrefix(err.Error(), "bad Last-Event-ID "+strconv.Quote(s)) {
				t.Fatalf("%q: error %q", s, err)
			}
			return
		}
		if !digits {
			t.Fatalf("%q accepted as %d", s, n)
		}
		if got := strings.TrimLeft(trimmed, "0"); got != strconv.FormatUint(n, 10) && !(got == "" && n == 0) {
			t.Fatalf("%q read as %d", s, n)
		}
	})
}

// FuzzSSEFrame: whatever another publisher puts on an event subject (its
// subject's type, data and trace headers), a message the bridge streams is
// one frame of three lines, id, event and data, ended by one empty line.
func FuzzSSEFrame(f *testing.F) {
	f.Add("toolstream.s.c.delta", []byte(`{"v":1}`), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "k=v")
	f.Add("toolstream.s.c.delta", []byte("{}"), "x", "")
	f.Add("toolstream.s.c.x\nid: 1", []byte("{\"a\":1}\n\nid: 9"), "", "")
	f.Add("toolstream.s.note", []byte("{\"a\":\"\r\"}"), "\"", "\n")
	bus := &Bus{}
	bus.subjects, _ = events.NewSubjects("")
	bus.log = zerolog.Nop()
	f.Fuzz(func(t *testing.T, subject string, data []byte, parent, state string) {
		h := nats.Header{}
		if parent != "" {
			h.Set(wirenames.HeaderTraceParent, parent)
		}
		if state != "" {
			h.Set(wirenames.HeaderTraceState, state)
		}
		out, ok := bus.frame(nil, 42, subject, data, h)
		if !ok {
			if len(out) != 0 {
				t.Fatalf("refused, yet wrote %q", out)
			}
			return
		}
		s := string(out)
		if !strings.HasSuffix(s, "\n\n") {
			t.Fatalf("frame %q does not end with an empty line", s)
		}
		lines := strings.Split(strings.TrimSuffix(s, "\n\n"), "\n")
		if len(lines) != 3 || lines[0] != "id: 42" || !strings.HasPrefix(lines[1], "event: ") || !strings.HasPrefix(lines[2], "data: ") || strings.ContainsRune(s, '\r') {
			t.Fatalf("frame %q", s)
		}
	})
}

// HubLinger is how long the SSE bridge's shared consumer outlives its last
// viewer.
func HubLinger() time.Duration { return hubLinger }
