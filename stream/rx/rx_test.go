package rx_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reactivex/rxgo/v2"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/internal/leak"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/stream/rx"
	"github.com/toolstream/toolstream/toolkit"
)

func TestMain(m *testing.M) {
	leak.VerifyTestMain(m)
}

func newKit(t *testing.T, opts ...toolkit.Option) *toolkit.Toolkit {
	t.Helper()
	tk := toolkit.New(opts...)
	t.Cleanup(func() { tk.Close(context.Background()) })
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "lines", ConcurrencySafe: true}, func(ctx context.Context, in struct {
		N int `json:"n"`
	}) (string, error) {
		em := stream.From(ctx)
		for i := 1; i <= in.N; i++ {
			em.Step(fmt.Sprintf("PROGRESS %d", i), i, in.N)
			fmt.Fprintf(em, "line %d\n", i)
		}
		return "end", nil
	}))
	return tk
}

func lineCalls(n, lines int) []toolkit.Call {
	calls := make([]toolkit.Call, n)
	for i := range calls {
		calls[i] = toolkit.Call{ID: fmt.Sprintf("c%d", i), Name: "lines", Args: json.RawMessage(fmt.Sprintf(`{"n":%d}`, lines))}
	}
	return calls
}

// collect reads an observable until it has n items or the bound passes.
func collect(t *testing.T, o rxgo.Observable, n int) []any {
	t.Helper()
	var out []any
	ch := o.Observe()
	deadline := time.After(120 * time.Second) // large results under -race on a busy machine take long
	for len(out) < n {
		select {
		case item, ok := <-ch:
			if !ok {
				return out
			}
			if item.E != nil {
				t.Fatal(item.E)
			}
			if ev, ok := item.V.(*events.Event); ok {
				testutil.CheckEvent(t, events.AppendJSON(nil, ev))
			}
			out = append(out, item.V)
		case <-deadline:
			t.Fatalf("got %d of %d items", len(out), n)
		}
	}
	return out
}

// TestHubViewsAndAccumulator: in process, without NATS: filtered
// observables, the model-visible and progress views, and the accumulator
// that rebuilds each result from its deltas.
func TestHubViewsAndAccumulator(t *testing.T) {
	hub := &rx.Hub{}
	defer hub.Close()
	tk := newKit(t, toolkit.WithObserver(hub))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	visible := rx.ModelVisible(hub.Observable(ctx, rx.Filter{Session: "s"}))
	progress := rx.ProgressOnly(hub.Observable(ctx, rx.Filter{Session: "s", Call: "c1"}))
	results := rx.Accumulate(context.Background(), hub.Observable(ctx, rx.Filter{Session: "s"}))
	other := hub.Observable(ctx, rx.Filter{Session: "other"})

	sess, _ := tk.Session("s")
	sess.Run(context.Background(), lineCalls(3, 10))

	vis := collect(t, visible, 3*(11+1))
	for _, v := range vis {
		ev := v.(*events.Event)
		if ev.Type != events.TypeDelta && ev.Type != events.TypeResult {
			t.Fatalf("model-visible view let a %s through", ev.Type)
		}
	}
	prog := collect(t, progress, 10)
	for i, v := range prog {
		ev := v.(*events.Event)
		if ev.Type != events.TypeProgress || ev.Call != "c1" || ev.Progress.Message != fmt.Sprintf("PROGRESS %d", i+1) {
			t.Fatalf("progress view item %d: %s %s %+v", i, ev.Type, ev.Call, ev.Progress)
		}
	}
	for _, v := range collect(t, results, 3) {
		cr := v.(rx.Rebuilt)
		if cr.Mismatch != "" {
			t.Fatalf("%s: %s", cr.Call, cr.Mismatch)
		}
		text := events.ContentText(cr.Content)
		if !strings.HasPrefix(text, "line 1\n") || !strings.HasSuffix(text, "line 10\nend") || strings.Contains(text, "PROGRESS") {
			t.Fatalf("%s: accumulated %q", cr.Call, text)
		}
	}
	select {
	case item := <-other.Observe():
		t.Fatalf("another session's observable got %v", item.V)
	case <-time.After(20 * time.Millisecond):
	}
}

// TestAccumulatorFindsMismatch: deltas that do not add up to the result are
// reported, and deltas out of order are put back in sequence order.
func TestAccumulatorFindsMismatch(t *testing.T) {
	mk := func(seq uint64, typ events.Type, text string) *events.Event {
		ev := &events.Event{Version: events.Version, Type: typ, Session: "s", Call: "c", Seq: seq}
		switch typ {
		case events.TypeDelta:
			p := events.Text(text)
			ev.Delta = &p
		case events.TypeResult:
			ev.Result = &events.Result{State: events.StateSuccess, Content: []events.Part{events.Text(text)}}
		}
		return ev
	}
	reset := func(seq uint64, text string) *events.Event {
		ev := mk(seq, events.TypeDelta, text)
		ev.Reset = true
		return ev
	}
	good := []any{mk(3, events.TypeDelta, "b"), mk(2, events.TypeDelta, "a"), mk(4, events.TypeResult, "ab")}
	bad := []any{mk(2, events.TypeDelta, "a"), mk(3, events.TypeResult, "ab")}
	// A retry: the reset delta voids "a" and "b" (the reset arrives before
	// "b" but comes after it in sequence order).
	retried := []any{mk(2, events.TypeDelta, "a"), reset(4, "x"), mk(3, events.TypeDelta, "b"), mk(5, events.TypeDelta, "y"), mk(6, events.TypeResult, "xy")}
	for _, tc := range []struct {
		in       []any
		mismatch bool
	}{{good, false}, {bad, true}, {retried, false}} {
		got := collect(t, rx.Accumulate(context.Background(), rxgo.Just(tc.in...)()), 1)
		cr := got[0].(rx.Rebuilt)
		if (cr.Mismatch != "") != tc.mismatch {
			t.Fatalf("mismatch %q, want one: %v", cr.Mismatch, tc.mismatch)
		}
	}
}

// TestHubObservablesEnd: an observable completes when its context ends or
// the hub closes, even while Observe waits for it (its buffer full), and an
// observable of a closed hub is complete at once.
func TestHubObservablesEnd(t *testing.T) {
	for _, how := range []string{"context", "close"} {
		t.Run(how, func(t *testing.T) {
			hub := &rx.Hub{}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			o := hub.Observable(ctx, rx.Filter{}) // nobody reads until the end
			observing := make(chan any, 1)
			go func() {
				defer func() { observing <- recover() }()
				for range 300 { // more than the observable buffers
					hub.Observe(&events.Event{Version: events.Version, Type: "note", Session: "s"})
				}
			}()
			time.Sleep(50 * time.Millisecond) // Observe is now waiting for room
			if how == "context" {
				cancel()
			} else {
				hub.Close()
			}
			select {
			case p := <-observing:
				if p != nil {
					t.Fatalf("Observe panicked: %v", p)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Observe still waits for a subscription that ended")
			}
			n := 0
			for item := range o.Observe() {
				if item.E == nil {
					n++
				}
			}
			if n == 0 || n > 300 {
				t.Fatalf("%d items before the observable completed", n)
			}
			hub.Close()
		})
	}
	hub := &rx.Hub{}
	hub.Close()
	for range hub.Observable(context.Background(), rx.Filter{}).Observe() {
		t.Fatal("an item from a closed hub")
	}
}

func TestFilterMatch(t *testing.T) {
	ev := &events.Event{Type: events.TypeDelta, Session: "s", Call: "c", Tool: "grep"}
	for _, tc := range []struct {
		f    rx.Filter
		want bool
	}{
		{rx.Filter{}, true},
		{rx.Filter{Session: "s", Call: "c", Tool: "grep", Types: rx.ModelVisibleTypes}, true},
		{rx.Filter{Session: "t"}, false},
		{rx.Filter{Call: "d"}, false},
		{rx.Filter{Tool: "ls"}, false},
		{rx.Filter{Types: []events.Type{events.TypeProgress, events.TypeResult}}, false},
	} {
		if got := tc.f.Match(ev); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.f, got, tc.want)
		}
	}
}

// TestLiveAndReplayFromNATS: the same views work on events read from NATS,
// live and resumed from JetStream.
func TestLiveAndReplayFromNATS(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bus, err := natsbus.Open(ctx, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close(context.Background())
	tk := newKit(t, toolkit.WithInlineObserver(bus.Publisher()))

	live, err := rx.Live(ctx, bus, rx.Filter{Session: "n", Types: rx.ModelVisibleTypes})
	if err != nil {
		t.Fatal(err)
	}
	liveResults := rx.Accumulate(context.Background(), live)
	bus.Conn().Flush()
	sess, _ := tk.Session("n")
	sess.Run(context.Background(), lineCalls(2, 5))
	for _, v := range collect(t, liveResults, 2) {
		if cr := v.(rx.Rebuilt); cr.Mismatch != "" || len(cr.Content) == 0 {
			t.Fatalf("live %s: %q %q", cr.Call, cr.Mismatch, events.ContentText(cr.Content))
		}
	}

	// Replay everything, then resume after the tenth event: the resumed
	// observable starts exactly at the eleventh.
	all := collect(t, mustReplay(t, ctx, bus, 0), 2*(1+5+6+1))
	tenth := all[9].(*events.Event)
	resumed := collect(t, mustReplay(t, ctx, bus, tenth.Stream+1), len(all)-10)
	for i, v := range resumed {
		want := all[10+i].(*events.Event)
		if ev := v.(*events.Event); ev.Stream != want.Stream || ev.Seq != want.Seq || ev.Call != want.Call {
			t.Fatalf("resumed item %d is stream %d, want %d", i, ev.Stream, want.Stream)
		}
	}
}

func mustReplay(t *testing.T, ctx context.Context, bus *natsbus.Bus, from uint64) rxgo.Observable {
	t.Helper()
	o, err := rx.Replay(ctx, bus, rx.Filter{Session: "n"}, from)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestFilterSubjects(t *testing.T) {
	s := events.Subjects{}
	for _, tc := range []struct {
		f    rx.Filter
		want string
	}{
		{rx.Filter{}, "toolstream.>"},
		{rx.Filter{Types: []events.Type{events.TypeResult}}, "toolstream.*.*.result"},
		{rx.Filter{Session: "a"}, "toolstream.a.>"},
		{rx.Filter{Session: "a", Call: "b"}, "toolstream.a.b.*"},
		{rx.Filter{Session: "a", Call: "b", Types: []events.Type{events.TypeDelta}}, "toolstream.a.b.delta"},
		{rx.Filter{Session: "a.b"}, "toolstream.~YS5i.>"},
	} {
		if got := tc.f.Subject(s); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.f, got, tc.want)
		}
	}
}

// TestAccumulateLargeResults: results too large for one NATS message (10
// MiB of text, 3 MiB of JSON; 3 and 1.5 MiB under the race detector) come as several deltas, chunks and a result
// that leaves its content out; Accumulate rebuilds them, live and
// replayed, and finds them whole.
func TestAccumulateLargeResults(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bus, err := natsbus.Open(ctx, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close(context.Background())
	tk := newKit(t, toolkit.WithInlineObserver(bus.Publisher()), toolkit.WithFlushTimeout(30*time.Second))
	textSize, jsonSize := 10<<20, 3<<20
	if testutil.Race { // ten times slower: still larger than one message
		textSize, jsonSize = 3<<20, 3<<19
	}
	var text strings.Builder
	for i := 0; text.Len() < textSize; i++ {
		fmt.Fprintf(&text, "row %d <\"x\"> 日本 😀\n", i)
	}
	var rows strings.Builder
	rows.WriteString(`[`)
	for i := 0; rows.Len() < jsonSize; i++ {
		if i > 0 {
			rows.WriteString(",")
		}
		fmt.Fprintf(&rows, `{"id":%d,"name":"<n>&\"%d\""}`, i, i)
	}
	rows.WriteString(`]`)
	testutil.Add(t, tk,
		toolkit.MustTool(toolkit.Spec{Name: "big_text", ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (string, error) {
			return text.String(), nil
		}),
		toolkit.MustTool(toolkit.Spec{Name: "big_json", ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (json.RawMessage, error) {
			return json.RawMessage(rows.String()), nil
		}),
	)
	live, err := rx.Live(ctx, bus, rx.Filter{Session: "big", Types: rx.ModelVisibleTypes})
	if err != nil {
		t.Fatal(err)
	}
	liveResults := rx.Accumulate(context.Background(), live)
	bus.Conn().Flush()
	rs := testutil.Session(t, tk, "big").Run(context.Background(), []toolkit.Call{{ID: "t", Name: "big_text"}, {ID: "j", Name: "big_json"}})
	want := map[string]events.Part{}
	for _, r := range rs {
		if r.State != events.StateSuccess || len(r.Content) != 1 {
			t.Fatalf("%s: %s, %d parts", r.Call.ID, r.State, len(r.Content))
		}
		b, _ := json.Marshal(r.Content[0]) // as the part reads after the wire
		var p events.Part
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		want[r.Call.ID] = p
	}
	check := func(what string, items []any) {
		for _, v := range items {
			cr := v.(rx.Rebuilt)
			if cr.Mismatch != "" {
				t.Fatalf("%s %s: %s", what, cr.Call, cr.Mismatch)
			}
			if !cr.Result.ContentOmitted || len(cr.Content) != 1 || !cr.Content[0].Equal(want[cr.Call]) {
				t.Fatalf("%s %s: omitted %v, %d parts rebuilt", what, cr.Call, cr.Result.ContentOmitted, len(cr.Content))
			}
		}
	}
	check("live", collect(t, liveResults, 2))
	replay, err := rx.Replay(ctx, bus, rx.Filter{Session: "big"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	check("replay", collect(t, rx.Accumulate(context.Background(), replay), 2))
}

// TestAccumulateReaderStopsEarly: a reader that takes fewer rebuilt results
// than there are (the first one, then it leaves) and ends the context
// leaves no goroutine behind (Accumulate's goroutine stayed, waiting to hand
// over the second result).
func TestAccumulateReaderStopsEarly(t *testing.T) {
	check := leak.Check(t)
	ctx, cancel := context.WithCancel(context.Background())
	bus, err := natsbus.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(toolkit.WithInlineObserver(bus.Publisher()))
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "echo", ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (string, error) {
		return "ok", nil
	}))
	live, err := rx.Live(ctx, bus, rx.Filter{Session: "early"})
	if err != nil {
		t.Fatal(err)
	}
	results := rx.Accumulate(ctx, live)
	bus.Conn().Flush()
	sess, _ := tk.Session("early")
	calls := make([]toolkit.Call, 3)
	for i := range calls {
		calls[i] = toolkit.Call{ID: fmt.Sprintf("c%d", i), Name: "echo"}
	}
	sess.Run(context.Background(), calls)
	first := collect(t, results, 1)
	if cr := first[0].(rx.Rebuilt); cr.Mismatch != "" {
		t.Fatal(cr.Mismatch)
	}
	time.Sleep(50 * time.Millisecond) // the other results reach the accumulator
	cancel()
	tk.Close(context.Background())
	bus.Close(context.Background())
	check()
}
