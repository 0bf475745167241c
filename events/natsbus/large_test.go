package natsbus_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// bigText is about n bytes of text with what JSON escapes and multi-byte
// characters, so that cuts fall everywhere.
func bigText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%07d \"row\" <td> & \\ 日本語 😀 \u2028\t\n", i)
	}
	return b.String()
}

// bigRows is a JSON value of about n bytes.
func bigRows(n int) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"rows":[`)
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"path":"src/<pkg>/file_%d.go","note":"a \"quoted\" name & 日本"}`, i, i)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// Sizes of the large results: 10 MiB of text and 3 MiB of JSON, and 3 and
// 1.5 MiB under the race detector (still larger than a message; .ci/run
// runs these tests at full size without the detector too).
var largeText, largeJSON = func() (int, int) {
	if testutil.Race {
		return 3 << 20, 3 << 19
	}
	return 10 << 20, 3 << 20
}()

// largeTools registers tools whose results do not fit a default NATS
// message (1 MiB): one returns largeText bytes of text at once, largeJSON of JSON,
// one 1.5 MiB of binary data, and one streams 1.5 MiB in small deltas after
// a reset.
func largeTools(t *testing.T, tk *toolkit.Toolkit) {
	text := bigText(largeText)
	rows := bigRows(largeJSON)
	bin := bytes.Repeat([]byte{0, 1, 2, 0xfe, 0xff}, 3<<19/5)
	small := bigText(1 << 10)
	testutil.Add(t, tk,
		toolkit.MustTool(toolkit.Spec{Name: "big_text", ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (string, error) {
			stream.From(ctx).Progress("writing", 0.5)
			return text, nil
		}),
		toolkit.MustTool(toolkit.Spec{Name: "big_json", ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (json.RawMessage, error) {
			return rows, nil
		}),
		toolkit.MustTool(toolkit.Spec{Name: "big_binary", ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) ([]byte, error) {
			return bin, nil
		}),
		toolkit.MustTool(toolkit.Spec{Name: "many_small", ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (string, error) {
			em := stream.From(ctx)
			for range 3 << 9 {
				em.Text(small)
			}
			return "end", nil
		}),
	)
	// many_small runs twice (a retry): the first attempt's deltas are voided
	// by a reset.
	if err := tk.Use(toolkit.Interceptor{Name: "twice", Tools: []string{"many_small"}, Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		next(ctx, inv)
		return next(ctx, inv)
	}}); err != nil {
		t.Fatal(err)
	}
}

var largeCalls = []toolkit.Call{
	{ID: "text", Name: "big_text"}, {ID: "json", Name: "big_json"},
	{ID: "binary", Name: "big_binary"}, {ID: "small", Name: "many_small"},
}

// rawCollector keeps the messages of a subscription, checking each one
// against the schema and the server's max payload.
type rawCollector struct {
	t          *testing.T
	maxPayload int
	mu         sync.Mutex
	evs        []*events.Event
	results    int
	done       chan struct{}
	want       int
}

func newRawCollector(t *testing.T, maxPayload, results int) *rawCollector {
	return &rawCollector{t: t, maxPayload: maxPayload, want: results, done: make(chan struct{})}
}

func (c *rawCollector) add(data []byte, hdr nats.Header) {
	size := len(data)
	for k, vs := range hdr {
		for _, v := range vs {
			size += len(k) + len(v) + 4
		}
	}
	if size > c.maxPayload {
		c.t.Errorf("a message of %d bytes with headers, over the max payload %d", size, c.maxPayload)
	}
	testutil.CheckEvent(c.t, data)
	ev, err := events.Decode(data)
	if err != nil {
		c.t.Errorf("Decode: %v", err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evs = append(c.evs, ev)
	if ev.Type == events.TypeResult {
		if c.results++; c.results == c.want {
			close(c.done)
		}
	}
}

func (c *rawCollector) wait(what string) []*events.Event {
	c.t.Helper()
	select {
	case <-c.done:
	case <-time.After(60 * time.Second):
		c.mu.Lock()
		defer c.mu.Unlock()
		c.t.Fatalf("%s: %d results of %d after 60s (%d events)", what, c.results, c.want, len(c.evs))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.evs)
}

// checkRebuilt holds every call to the rules: seq gap-free from 1 in
// arrival order, start first, one result last, and the deltas (pieces,
// chunks, resets) rebuilding exactly the content Run returned, which the
// result event left out when it was too large.
func checkRebuilt(t *testing.T, what string, evs []*events.Event, rs []toolkit.Result, wire [][]events.Part) {
	t.Helper()
	byCall := map[string][]*events.Event{}
	for _, ev := range evs {
		byCall[ev.Call] = append(byCall[ev.Call], ev)
	}
	for i, r := range rs {
		list := byCall[r.Call.ID]
		if len(list) < 3 {
			t.Fatalf("%s %s: %d events", what, r.Call.ID, len(list))
		}
		var re events.Reassembler
		results := 0
		for j, ev := range list {
			if ev.Seq != uint64(j+1) {
				t.Fatalf("%s %s: event %d (%s) has seq %d", what, r.Call.ID, j, ev.Type, ev.Seq)
			}
			if err := re.Add(ev); err != nil {
				t.Fatalf("%s %s: %v", what, r.Call.ID, err)
			}
			if ev.Type == events.TypeResult {
				results++
			}
		}
		first, last := list[0], list[len(list)-1]
		if first.Type != events.TypeStart || last.Type != events.TypeResult || results != 1 {
			t.Fatalf("%s %s: first %s, last %s, %d results", what, r.Call.ID, first.Type, last.Type, results)
		}
		got := re.Content()
		if !events.EqualContent(got, wire[i]) {
			t.Fatalf("%s %s: the deltas rebuild %d parts (%d bytes), Run returned %d parts (%d bytes)",
				what, r.Call.ID, len(got), events.ContentSize(got), len(r.Content), events.ContentSize(r.Content))
		}
		res := last.Result
		if res.State != r.State || !res.ContentOmitted || res.Content != nil ||
			res.ContentSize != events.ContentSize(r.Content) || res.ContentParts != len(r.Content) {
			t.Fatalf("%s %s: result %s, omitted %v, size %d parts %d; want size %d parts %d", what, r.Call.ID,
				res.State, res.ContentOmitted, res.ContentSize, res.ContentParts, events.ContentSize(r.Content), len(r.Content))
		}
	}
}

// onTheWire is content as it reads after a trip through the wire: JSON
// compacted and escaped the way the encoder writes it.
func onTheWire(t *testing.T, content []events.Part) []events.Part {
	out := make([]events.Part, len(content))
	for i, p := range content {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestLargeResultsArrive: results of 10 MiB of text, 3 MiB of JSON, 1.5
// MiB of binary data and 1.5 MiB streamed in small deltas (after a reset) reach,
// on a default embedded server (1 MiB max payload), a core NATS subscriber
// (with and without durable mode) and a durable replay, losslessly: every
// message fits, validates, and the deltas rebuild each result exactly.
func TestLargeResultsArrive(t *testing.T) {
	testutil.Long(t)
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) {
			var opts []natsbus.Option
			if durable {
				opts = append(opts, natsbus.WithDurable(natsbus.Durable{Memory: true}))
			}
			bus := natstest.Bus(t, opts...)
			maxPayload := int(bus.Conn().MaxPayload())
			if maxPayload != 1<<20 {
				t.Fatalf("max payload %d, want the default 1 MiB", maxPayload)
			}
			tk := testutil.Kit(t, toolkit.WithInlineObserver(bus.Publisher()), toolkit.WithFlushTimeout(30*time.Second))
			largeTools(t, tk)

			live := newRawCollector(t, maxPayload, len(largeCalls))
			sub, err := bus.Conn().Subscribe(bus.Subjects().Session("big"), func(m *nats.Msg) { live.add(m.Data, m.Header) })
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			sub.SetPendingLimits(-1, -1)
			bus.Conn().Flush()

			rs := testutil.Session(t, tk, "big").Run(context.Background(), largeCalls)
			for _, r := range rs {
				if r.State != events.StateSuccess {
					t.Fatalf("%s: %s %v", r.Call.ID, r.State, r.Err)
				}
			}
			wire := make([][]events.Part, len(rs))
			for i, r := range rs {
				wire[i] = onTheWire(t, r.Content)
			}
			checkRebuilt(t, "live", live.wait("live"), rs, wire)

			if durable {
				replayed := newRawCollector(t, maxPayload, len(largeCalls))
				stream, err := bus.JetStream().Stream(context.Background(), bus.Stream())
				if err != nil {
					t.Fatal(err)
				}
				cons, err := stream.OrderedConsumer(context.Background(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{bus.Subjects().Session("big")}})
				if err != nil {
					t.Fatal(err)
				}
				cc, err := cons.Consume(func(m jetstream.Msg) { replayed.add(m.Data(), m.Headers()) })
				if err != nil {
					t.Fatal(err)
				}
				defer cc.Stop()
				checkRebuilt(t, "replay", replayed.wait("replay"), rs, wire)
			}
			st := bus.Publisher().Stats()
			if st.Undelivered != 0 || st.Cut != 0 || st.Retried != 0 || st.Split < uint64(len(largeCalls)) {
				t.Fatalf("publisher stats %+v", st)
			}
			t.Logf("publisher: %+v", st)
		})
	}
}

// TestRefusedPublishIsCountedOnce: a durable publish the server refuses for
// good (over the stream's message size limit) is counted and logged once,
// never retried; the events after it are stored.
func TestRefusedPublishIsCountedOnce(t *testing.T) {
	var log testutil.SyncBuffer
	bus := natstest.Bus(t, natsbus.WithDurable(natsbus.Durable{Memory: true}), natsbus.WithLogger(zerolog.New(&log)))
	ctx := context.Background()
	stream, err := bus.JetStream().Stream(ctx, bus.Stream())
	if err != nil {
		t.Fatal(err)
	}
	cfg := stream.CachedInfo().Config
	cfg.MaxMsgSize = 4 << 10
	if _, err := bus.JetStream().UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(bus.Publisher()))
	testutil.Add(t, tk, toolkit.MustTool(toolkit.Spec{Name: "wide"}, func(ctx context.Context, _ struct{}) (string, error) {
		return strings.Repeat("w", 8<<10), nil // fits a NATS message, not the stream's limit
	}))
	testutil.Session(t, tk, "refused").Run(ctx, []toolkit.Call{{ID: "w", Name: "wide"}})
	select {
	case <-bus.JetStream().PublishAsyncComplete():
	case <-time.After(10 * time.Second):
		t.Fatal("publishes still pending after 10s")
	}
	time.Sleep(800 * time.Millisecond) // a retry loop (every 250 ms) would show now
	st := bus.Publisher().Stats()
	// The delta and the result are over 4 KiB; start is not.
	if st.Undelivered != 2 || st.Retried != 0 {
		t.Fatalf("stats %+v: want 2 undelivered, none retried", st)
	}
	if n := strings.Count(log.String(), "event not delivered"); n != 2 {
		t.Fatalf("%d log lines about undelivered events, want 2:\n%s", n, log.String())
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Fatalf("%d messages stored, want the start event", info.State.Msgs)
	}
}
