package natsbus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/internal/leak"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

func TestMain(m *testing.M) {
	leak.VerifyTestMain(m)
}

// kit returns a toolkit publishing to bus, with demo-like tools.
func kit(t testing.TB, bus *natsbus.Bus, opts ...toolkit.Option) *toolkit.Toolkit {
	t.Helper()
	tk := toolkit.New(append([]toolkit.Option{toolkit.WithInlineObserver(bus.Publisher())}, opts...)...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tk.Close(ctx); err != nil {
			t.Errorf("toolkit Close: %v", err)
		}
	})
	kitTools(t, tk)
	return tk
}

// kitTools registers the test tools: "streamer" (progress and a line per
// step) and "failer".
func kitTools(t testing.TB, tk *toolkit.Toolkit) {
	type streamIn struct {
		Lines int `json:"lines"`
	}
	must := func(tool *toolkit.Tool, err error) *toolkit.Tool {
		if err != nil {
			t.Fatal(err)
		}
		return tool
	}
	if err := tk.Add(
		must(toolkit.NewTool(toolkit.Spec{Name: "streamer", ConcurrencySafe: true}, func(ctx context.Context, in streamIn) (string, error) {
			em := stream.From(ctx)
			for i := 1; i <= in.Lines; i++ {
				em.Step(fmt.Sprintf("PROGRESS line %d of %d", i, in.Lines), i, in.Lines)
				fmt.Fprintf(em, "line %d\n", i)
			}
			return fmt.Sprintf("%d lines", in.Lines), nil
		})),
		must(toolkit.NewTool(toolkit.Spec{Name: "failer", ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (string, error) {
			stream.From(ctx).Progress("PROGRESS about to fail", 0.5)
			stream.From(ctx).Text("partial\n")
			return "", fmt.Errorf("disk full")
		})),
	); err != nil {
		t.Fatal(err)
	}
}

func callsFor(n int, lines int) []toolkit.Call {
	calls := make([]toolkit.Call, n)
	for i := range calls {
		calls[i] = toolkit.Call{ID: fmt.Sprintf("call-%d", i), Name: "streamer", Args: json.RawMessage(fmt.Sprintf(`{"lines":%d}`, lines))}
	}
	return calls
}

// collector gathers events delivered by a subscription. Every event it
// gets is checked against docs/events.schema.json.
type collector struct {
	t    testing.TB
	mu   sync.Mutex
	evs  []*events.Event
	seen chan struct{}
	raw  bool // events come from subscribe, which validates the messages themselves
}

func newCollector(t testing.TB) *collector { return &collector{t: t, seen: make(chan struct{}, 1)} }

// subscribe collects the events on subject, from a subscription that is
// live on the server when it returns and ends with the test. Each message is
// validated against the schema as it came.
func subscribe(t testing.TB, bus *natsbus.Bus, subject string) *collector {
	t.Helper()
	col := newCollector(t)
	col.raw = true
	sub, err := bus.Conn().Subscribe(subject, func(m *nats.Msg) {
		testutil.CheckEvent(t, m.Data)
		ev, err := events.Decode(m.Data)
		if err != nil {
			t.Errorf("not an event on %s: %v", m.Subject, err)
			return
		}
		col.add(ev)
	})
	if err != nil {
		t.Fatalf("subscribe %q: %v", subject, err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	sub.SetPendingLimits(-1, -1) // a test reads everything: never a slow consumer
	if err := bus.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	return col
}

func (c *collector) add(ev *events.Event) {
	if !c.raw {
		testutil.CheckEvent(c.t, events.AppendJSON(nil, ev))
	}
	c.mu.Lock()
	c.evs = append(c.evs, ev)
	c.mu.Unlock()
	select {
	case c.seen <- struct{}{}:
	default:
	}
}

func (c *collector) all() []*events.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.evs)
}

// waitUntil waits until cond holds over the collected events; the bound
// only turns a hang into a failure.
func (c *collector) waitUntil(t testing.TB, what string, cond func([]*events.Event) bool) []*events.Event {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		evs := c.all()
		if cond(evs) {
			return evs
		}
		select {
		case <-c.seen:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out waiting for %s; have %d events", what, len(evs))
		}
	}
}

func countType(evs []*events.Event, typ events.Type) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// checkCalls verifies, per call: sequences 1..n without gaps in arrival
// order, start first and result last, and deltas that add up to the result
// with no progress text in it.
func checkCalls(t testing.TB, evs []*events.Event) map[string][]*events.Event {
	t.Helper()
	byCall := map[string][]*events.Event{}
	for _, ev := range evs {
		byCall[ev.Session+"/"+ev.Call] = append(byCall[ev.Session+"/"+ev.Call], ev)
	}
	for key, list := range byCall {
		for i, ev := range list {
			if ev.Seq != uint64(i+1) {
				t.Fatalf("%s: event %d (%s) has seq %d", key, i, ev.Type, ev.Seq)
			}
			if ev.Version != events.Version {
				t.Fatalf("%s: version %d", key, ev.Version)
			}
		}
		last := list[len(list)-1]
		if last.Type != events.TypeResult {
			t.Fatalf("%s: last event is %s", key, last.Type)
		}
		var rebuilt events.Reassembler
		for _, ev := range list {
			if err := rebuilt.Add(ev); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
		}
		got, want := events.ContentText(rebuilt.Content()), events.ContentText(last.Result.Content)
		if got != want {
			t.Fatalf("%s: deltas add up to %q, result is %q", key, got, want)
		}
		if strings.Contains(want, "PROGRESS") {
			t.Fatalf("%s: progress text in the result: %q", key, want)
		}
	}
	return byCall
}
