package toolkit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

type none struct{}

// TestParallelGroupRunsConcurrently proves overlap without sleeps: each call
// waits until all three have started, which only happens if they run at the
// same time.
func TestParallelGroupRunsConcurrently(t *testing.T) {
	tk := testutil.Kit(t)
	var wg sync.WaitGroup
	wg.Add(3)
	allIn := make(chan struct{})
	go func() { wg.Wait(); close(allIn) }()
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "meet", ConcurrencySafe: true}, func(ctx context.Context, _ none) (string, error) {
		wg.Done()
		select {
		case <-allIn:
			return "met", nil
		case <-ctx.Done():
			return "", errors.New("the other calls never started alongside this one")
		}
	}))
	rs := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{
		testutil.Call("a", "meet", `{}`), testutil.Call("b", "meet", `{}`), testutil.Call("c", "meet", `{}`),
	})
	for _, r := range rs {
		if r.State != events.StateSuccess || r.Text() != "met" {
			t.Errorf("%s: %s %q", r.Call.ID, r.State, r.Text())
		}
	}
}

// TestSerialCallsRunAlone checks the partition: safe calls overlap with each
// other but never with an unsafe call, and unsafe calls keep their order.
func TestSerialCallsRunAlone(t *testing.T) {
	tk := testutil.Kit(t)
	var active atomic.Int32
	var mu sync.Mutex
	var log []string
	record := func(s string) { mu.Lock(); log = append(log, s); mu.Unlock() }
	safe := testutil.Tool(t, toolkit.Spec{Name: "safe", ConcurrencySafe: true}, func(ctx context.Context, in struct {
		N string `json:"n"`
	}) (string, error) {
		active.Add(1)
		defer active.Add(-1)
		record("safe" + in.N)
		return "", nil
	})
	unsafe := testutil.Tool(t, toolkit.Spec{Name: "unsafe"}, func(ctx context.Context, in struct {
		N string `json:"n"`
	}) (string, error) {
		if n := active.Add(1); n != 1 {
			t.Errorf("unsafe call %s ran alongside %d other calls", in.N, n-1)
		}
		defer active.Add(-1)
		record("unsafe" + in.N)
		return "", nil
	})
	testutil.Add(t, tk, safe, unsafe)
	rs := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{
		testutil.Call("1", "safe", `{"n":"1"}`), testutil.Call("2", "safe", `{"n":"2"}`),
		testutil.Call("3", "unsafe", `{"n":"3"}`), testutil.Call("4", "unsafe", `{"n":"4"}`),
		testutil.Call("5", "safe", `{"n":"5"}`), testutil.Call("6", "safe", `{"n":"6"}`),
	})
	for _, r := range rs {
		if r.State != events.StateSuccess {
			t.Fatalf("%s: %s %v", r.Call.ID, r.State, r.Err)
		}
	}
	// The unsafe calls are at positions 2 and 3 of the log, in order; the
	// safe pairs are before and after them in any order.
	if len(log) != 6 || log[2] != "unsafe3" || log[3] != "unsafe4" {
		t.Fatalf("execution order %v", log)
	}
	if !slices.Contains(log[:2], "safe1") || !slices.Contains(log[:2], "safe2") || !slices.Contains(log[4:], "safe5") {
		t.Fatalf("execution order %v", log)
	}
}

func TestParallelismCap(t *testing.T) {
	tk := testutil.Kit(t, toolkit.WithMaxParallel(2))
	var active, peak atomic.Int32
	release := make(chan struct{})
	twoIn := make(chan struct{})
	var once sync.Once
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "w", ConcurrencySafe: true}, func(ctx context.Context, _ none) (string, error) {
		n := active.Add(1)
		defer active.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if n == 2 {
			once.Do(func() { close(twoIn) })
		}
		<-release
		return "", nil
	}))
	run := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{
		testutil.Call("1", "w", ``), testutil.Call("2", "w", ``), testutil.Call("3", "w", ``), testutil.Call("4", "w", ``), testutil.Call("5", "w", ``),
	})
	testutil.WaitFor(t, twoIn, "two calls running")
	// The other three must not start while two run. Nothing tells when an
	// engine that ignored the cap would have started them: watch for a
	// while (a window of sensitivity only: with the cap kept, no wait
	// long or short makes the test fail). Released at once, a third
	// runner was caught in 8 of 300 runs.
	for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end) && active.Load() <= 2; {
		time.Sleep(time.Millisecond)
	}
	close(release)
	for _, r := range run.Wait() {
		if r.State != events.StateSuccess {
			t.Errorf("%s: %s", r.Call.ID, r.State)
		}
	}
	if got := peak.Load(); got != 2 {
		t.Fatalf("peak concurrency %d, want 2", got)
	}
}

// TestCompletionAndCallOrder releases calls in reverse order: Results yields
// them as they finish, Wait in call order.
func TestCompletionAndCallOrder(t *testing.T) {
	tk := testutil.Kit(t)
	gates := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{}), "c": make(chan struct{})}
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "gate", ConcurrencySafe: true}, func(ctx context.Context, in struct {
		G string `json:"g"`
	}) (string, error) {
		<-gates[in.G]
		return "done " + in.G, nil
	}))
	run := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{
		testutil.Call("a", "gate", `{"g":"a"}`), testutil.Call("b", "gate", `{"g":"b"}`), testutil.Call("c", "gate", `{"g":"c"}`),
	})
	var completion []string
	next := map[string]string{"c": "b", "b": "a"}
	close(gates["c"])
	for r := range run.Results() {
		completion = append(completion, r.Call.ID)
		if g, ok := next[r.Call.ID]; ok {
			close(gates[g]) // the next gate opens only once this result is out
		}
	}
	if want := []string{"c", "b", "a"}; !slices.Equal(completion, want) {
		t.Fatalf("completion order %v, want %v", completion, want)
	}
	var ordered []string
	for _, r := range run.Wait() {
		ordered = append(ordered, r.Text())
	}
	if want := []string{"done a", "done b", "done c"}; !slices.Equal(ordered, want) {
		t.Fatalf("call order %v, want %v", ordered, want)
	}
}

// TestResultCallbackBeforeAggregate: OnResult for a finished call fires while
// another call of the batch is still running.
func TestResultCallbackBeforeAggregate(t *testing.T) {
	fastDone := make(chan struct{})
	tk := testutil.Kit(t, toolkit.WithObserver(toolkit.Callbacks{OnResult: func(c toolkit.CallInfo, r events.Result) {
		if c.CallID == "fast" {
			close(fastDone)
		}
	}}))
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "fast", ConcurrencySafe: true}, func(ctx context.Context, _ none) (string, error) {
		return "quick", nil
	}), testutil.Tool(t, toolkit.Spec{Name: "slow", ConcurrencySafe: true}, func(ctx context.Context, _ none) (string, error) {
		select {
		case <-fastDone: // only reachable if the callback came first
			return "after", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}))
	rs := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("slow", "slow", ``), testutil.Call("fast", "fast", ``)})
	if rs[0].State != events.StateSuccess || rs[0].Text() != "after" {
		t.Fatalf("slow call: %s %q %v", rs[0].State, rs[0].Text(), rs[0].Err)
	}
}

// TestDeltasEqualResult covers the central invariant for tools that stream
// and return, mix text and JSON, report progress, and fail mid-stream.
func TestDeltasEqualResult(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithObserver(rec))
	testutil.Add(t, tk,
		testutil.Tool(t, toolkit.Spec{Name: "streamer", ConcurrencySafe: true}, func(ctx context.Context, _ none) (string, error) {
			em := stream.From(ctx)
			em.Progress("PROGRESS-ONLY starting", 0)
			em.Text("line 1\n")
			em.Progress("PROGRESS-ONLY half", 0.5)
			fmt.Fprintf(em, "line %d\n", 2)
			if err := em.Data(map[string]int{"count": 2}); err != nil {
				return "", err
			}
			em.Report("PROGRESS-ONLY data", 1, map[string]int{"files": 9})
			return "tail", nil
		}),
		testutil.Tool(t, toolkit.Spec{Name: "failer", ConcurrencySafe: true}, func(ctx context.Context, _ none) (string, error) {
			stream.From(ctx).Text("partial output\n")
			stream.From(ctx).Progress("PROGRESS-ONLY", -1)
			return "ignored", errors.New("disk full")
		}),
		testutil.Tool(t, toolkit.Spec{Name: "silent", ConcurrencySafe: true}, func(ctx context.Context, _ none) (struct{}, error) {
			stream.From(ctx).Text("only streamed")
			return struct{}{}, nil
		}),
	)
	rs := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{
		testutil.Call("s1", "streamer", ``), testutil.Call("f1", "failer", ``), testutil.Call("q1", "silent", ``),
	})
	want := map[string]string{
		"s1": "line 1\nline 2\n{\"count\":2}\ntail", // a value is set off by a newline
		"f1": "partial output\nError: disk full",
		"q1": "only streamed",
	}
	for _, r := range rs {
		evs := rec.Of(r.Call.ID)
		got := testutil.Deltas(evs)
		if !events.EqualContent(got, r.Content) {
			t.Errorf("%s: deltas %+v != result %+v", r.Call.ID, got, r.Content)
		}
		if r.Text() != want[r.Call.ID] {
			t.Errorf("%s: result %q, want %q", r.Call.ID, r.Text(), want[r.Call.ID])
		}
		if strings.Contains(r.Text(), "PROGRESS-ONLY") {
			t.Errorf("%s: progress leaked into the result: %q", r.Call.ID, r.Text())
		}
		last := evs[len(evs)-1]
		if last.Type != events.TypeResult || !events.EqualContent(last.Result.Content, r.Content) {
			t.Errorf("%s: last event %s does not carry the result", r.Call.ID, last.Type)
		}
	}
	// Per-call sequence numbers are gap-free from 1, start first, result last.
	for _, id := range []string{"s1", "f1", "q1"} {
		evs := rec.Of(id)
		for i, ev := range evs {
			if ev.Seq != uint64(i+1) {
				t.Fatalf("%s: event %d has seq %d", id, i, ev.Seq)
			}
		}
		if evs[0].Type != events.TypeStart {
			t.Fatalf("%s: first event %s", id, evs[0].Type)
		}
	}
	if got := testutil.Types(rec.Of("s1")); !slices.Equal(got, []events.Type{"start", "progress", "delta", "progress", "delta", "delta", "progress", "delta", "result"}) {
		t.Fatalf("streamer events %v", got)
	}
	if rs[1].State != events.StateError || rs[1].Err == nil || rs[1].Err.Error() != "disk full" {
		t.Fatalf("failer: %s %v", rs[1].State, rs[1].Err)
	}
}

func TestPanicsBecomeErrorResults(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "boom", ConcurrencySafe: true}, func(ctx context.Context, _ none) (string, error) {
		var m map[string]int
		m["x"] = 1 // nil map write
		return "", nil
	}), testutil.Tool(t, toolkit.Spec{Name: "ok", ConcurrencySafe: true}, func(ctx context.Context, _ none) (string, error) {
		return "fine", nil
	}))
	rs := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("1", "boom", ``), testutil.Call("2", "ok", ``)})
	var pe *toolkit.PanicError
	if rs[0].State != events.StateError || !errors.As(rs[0].Err, &pe) || !isErr[*toolkit.PanicError](rs[0].Err) {
		t.Fatalf("panic result: %s %v", rs[0].State, rs[0].Err)
	}
	if len(pe.Stack) == 0 || !strings.Contains(rs[0].Text(), `tool "boom" panicked`) {
		t.Fatalf("panic message %q", rs[0].Text())
	}
	if rs[1].State != events.StateSuccess || rs[1].Text() != "fine" {
		t.Fatalf("neighbour: %s %q", rs[1].State, rs[1].Text())
	}
}

func TestUnknownToolSuggestsClosest(t *testing.T) {
	tk := testutil.Kit(t)
	for _, name := range []string{"search_text", "count_lines", "hash_files"} {
		testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: name}, func(ctx context.Context, _ none) (string, error) { return "", nil }))
	}
	rs := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("1", "serch_text", ``), testutil.Call("2", "count", ``), testutil.Call("3", "zzz", ``)})
	var ue *toolkit.UnknownToolError
	if !errors.As(rs[0].Err, &ue) || !isErr[*toolkit.UnknownToolError](rs[0].Err) {
		t.Fatalf("got %v", rs[0].Err)
	}
	if !slices.Equal(ue.Suggestions, []string{"search_text"}) {
		t.Fatalf("suggestions %v", ue.Suggestions)
	}
	if want := `Error: unknown tool "serch_text"; did you mean "search_text"? Available tools: search_text, count_lines, hash_files`; rs[0].Text() != want {
		t.Fatalf("message\n%q\nwant\n%q", rs[0].Text(), want)
	}
	if !strings.Contains(rs[1].Text(), `did you mean "count_lines"?`) {
		t.Fatalf("substring suggestion missing: %q", rs[1].Text())
	}
	if strings.Contains(rs[2].Text(), "did you mean") || !strings.Contains(rs[2].Text(), "Available tools") {
		t.Fatalf("no-suggestion message %q", rs[2].Text())
	}
}

func TestCallIDs(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "echo", ConcurrencySafe: true}, func(ctx context.Context, _ none) (string, error) {
		info, _ := toolkit.CallInfoFrom(ctx)
		return info.CallID, nil
	}))
	rs := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{
		testutil.Call("", "echo", ``), testutil.Call("x", "echo", ``), testutil.Call("x", "echo", ``), testutil.Call("bad\nid", "echo", ``),
	})
	if !strings.HasPrefix(rs[0].Call.ID, "call_") || rs[0].Text() != rs[0].Call.ID {
		t.Fatalf("generated id %q, handler saw %q", rs[0].Call.ID, rs[0].Text())
	}
	if rs[1].State != events.StateSuccess {
		t.Fatalf("first x: %s", rs[1].State)
	}
	if rs[2].State != events.StateError || !errors.Is(rs[2].Err, toolkit.ErrInvalidCall) || !strings.Contains(rs[2].Text(), "duplicate call id") {
		t.Fatalf("duplicate: %s %q", rs[2].State, rs[2].Text())
	}
	if rs[3].State != events.StateError || !strings.Contains(rs[3].Text(), "control characters") {
		t.Fatalf("bad id: %s %q", rs[3].State, rs[3].Text())
	}
}

// TestTimeoutCountsSlotWait: with one slot taken by a call that never ends on
// its own, the next call times out in the queue and never starts.
func TestTimeoutCountsSlotWait(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithMaxParallel(1), toolkit.WithObserver(rec))
	release := make(chan struct{})
	testutil.Add(t, tk,
		testutil.Tool(t, toolkit.Spec{Name: "hog", ConcurrencySafe: true, Timeout: time.Minute}, func(ctx context.Context, _ none) (string, error) {
			<-release
			return "hogged", nil
		}),
		testutil.Tool(t, toolkit.Spec{Name: "quick", ConcurrencySafe: true, Timeout: 50 * time.Millisecond}, func(ctx context.Context, _ none) (string, error) {
			t.Error("quick ran although its deadline passed while it waited for a slot")
			return "", nil
		}),
	)
	run := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("h", "hog", ``), testutil.Call("q", "quick", ``)})
	for r := range run.Results() {
		if r.Call.ID == "q" {
			if r.State != events.StateTimeout || !errors.Is(r.Err, toolkit.ErrTimeout) || !strings.Contains(r.Text(), "waiting for a free slot") {
				t.Errorf("queued call: %s %q", r.State, r.Text())
			}
			if !r.Started.IsZero() {
				t.Error("queued call reports a start time")
			}
			close(release)
		}
	}
	if got := testutil.Types(rec.Of("q")); !slices.Equal(got, []events.Type{"delta", "result"}) {
		t.Fatalf("queued call events %v (a call that never started has no start event)", got)
	}
	if rs := run.Wait(); rs[0].State != events.StateSuccess {
		t.Fatalf("hog: %s", rs[0].State)
	}
}

func TestTimeoutWhileRunning(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "slow", Timeout: 20 * time.Millisecond}, func(ctx context.Context, _ none) (string, error) {
		stream.From(ctx).Text("half done\n")
		<-ctx.Done()
		return "", fmt.Errorf("stopped after 3 files: %w", ctx.Err())
	}))
	r := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("1", "slow", ``)})[0]
	if r.State != events.StateTimeout || !errors.Is(r.Err, toolkit.ErrTimeout) || !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Fatalf("%s %v", r.State, r.Err)
	}
	if want := "half done\nError: tool \"slow\" timed out after 20ms: stopped after 3 files: context deadline exceeded"; r.Text() != want {
		t.Fatalf("text %q, want %q", r.Text(), want)
	}
}

// TestTimeoutWithHandlersOwnError: a handler that answers its deadline
// with an error of its own (not wrapping ctx.Err()) still gives a timeout
// whose cause matches context.DeadlineExceeded, and keeps its error.
func TestTimeoutWithHandlersOwnError(t *testing.T) {
	errClosed := errors.New("use of closed connection")
	tk := testutil.Kit(t)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "net", Timeout: 20 * time.Millisecond}, func(ctx context.Context, _ none) (string, error) {
		<-ctx.Done()
		return "", errClosed
	}))
	r := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("1", "net", ``)})[0]
	if r.State != events.StateTimeout || !errors.Is(r.Err, toolkit.ErrTimeout) || !errors.Is(r.Err, context.DeadlineExceeded) || !errors.Is(r.Err, errClosed) {
		t.Fatalf("%s %v", r.State, r.Err)
	}
	if want := `Error: tool "net" timed out after 20ms: use of closed connection`; r.Text() != want {
		t.Fatalf("text %q, want %q", r.Text(), want)
	}
}

// TestHandlerIgnoringCancellation: the call is reported after the grace
// period without waiting for the handler, whose late writes are refused.
func TestHandlerIgnoringCancellation(t *testing.T) {
	tk := testutil.Kit(t, toolkit.WithCancelGrace(10*time.Millisecond))
	release := make(chan struct{})
	lateWrite := make(chan error, 1)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "stubborn", Timeout: 10 * time.Millisecond}, func(ctx context.Context, _ none) (string, error) {
		<-release // ignores ctx
		lateWrite <- stream.From(ctx).Text("too late")
		return "too late", nil
	}), testutil.Tool(t, toolkit.Spec{Name: "next"}, func(ctx context.Context, _ none) (string, error) { return "next ran", nil }))
	// Start: the run finishes without the stuck handler, and the call after
	// it still runs (a new driver takes over from the stuck one).
	run := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("1", "stubborn", ``), testutil.Call("2", "next", ``)})
	rs := run.Wait()
	if rs[0].State != events.StateTimeout || rs[0].Text() != `Error: tool "stubborn" timed out after 10ms` {
		t.Fatalf("%s %q", rs[0].State, rs[0].Text())
	}
	if rs[1].State != events.StateSuccess || rs[1].Text() != "next ran" {
		t.Fatalf("call after the stuck one: %s %q", rs[1].State, rs[1].Text())
	}
	close(release)
	if err := <-lateWrite; !errors.Is(err, stream.ErrCallFinished) {
		t.Fatalf("late write: %v", err)
	}
}

// TestRunWithStuckHandler: Run executes a call on the calling goroutine, so
// it returns only once a handler that ignores cancellation returns; the
// result was final (and observed) before that, and the rest of the batch
// went on without it.
func TestRunWithStuckHandler(t *testing.T) {
	final := make(chan struct{})
	nextRan := make(chan struct{})
	tk := testutil.Kit(t, toolkit.WithCancelGrace(5*time.Millisecond), toolkit.WithObserver(toolkit.Callbacks{
		OnResult: func(c toolkit.CallInfo, r events.Result) {
			if c.CallID == "1" && r.State == events.StateTimeout {
				close(final)
			}
		},
	}))
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "stubborn", Timeout: 5 * time.Millisecond}, func(ctx context.Context, _ none) (string, error) {
		<-nextRan // ignores ctx; returns only once the next call ran
		return "late", nil
	}), testutil.Tool(t, toolkit.Spec{Name: "next"}, func(ctx context.Context, _ none) (string, error) {
		close(nextRan)
		return "next ran", nil
	}))
	// The calls are serial: "next" can only run if the run went on without
	// the stuck handler, on another goroutine.
	rs := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("1", "stubborn", ``), testutil.Call("2", "next", ``)})
	testutil.WaitFor(t, final, "the timeout result")
	if rs[0].State != events.StateTimeout || rs[1].Text() != "next ran" {
		t.Fatalf("%s / %s %q", rs[0].State, rs[1].State, rs[1].Text())
	}
}

func TestCancellation(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithObserver(rec))
	started := make(chan struct{})
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "wait"}, func(ctx context.Context, _ none) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	}), testutil.Tool(t, toolkit.Spec{Name: "never"}, func(ctx context.Context, _ none) (string, error) {
		t.Error("a call after the cancelled one ran")
		return "", nil
	}))
	ctx, cancel := context.WithCancel(context.Background())
	run := testutil.Session(t, tk, "s").Start(ctx, []toolkit.Call{testutil.Call("w", "wait", ``), testutil.Call("n", "never", ``)})
	testutil.WaitFor(t, started, "first call")
	cancel()
	rs := run.Wait()
	for _, r := range rs {
		if r.State != events.StateInterrupted || !errors.Is(r.Err, toolkit.ErrInterrupted) || !errors.Is(r.Err, context.Canceled) {
			t.Errorf("%s: %s %v", r.Call.ID, r.State, r.Err)
		}
	}
	// The handler returned the context's error: the model reads the cause once.
	if got, want := rs[0].Text(), `Error: tool "wait" was interrupted (context canceled)`; got != want {
		t.Errorf("interrupted call reads %q, want %q", got, want)
	}
	if !strings.Contains(rs[1].Text(), "was not run") || !rs[1].Started.IsZero() {
		t.Errorf("unstarted call: %q", rs[1].Text())
	}
	if got := testutil.Types(rec.Of("n")); !slices.Equal(got, []events.Type{"delta", "result"}) {
		t.Errorf("unstarted call events %v", got)
	}
}

// TestContextValues: caller values reach the handler without being in the
// schema.
func TestContextValues(t *testing.T) {
	type tenant struct{ Name string }
	tk := testutil.Kit(t)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "whoami"}, func(ctx context.Context, _ none) (string, error) {
		ten, ok := toolkit.Value[tenant](ctx)
		if !ok {
			return "", errors.New("no tenant")
		}
		info, _ := toolkit.CallInfoFrom(ctx)
		return info.Session + "/" + toolkit.User(ctx) + "/" + ten.Name, nil
	}))
	ctx := toolkit.WithValue(toolkit.WithUser(context.Background(), "ada"), tenant{"acme"})
	r := testutil.Session(t, tk, "conv-7").Run(ctx, []toolkit.Call{testutil.Call("1", "whoami", ``)})[0]
	if r.Text() != "conv-7/ada/acme" {
		t.Fatalf("got %q (%v)", r.Text(), r.Err)
	}
	if strings.Contains(string(tk.Definitions()[0].Parameters), "ada") {
		t.Fatal("context value in schema")
	}
}

func TestOutputKinds(t *testing.T) {
	type point struct {
		X int `json:"x"`
	}
	tk := testutil.Kit(t)
	testutil.Add(t, tk,
		testutil.Tool(t, toolkit.Spec{Name: "js"}, func(ctx context.Context, _ none) (point, error) { return point{3}, nil }),
		testutil.Tool(t, toolkit.Spec{Name: "parts"}, func(ctx context.Context, _ none) ([]events.Part, error) {
			return []events.Part{events.Text("see "), events.Binary("image/png", []byte{1, 2})}, nil
		}),
		testutil.Tool(t, toolkit.Spec{Name: "bin"}, func(ctx context.Context, _ none) ([]byte, error) { return []byte("raw"), nil }),
		testutil.Tool(t, toolkit.Spec{Name: "dyn"}, func(ctx context.Context, _ none) (any, error) { return "plain", nil }),
		testutil.Tool(t, toolkit.Spec{Name: "nilptr"}, func(ctx context.Context, _ none) (*point, error) { return nil, nil }),
	)
	rs := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{
		testutil.Call("1", "js", ``), testutil.Call("2", "parts", ``), testutil.Call("3", "bin", ``), testutil.Call("4", "dyn", ``), testutil.Call("5", "nilptr", ``),
	})
	if c := rs[0].Content; len(c) != 1 || c[0].Type != events.PartJSON || string(c[0].JSON) != `{"x":3}` {
		t.Errorf("json: %+v", c)
	}
	if c := rs[1].Content; len(c) != 2 || c[1].MediaType != "image/png" || rs[1].Text() != "see \n[binary image/png, 2 bytes]" {
		t.Errorf("parts: %+v", c)
	}
	if c := rs[2].Content; len(c) != 1 || c[0].Type != events.PartBinary || string(c[0].Data) != "raw" {
		t.Errorf("bin: %+v", c)
	}
	if rs[3].Text() != "plain" {
		t.Errorf("dyn: %q", rs[3].Text())
	}
	if len(rs[4].Content) != 0 || rs[4].State != events.StateSuccess {
		t.Errorf("nil pointer: %+v", rs[4])
	}
}

func TestMetaReachesResultNotModel(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithObserver(rec))
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "m"}, func(ctx context.Context, _ none) (string, error) {
		stream.From(ctx).SetMeta("files", 12)
		return "ok", nil
	}))
	r := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("1", "m", ``)})[0]
	if r.Meta["files"] != 12 || r.Text() != "ok" {
		t.Fatalf("meta %v text %q", r.Meta, r.Text())
	}
	evs := rec.Of("1")
	if evs[len(evs)-1].Result.Meta["files"] != 12 {
		t.Fatal("meta missing from the result event")
	}
}

func TestEmptyBatch(t *testing.T) {
	tk := testutil.Kit(t)
	run := testutil.Session(t, tk, "s").Start(context.Background(), nil)
	testutil.WaitFor(t, run.Done(), "empty run")
	if rs := run.Wait(); len(rs) != 0 {
		t.Fatalf("%d results", len(rs))
	}
}

func TestCloseInterruptsRuns(t *testing.T) {
	tk := toolkit.New()
	started := make(chan struct{})
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "wait"}, func(ctx context.Context, _ none) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	}))
	s := testutil.Session(t, tk, "s")
	run := s.Start(context.Background(), []toolkit.Call{testutil.Call("1", "wait", ``)})
	testutil.WaitFor(t, started, "call start")
	if err := tk.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := run.Wait()[0]; r.State != events.StateInterrupted {
		t.Fatalf("%s", r.State)
	}
	after := s.Run(context.Background(), []toolkit.Call{testutil.Call("2", "wait", ``)})
	if after[0].State != events.StateInterrupted {
		t.Fatalf("run after Close: %s", after[0].State)
	}
	if _, err := tk.Session("new"); !errors.Is(err, toolkit.ErrClosed) {
		t.Fatalf("Session after Close: %v", err)
	}
}

func TestSessionIDs(t *testing.T) {
	tk := testutil.Kit(t)
	for _, bad := range []string{"", strings.Repeat("x", 257), "a\x00b", "tab\there", string([]byte{0xff, 0xfe})} {
		if _, err := tk.Session(bad); !errors.Is(err, toolkit.ErrInvalidSession) {
			t.Errorf("Session(%q): %v", bad, err)
		}
	}
	for _, good := range []string{"a", "a.b>*", "日本語 session", strings.Repeat("x", 256)} {
		if _, err := tk.Session(good); err != nil {
			t.Errorf("Session(%q): %v", good, err)
		}
	}
	a, _ := tk.Session("same")
	b, _ := tk.Session("same")
	if a != b {
		t.Fatal("Session does not return the existing session")
	}
}

// TestLargeBatch: a batch far above the parallelism cap keeps call order,
// catches a duplicate id among many, and runs every other call once.
func TestLargeBatch(t *testing.T) {
	tk := testutil.Kit(t, toolkit.WithMaxParallel(4))
	var ran atomic.Int32
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "n", ConcurrencySafe: true}, func(ctx context.Context, in struct {
		I int `json:"i"`
	}) (int, error) {
		ran.Add(1)
		return in.I, nil
	}))
	calls := make([]toolkit.Call, 500)
	for i := range calls {
		calls[i] = testutil.Call(fmt.Sprintf("c%d", i), "n", fmt.Sprintf(`{"i":%d}`, i))
	}
	calls[400].ID = "c7"
	rs := testutil.Session(t, tk, "s").Run(context.Background(), calls)
	for i, r := range rs {
		if i == 400 {
			if !errors.Is(r.Err, toolkit.ErrInvalidCall) {
				t.Fatalf("duplicate id accepted: %s", r.State)
			}
			continue
		}
		if r.State != events.StateSuccess || r.Text() != fmt.Sprint(i) {
			t.Fatalf("call %d: %s %q", i, r.State, r.Text())
		}
	}
	if ran.Load() != 499 {
		t.Fatalf("%d handlers ran", ran.Load())
	}
}

// TestDuplicateIDsInBatchesOfEverySize: a reused id is caught whatever the
// batch's size (small batches are scanned, larger ones hashed), and only the
// later calls that reuse it fail.
func TestDuplicateIDsInBatchesOfEverySize(t *testing.T) {
	tk := testutil.Kit(t, toolkit.WithMaxParallel(64))
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "n", ConcurrencySafe: true}, func(ctx context.Context, _ none) (string, error) { return "", nil }))
	s := testutil.Session(t, tk, "s")
	for _, n := range []int{2, 16, 17, 100, 256, 257, 600} {
		calls := make([]toolkit.Call, n)
		for i := range calls {
			calls[i] = testutil.Call(fmt.Sprintf("id-%d", i), "n", `{}`)
		}
		dups := map[int]bool{n - 1: true}
		calls[n-1].ID = calls[0].ID
		if n > 3 {
			calls[n/2].ID = calls[1].ID
			dups[n/2] = true
		}
		for i, r := range s.Run(context.Background(), calls) {
			if dup := errors.Is(r.Err, toolkit.ErrInvalidCall); dup != dups[i] {
				t.Fatalf("batch of %d, call %d (%s): refused as duplicate %v, want %v", n, i, r.Call.ID, dup, dups[i])
			}
		}
	}
}
