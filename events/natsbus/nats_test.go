package natsbus_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// TestRunEventsOnNATS: every event of a run reaches a NATS subscriber in
// per-call order with gap-free sequences, the deltas add up to each result,
// and when Run returns, the run's events have been handed to NATS.
func TestRunEventsOnNATS(t *testing.T) {
	bus := natstest.Bus(t)
	tk := kit(t, bus)
	col := subscribe(t, bus, bus.Subjects().Session("conv-1"))
	sess, _ := tk.Session("conv-1")
	calls := append(callsFor(5, 20), toolkit.Call{ID: "f", Name: "failer"}, toolkit.Call{ID: "u", Name: "nope"})
	rs := sess.Run(context.Background(), calls)
	// Run returned: the events were handed to NATS. One round trip makes
	// sure the server has them; then they are on their way to us.
	if err := bus.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	evs := col.waitUntil(t, "all results", func(evs []*events.Event) bool { return countType(evs, events.TypeResult) == len(calls) })
	byCall := checkCalls(t, evs)
	if len(byCall) != len(calls) {
		t.Fatalf("events for %d calls, want %d", len(byCall), len(calls))
	}
	for _, r := range rs {
		list := byCall["conv-1/"+r.Call.ID]
		res := list[len(list)-1].Result
		if res.State != r.State || events.ContentText(res.Content) != r.Text() {
			t.Fatalf("%s: NATS says %s %q, Run says %s %q", r.Call.ID, res.State, events.ContentText(res.Content), r.State, r.Text())
		}
	}
	if got := byCall["conv-1/call-0"]; countType(got, events.TypeProgress) != 20 || got[0].Type != events.TypeStart || got[0].Tool != "streamer" {
		t.Fatalf("call-0 events: %d progress, first %s", countType(got, events.TypeProgress), got[0].Type)
	}
	if s := bus.Publisher().Stats(); s.Undelivered != 0 || s.DroppedProgress != 0 {
		t.Fatalf("publisher stats %+v", s)
	}
}

// TestModelVisibleSubscriber: subscribers to *.*.delta and *.*.result see
// what models see and never a progress event.
func TestModelVisibleSubscriber(t *testing.T) {
	bus := natstest.Bus(t)
	tk := kit(t, bus)
	col := newCollector(t)
	for _, typ := range []events.Type{events.TypeDelta, events.TypeResult} {
		sub, err := bus.Subscribe(bus.Subjects().AllOfType(typ), col.add)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
	}
	bus.Conn().Flush()
	for _, id := range []string{"s1", "s2"} {
		sess, _ := tk.Session(id)
		sess.Run(context.Background(), callsFor(3, 10))
	}
	// Deltas and results come through two subscriptions, each in its own
	// order: wait for both.
	evs := col.waitUntil(t, "6 results and 66 deltas", func(evs []*events.Event) bool {
		return countType(evs, events.TypeResult) == 6 && countType(evs, events.TypeDelta) >= 6*11
	})
	time.Sleep(20 * time.Millisecond) // anything else would show up now
	evs = col.all()
	for _, ev := range evs {
		if ev.Type != events.TypeDelta && ev.Type != events.TypeResult {
			t.Fatalf("model-visible subscriber got a %s event", ev.Type)
		}
	}
	if countType(evs, events.TypeDelta) != 6*11 {
		t.Fatalf("%d deltas, want %d", countType(evs, events.TypeDelta), 6*11)
	}
}

// TestSessionIsolation: hostile session ids are encoded; a subscriber to one
// session's subjects never receives another session's events.
func TestSessionIsolation(t *testing.T) {
	bus := natstest.Bus(t)
	tk := kit(t, bus)
	ids := []string{"a", "a.>", "*", "a b", "日本", "a.b", ">"}
	cols := map[string]*collector{}
	for _, id := range ids {
		cols[id] = subscribe(t, bus, bus.Subjects().Session(id))
	}
	for _, id := range ids {
		sess, err := tk.Session(id)
		if err != nil {
			t.Fatal(err)
		}
		sess.Run(context.Background(), callsFor(1, 2))
	}
	bus.Conn().Flush()
	for _, id := range ids {
		evs := cols[id].waitUntil(t, "the session's result", func(evs []*events.Event) bool { return countType(evs, events.TypeResult) >= 1 })
		time.Sleep(50 * time.Millisecond) // give strays time to show up (none may)
		evs = cols[id].all()
		for _, ev := range evs {
			if ev.Session != id {
				t.Fatalf("subscriber of session %q got an event of session %q", id, ev.Session)
			}
		}
		if countType(evs, events.TypeResult) != 1 {
			t.Fatalf("session %q: %d results", id, countType(evs, events.TypeResult))
		}
	}
}

// TestSubscribeSkipsNonEvents: messages on event subjects that are not valid
// events never reach the callback; the events after them do.
func TestSubscribeSkipsNonEvents(t *testing.T) {
	bus := natstest.Bus(t)
	col := newCollector(t) // what Bus.Subscribe lets through
	sub, err := bus.Subscribe(bus.Subjects().Session("junk"), col.add)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := bus.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	subject := bus.Subjects().Call("junk", "c", string(events.TypeStart))
	for _, junk := range []string{"not json", `{"v":1}`, `{"v":1,"type":"start","session":"junk","call":"c"}`, `{"v":99,"type":"start","session":"junk","call":"c","start":{"index":0}}`} {
		if err := bus.Conn().Publish(subject, []byte(junk)); err != nil {
			t.Fatal(err)
		}
	}
	valid := &events.Event{Version: events.Version, Type: events.TypeStart, Session: "junk", Call: "c", Seq: 1, Start: &events.Start{}}
	if err := bus.Conn().Publish(subject, events.AppendJSON(nil, valid)); err != nil {
		t.Fatal(err)
	}
	// One connection delivers in order: when the valid event is in, the junk
	// before it has been handled.
	evs := col.waitUntil(t, "the valid event", func(evs []*events.Event) bool { return len(evs) > 0 })
	if len(evs) != 1 || evs[0].Seq != 1 || evs[0].Start == nil {
		t.Fatalf("got %d events, first %+v", len(evs), evs[0])
	}
}

// TestSlowSubscriberDoesNotSlowTools: a subscriber stuck in its handler
// delays nobody: the run finishes while it is blocked.
func TestSlowSubscriberDoesNotSlowTools(t *testing.T) {
	bus := natstest.Bus(t)
	tk := kit(t, bus)
	block := make(chan struct{})
	sub, err := bus.Subscribe(bus.Subjects().All(), func(*events.Event) { <-block })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { close(block); sub.Unsubscribe() }()
	bus.Conn().Flush()
	sess, _ := tk.Session("s")
	done := make(chan []toolkit.Result, 1)
	go func() { done <- sess.Run(context.Background(), callsFor(4, 500)) }()
	select {
	case rs := <-done:
		for _, r := range rs {
			if r.State != events.StateSuccess {
				t.Fatalf("%s: %s", r.Call.ID, r.State)
			}
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a blocked subscriber stalled the run")
	}
}

// TestPublisherDropsProgressUnderPressure: with a tiny queue, progress is
// dropped, the wire sequence stays gap-free, the next progress says how
// many were dropped, and no delta or result is lost.
func TestPublisherDropsProgressUnderPressure(t *testing.T) {
	const calls, lines = 8, 500
	bus := natstest.Bus(t, natsbus.WithPublisherQueue(1))
	tk := kit(t, bus)
	// Each call bursts progress and deltas, then, once every call is done
	// bursting, takes its turn to emit one more progress event after the
	// publisher caught up (its queue is empty then, so the event is kept):
	// that event reports the drops since the call's last published progress,
	// however few the publisher managed to send during the bursts. (The
	// barrier needs the calls to run at once: 8 is under the toolkit's
	// default parallelism of 10.)
	var burst sync.WaitGroup
	burst.Add(calls)
	var turn sync.Mutex
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "burst", ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (string, error) {
		em := stream.From(ctx)
		for i := 1; i <= lines; i++ {
			em.Step("PROGRESS", i, lines)
			em.Text("line\n")
		}
		burst.Done()
		burst.Wait()
		turn.Lock()
		defer turn.Unlock()
		if err := bus.Publisher().Flush(ctx); err != nil {
			return "", err
		}
		em.Progress("PROGRESS done", 1)
		return "done", nil
	}))
	col := subscribe(t, bus, bus.Subjects().Session("p"))
	sess, _ := tk.Session("p")
	runCalls(t, sess, "burst", calls)
	bus.Conn().Flush()
	evs := col.waitUntil(t, "8 results", func(evs []*events.Event) bool { return countType(evs, events.TypeResult) == calls })
	checkCalls(t, evs)
	stats := bus.Publisher().Stats()
	if stats.DroppedProgress == 0 {
		t.Skip("the publisher kept up with 4000 progress events; nothing to check on this machine")
	}
	var reported uint64
	for _, ev := range evs {
		if ev.Type == events.TypeProgress {
			reported += ev.Progress.Dropped
		}
	}
	if reported != stats.DroppedProgress {
		t.Fatalf("progress events report %d drops, the publisher dropped %d", reported, stats.DroppedProgress)
	}
	if got, want := countType(evs, events.TypeDelta), calls*(lines+1); got != want {
		t.Fatalf("%d deltas, want %d: deltas must never be dropped", got, want)
	}
}

// TestDurableResume: a JetStream subscriber that stops mid-run and resumes
// from its last sequence ends up with every event exactly once.
func TestDurableResume(t *testing.T) {
	bus := natstest.Bus(t, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	tk := kit(t, bus)
	sess, _ := tk.Session("d")
	run := sess.Start(context.Background(), callsFor(6, 50))

	type got struct {
		seq uint64
		ev  *events.Event
	}
	var first []got
	enough := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	stop, err := bus.Replay(ctx, bus.Subjects().Session("d"), 0, func(seq uint64, ev *events.Event) {
		first = append(first, got{seq, ev})
		if len(first) == 40 {
			close(enough)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-enough:
	case <-time.After(20 * time.Second):
		t.Fatal("no events replayed")
	}
	stop() // the subscriber goes away mid-run
	cancel()
	if len(first) < 40 {
		t.Fatalf("%d events before stopping", len(first))
	}
	last := first[len(first)-1].seq
	run.Wait()

	var mu sync.Mutex
	var rest []got
	col := newCollector(t)
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	stop2, err := bus.Replay(ctx2, bus.Subjects().Session("d"), last+1, func(seq uint64, ev *events.Event) {
		mu.Lock()
		rest = append(rest, got{seq, ev})
		mu.Unlock()
		col.add(ev)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop2()
	col.waitUntil(t, "the rest of the run", func(evs []*events.Event) bool {
		results := countType(evs, events.TypeResult)
		for _, g := range first {
			if g.ev.Type == events.TypeResult {
				results++
			}
		}
		return results == 6
	})
	mu.Lock()
	defer mu.Unlock()
	want := len(first) + len(rest)
	all := append(first, rest...)
	seen := map[uint64]bool{}
	var evs []*events.Event
	for i, g := range all {
		if seen[g.seq] {
			t.Fatalf("stream sequence %d delivered twice", g.seq)
		}
		seen[g.seq] = true
		if i > 0 && g.seq != all[i-1].seq+1 {
			t.Fatalf("gap in stream sequences: %d then %d", all[i-1].seq, g.seq)
		}
		evs = append(evs, g.ev)
	}
	checkCalls(t, evs)
	if want != 6*(1+50+51+1) {
		t.Fatalf("%d events, want %d", want, 6*(1+50+51+1))
	}
}

// TestReplayStopIsFinal: once stop returns, the callback is not running
// and is never called again, even while events keep arriving.
func TestReplayStopIsFinal(t *testing.T) {
	bus := natstest.Bus(t, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	tk := kit(t, bus)
	sess, _ := tk.Session("stop")
	run := sess.Start(context.Background(), callsFor(4, 400))
	defer run.Wait()
	var calls, inside atomic.Int64
	enough := make(chan struct{})
	var once sync.Once
	stop, err := bus.Replay(context.Background(), bus.Subjects().Session("stop"), 0, func(uint64, *events.Event) {
		inside.Add(1)
		defer inside.Add(-1)
		if calls.Add(1) == 50 {
			once.Do(func() { close(enough) })
		}
		time.Sleep(time.Millisecond) // a slow consumer widens the window
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-enough:
	case <-time.After(20 * time.Second):
		t.Fatal("no events replayed")
	}
	stop()
	if n := inside.Load(); n != 0 {
		t.Fatalf("the callback is still running after stop (%d)", n)
	}
	after := calls.Load()
	time.Sleep(200 * time.Millisecond)
	if n := calls.Load(); n != after {
		t.Fatalf("the callback ran %d more times after stop", n-after)
	}
	stop() // a second stop is harmless
}

// TestReplayNeedsDurable: a clear error, not a hang.
func TestReplayNeedsDurable(t *testing.T) {
	bus := natstest.Bus(t)
	if _, err := bus.Replay(context.Background(), bus.Subjects().All(), 0, func(uint64, *events.Event) {}); !errors.Is(err, natsbus.ErrNotDurable) {
		t.Fatalf("Replay on a non-durable bus: %v", err)
	}
}

// TestSessionEventOnNATS: session-level events go to <prefix>.<session>._.<type>.
func TestSessionEventOnNATS(t *testing.T) {
	bus := natstest.Bus(t)
	tk := kit(t, bus)
	col := newCollector(t)
	sub, err := bus.Conn().Subscribe("toolstream.g._.groups", func(m *nats.Msg) {
		ev, err := events.Decode(m.Data)
		if err != nil {
			t.Error(err)
			return
		}
		col.add(ev)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	bus.Conn().Flush()
	sess, _ := tk.Session("g")
	if err := sess.Emit(context.Background(), "groups", map[string]any{"active": []string{"files"}}); err != nil {
		t.Fatal(err)
	}
	evs := col.waitUntil(t, "the session event", func(evs []*events.Event) bool { return len(evs) == 1 })
	if ev := evs[0]; ev.Call != "" || ev.Seq != 1 || string(ev.Data) != `{"active":["files"]}` {
		t.Fatalf("%+v", ev)
	}
}

// TestDurableReusedCallIDs: two runs that reuse call ids (a rerun scripted
// conversation) are both stored: message ids only deduplicate republishing.
func TestDurableReusedCallIDs(t *testing.T) {
	bus := natstest.Bus(t, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	tk := kit(t, bus)
	sess, _ := tk.Session("again")
	for range 2 {
		sess.Run(context.Background(), callsFor(2, 3))
	}
	s, err := bus.JetStream().Stream(context.Background(), bus.Stream())
	if err != nil {
		t.Fatal(err)
	}
	<-bus.JetStream().PublishAsyncComplete()
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(2 * 2 * (1 + 3 + 4 + 1)); info.State.Msgs != want {
		t.Fatalf("%d events stored, want %d", info.State.Msgs, want)
	}
}
