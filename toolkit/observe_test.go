package toolkit_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/leak"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// TestPanickingObserver: an observer that panics on every event breaks
// neither the tool nor the other observers.
func TestPanickingObserver(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t,
		toolkit.WithObserver(toolkit.ObserverFunc(func(*events.Event) { panic("observer bug") })),
		toolkit.WithObserver(toolkit.Callbacks{OnProgress: func(toolkit.CallInfo, events.Progress) { panic("callback bug") }}),
		toolkit.WithObserver(rec),
	)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "p"}, func(ctx context.Context, _ none) (string, error) {
		stream.From(ctx).Progress("working", 0.5)
		return "fine", nil
	}))
	r := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("1", "p", ``)})[0]
	if r.State != events.StateSuccess || r.Text() != "fine" {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	if got := testutil.Types(rec.Of("1")); !slices.Equal(got, []events.Type{"start", "progress", "delta", "result"}) {
		t.Fatalf("healthy observer saw %v", got)
	}
	// 4 events for the first observer, 1 progress for the callbacks.
	if p := tk.Stats().ObserverPanics; p != 5 {
		t.Fatalf("ObserverPanics = %d, want 5", p)
	}
}

// TestInlineObservers: inline observers see every event in order before the
// emitting call returns, survive their own panics, and can be removed.
func TestInlineObservers(t *testing.T) {
	rec := &testutil.Recorder{}
	var seenBeforeReturn atomic.Bool
	tk := testutil.Kit(t, toolkit.WithInlineObserver(rec),
		toolkit.WithInlineObserver(toolkit.ObserverFunc(func(*events.Event) { panic("inline bug") })))
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "p"}, func(ctx context.Context, _ none) (string, error) {
		stream.From(ctx).Progress("half", 0.5)
		// Inline delivery happened before Progress returned.
		for _, ev := range rec.All() {
			if ev.Type == events.TypeProgress {
				seenBeforeReturn.Store(true)
			}
		}
		return "ok", nil
	}))
	s := testutil.Session(t, tk, "s")
	r := s.Run(context.Background(), []toolkit.Call{testutil.Call("1", "p", ``)})[0]
	if r.State != events.StateSuccess || !seenBeforeReturn.Load() {
		t.Fatalf("%s, seen before return: %v", r.State, seenBeforeReturn.Load())
	}
	if got := testutil.Types(rec.Of("1")); !slices.Equal(got, []events.Type{"start", "progress", "delta", "result"}) {
		t.Fatalf("events %v", got)
	}
	if p := tk.Stats().ObserverPanics; p != 4 {
		t.Fatalf("panics %d, want 4", p)
	}
	rec2 := &testutil.Recorder{}
	remove := tk.ObserveInline(rec2)
	s.Run(context.Background(), []toolkit.Call{testutil.Call("2", "p", ``)})
	remove()
	s.Run(context.Background(), []toolkit.Call{testutil.Call("3", "p", ``)})
	if len(rec2.Of("2")) != 4 || len(rec2.Of("3")) != 0 || len(rec.Of("3")) != 4 {
		t.Fatalf("after removal: %d %d %d", len(rec2.Of("2")), len(rec2.Of("3")), len(rec.Of("3")))
	}
}

// TestSlowObserverDoesNotStallTools: an observer blocked on its first event
// does not keep the tool from finishing; its progress backlog is bounded and
// the run still completes after the flush timeout.
func TestSlowObserverDoesNotStallTools(t *testing.T) {
	unblock := make(chan struct{})
	var seen atomic.Int64
	slow := toolkit.ObserverFunc(func(ev *events.Event) {
		<-unblock
		seen.Add(1)
	})
	tk := testutil.Kit(t, toolkit.WithObserver(slow), toolkit.WithObserverQueue(16), toolkit.WithFlushTimeout(20*time.Millisecond))
	handlerDone := make(chan struct{})
	const n = 10000
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "chatty"}, func(ctx context.Context, _ none) (string, error) {
		em := stream.From(ctx)
		for i := range n {
			em.Step("item", i, n)
		}
		close(handlerDone)
		return "done", nil
	}))
	run := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("1", "chatty", ``)})
	testutil.WaitFor(t, handlerDone, "handler to finish while the observer is blocked")
	testutil.WaitFor(t, run.Done(), "run to finish while the observer is blocked")
	if r := run.Wait()[0]; r.State != events.StateSuccess {
		t.Fatalf("%s", r.State)
	}
	close(unblock)
	dropped := tk.Stats().DroppedProgress
	if dropped == 0 || dropped > n {
		t.Fatalf("dropped %d progress events", dropped)
	}
	// start + delta + result are never dropped; at most 2 queues of progress wait.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tk.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := seen.Load(); got != int64(n)+3-int64(dropped) {
		t.Fatalf("observer saw %d events, want %d", got, int64(n)+3-int64(dropped))
	}
}

// TestFlushWaitsForObservers: when Wait returns, observers have the results.
func TestFlushWaitsForObservers(t *testing.T) {
	var results atomic.Int32
	tk := testutil.Kit(t, toolkit.WithObserver(toolkit.Callbacks{OnResult: func(toolkit.CallInfo, events.Result) {
		time.Sleep(5 * time.Millisecond) // a slow but finite observer
		results.Add(1)
	}}))
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "x", ConcurrencySafe: true}, func(ctx context.Context, _ none) (string, error) { return "", nil }))
	testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("1", "x", ``), testutil.Call("2", "x", ``), testutil.Call("3", "x", ``)})
	if got := results.Load(); got != 3 {
		t.Fatalf("observer had %d of 3 results when Wait returned", got)
	}
}

func TestObserveAndRemove(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "x"}, func(ctx context.Context, _ none) (string, error) { return "", nil }))
	s := testutil.Session(t, tk, "s")
	rec := &testutil.Recorder{}
	remove := tk.Observe(rec)
	s.Run(context.Background(), []toolkit.Call{testutil.Call("1", "x", ``)})
	remove()
	remove() // idempotent
	s.Run(context.Background(), []toolkit.Call{testutil.Call("2", "x", ``)})
	if len(rec.Of("1")) != 2 || len(rec.Of("2")) != 0 {
		t.Fatalf("events: %d for the observed run, %d after removal", len(rec.Of("1")), len(rec.Of("2")))
	}
}

// TestProgressWithoutListeners: emitting without observers is a no-op that
// does not fail.
func TestProgressWithoutListeners(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "x"}, func(ctx context.Context, _ none) (string, error) {
		em := stream.From(ctx)
		if em.Listening() {
			return "", errors.New("Listening() with no observers")
		}
		em.Progress("nobody hears this", 0.1)
		return "ok", em.Text("")
	}))
	if r := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("1", "x", ``)})[0]; r.Text() != "ok" {
		t.Fatalf("%q %v", r.Text(), r.Err)
	}
	// Outside a call the emitter is nil and harmless.
	var em *stream.Emitter = stream.From(context.Background())
	em.Progress("x", 1)
	if err := em.Text("x"); err != nil {
		t.Fatal(err)
	}
}

// TestNoGoroutineLeaks runs every kind of call, closes the toolkit and checks
// that nothing is left running.
func TestNoGoroutineLeaks(t *testing.T) {
	defer leak.Check(t)()
	rec := &testutil.Recorder{}
	tk := toolkit.New(toolkit.WithObserver(rec), toolkit.WithCancelGrace(5*time.Millisecond))
	ext, err := toolkit.NewExternalTool(toolkit.Spec{Name: "ext", Timeout: 10 * time.Millisecond}, []byte(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	testutil.Add(t, tk,
		testutil.Tool(t, toolkit.Spec{Name: "ok", ConcurrencySafe: true}, func(ctx context.Context, _ none) (string, error) {
			stream.From(ctx).Progress("p", 0.5)
			return "x", nil
		}),
		testutil.Tool(t, toolkit.Spec{Name: "boom", ConcurrencySafe: true}, func(ctx context.Context, _ none) (string, error) { panic("x") }),
		testutil.Tool(t, toolkit.Spec{Name: "slow", Timeout: 5 * time.Millisecond}, func(ctx context.Context, _ none) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		}),
		ext,
	)
	s := testutil.Session(t, tk, "s")
	for range 5 {
		s.Run(context.Background(), []toolkit.Call{
			testutil.Call("1", "ok", ``), testutil.Call("2", "boom", ``), testutil.Call("3", "nope", ``), testutil.Call("4", "ok", `{"bad":1}`),
			testutil.Call("5", "slow", ``), testutil.Call("6", "ext", ``),
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	run := s.Start(ctx, []toolkit.Call{testutil.Call("7", "slow", ``), testutil.Call("8", "ok", ``)})
	cancel()
	run.Wait()
	if err := tk.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestLogging: silent by default; with WithLogger, failures are logged with
// the call's identity.
func TestLogging(t *testing.T) {
	var buf bytes.Buffer
	tk := testutil.Kit(t, toolkit.WithLogger(zerolog.New(&buf)))
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "boom"}, func(ctx context.Context, _ none) (string, error) { panic("kaput") }))
	testutil.Session(t, tk, "log-session").Run(context.Background(), []toolkit.Call{testutil.Call("c-1", "boom", ``)})
	out := buf.String()
	for _, want := range []string{`"tool":"boom"`, `"call":"c-1"`, `"panic":"kaput"`, `"session":"log-session"`, `"state":"error"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
}

// TestSessionEvents: session-level events reach inline and asynchronous
// observers, numbered per session; lifecycle types are refused.
func TestSessionEvents(t *testing.T) {
	inline, async := &testutil.Recorder{}, &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(inline), toolkit.WithObserver(async))
	s := testutil.Session(t, tk, "s")
	for i := range 3 {
		if err := s.Emit(context.Background(), "groups", map[string]any{"active": []string{"files"}, "n": i}); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []events.Type{"", "a.b", "two words", "line\nbreak"} {
		if err := s.Emit(context.Background(), bad, nil); err == nil {
			t.Errorf("session event type %q accepted", bad)
		}
	}
	if err := s.Emit(context.Background(), events.TypeResult, nil); err == nil {
		t.Fatal("a lifecycle type was accepted as a session event")
	}
	if err := s.Emit(context.Background(), "x", make(chan int)); err == nil {
		t.Fatal("an unmarshalable body was accepted")
	}
	got := inline.Of("")
	if len(got) != 3 || got[2].Seq != 3 || got[0].Type != "groups" || string(got[1].Data) != `{"active":["files"],"n":1}` {
		t.Fatalf("inline observer got %+v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tk.Close(ctx); err != nil { // delivers what the async observer has queued
		t.Fatal(err)
	}
	if len(async.Of("")) != 3 {
		t.Fatalf("async observer got %d session events", len(async.Of("")))
	}
}

// gate is an inline observer that declines progress until opened.
type gate struct {
	testutil.Recorder
	open atomic.Bool
}

func (g *gate) AcceptProgress() bool { return g.open.Load() }

// TestProgressGate: when every observer has AcceptProgress and all decline,
// the progress event is not built; sequence numbers stay gap-free and the
// next progress event that is built counts the drop in Progress.Dropped. An
// observer that is not a gate gets every progress event.
func TestProgressGate(t *testing.T) {
	for _, withOther := range []bool{false, true} {
		g, other := &gate{}, &testutil.Recorder{}
		opts := []toolkit.Option{toolkit.WithInlineObserver(g)}
		if withOther {
			opts = append(opts, toolkit.WithInlineObserver(other))
		}
		tk := testutil.Kit(t, opts...)
		testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "p"}, func(ctx context.Context, _ none) (string, error) {
			stream.From(ctx).Progress("declined", 0.5)
			g.open.Store(true)
			stream.From(ctx).Progress("accepted", 1)
			return "ok", nil
		}))
		testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("1", "p", ``)})
		var progress []string
		var seqs, dropped []uint64
		for _, ev := range g.Of("1") {
			seqs = append(seqs, ev.Seq)
			if ev.Type == events.TypeProgress {
				progress = append(progress, ev.Progress.Message)
				dropped = append(dropped, ev.Progress.Dropped)
			}
		}
		if !withOther {
			if !slices.Equal(progress, []string{"accepted"}) || !slices.Equal(seqs, []uint64{1, 2, 3, 4}) || !slices.Equal(dropped, []uint64{1}) {
				t.Errorf("only gates: progress %v, seqs %v, dropped %v; want [accepted], [1 2 3 4], [1]", progress, seqs, dropped)
			}
			continue
		}
		if !slices.Equal(dropped, []uint64{0, 0}) {
			t.Errorf("with another observer: dropped %v, want none", dropped)
		}
		if !slices.Equal(progress, []string{"declined", "accepted"}) || !slices.Equal(seqs, []uint64{1, 2, 3, 4, 5}) {
			t.Errorf("with another observer: progress %v, seqs %v; want both, [1 2 3 4 5]", progress, seqs)
		}
		if n := len(other.Of("1")); n != 5 {
			t.Errorf("the other observer saw %d events, want 5", n)
		}
	}
}

// TestObserverToldOfItsDrops: progress an asynchronous observer's queue
// could not take is told to that observer in the call's next progress event
// it gets (Progress.Dropped), so what it saw plus what it was told adds up
// to what the tool reported; another observer, which dropped nothing, is
// told nothing (events are shared: the count goes on a copy).
func TestObserverToldOfItsDrops(t *testing.T) {
	unblock := make(chan struct{})
	var slowSeen, slowTold, fastSeen, fastTold atomic.Int64
	slow := toolkit.ObserverFunc(func(ev *events.Event) {
		<-unblock
		if ev.Type == events.TypeProgress {
			slowSeen.Add(1)
			slowTold.Add(int64(ev.Progress.Dropped))
		}
	})
	fast := toolkit.ObserverFunc(func(ev *events.Event) {
		if ev.Type == events.TypeProgress {
			fastSeen.Add(1)
			fastTold.Add(int64(ev.Progress.Dropped))
		}
	})
	const queue, burst = 8, 100
	tk := testutil.Kit(t, toolkit.WithObserver(slow), toolkit.WithInlineObserver(fast), toolkit.WithObserverQueue(queue))
	burstDone, last := make(chan struct{}), make(chan struct{})
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "chatty"}, func(ctx context.Context, _ none) (string, error) {
		em := stream.From(ctx)
		for i := range burst {
			em.Step("item", i, burst+1)
		}
		close(burstDone)
		<-last // the slow observer has caught up: this one has room
		em.Step("last", burst, burst+1)
		return "done", nil
	}))
	run := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("1", "chatty", ``)})
	testutil.WaitFor(t, burstDone, "the burst")
	close(unblock)
	// Every progress event of the burst was either delivered or dropped.
	for slowSeen.Load()+int64(tk.Stats().DroppedProgress) < burst {
		time.Sleep(time.Millisecond)
	}
	close(last)
	run.Wait()
	dropped := int64(tk.Stats().DroppedProgress)
	if dropped == 0 || slowTold.Load() != dropped || slowSeen.Load()+slowTold.Load() != burst+1 {
		t.Fatalf("slow observer: saw %d progress events and was told of %d drops (%d dropped), want %d in all",
			slowSeen.Load(), slowTold.Load(), dropped, burst+1)
	}
	if fastSeen.Load() != burst+1 || fastTold.Load() != 0 {
		t.Fatalf("fast observer: saw %d, told of %d drops", fastSeen.Load(), fastTold.Load())
	}
}

// Observed follows the observers a session event would reach, its
// toolkit's and (for a derived toolkit) its parent's.
func TestSessionObserved(t *testing.T) {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	sess, _ := tk.Session("s")
	if sess.Observed() {
		t.Fatal("observed without observers")
	}
	remove := tk.ObserveInline(toolkit.ObserverFunc(func(*events.Event) {}))
	if !sess.Observed() {
		t.Fatal("not observed with an inline observer")
	}
	child := tk.Derive()
	csess, _ := child.Session("c")
	if !csess.Observed() {
		t.Fatal("a derived toolkit's session does not see its parent's observer")
	}
	remove()
	if sess.Observed() || csess.Observed() {
		t.Fatal("still observed after the observer was removed")
	}
}
