package toolkit_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
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

// Tests of engine paths no other test reached, through the public API.

// TestRetryAttemptsWriteOnlyTheirOwn: an interceptor that runs the tool
// again gives the second attempt an emitter of its own: its progress,
// deltas and metadata reach the call; what the first attempt's emitter
// writes once the second began is refused (ErrCallFinished for a delta)
// and reaches no observer.
func TestRetryAttemptsWriteOnlyTheirOwn(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(rec))
	var first atomic.Pointer[stream.Emitter]
	staleErr := make(chan error, 1)
	var n atomic.Int32
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "flaky"}, func(ctx context.Context, _ none) (string, error) {
		em := stream.From(ctx)
		try := n.Add(1)
		em.Progress(fmt.Sprintf("try %d", try), -1)
		em.SetMeta("try", int(try))
		if try == 1 {
			first.Store(em)
			_ = em.Text("half of try 1")
			return "", errors.New("flaky")
		}
		old := first.Load()
		old.Progress("stale", -1)
		old.SetMeta("stale", true)
		staleErr <- old.Text("stale text")
		_ = em.Text("try 2 says ")
		return "ok", nil
	}))
	if err := tk.Use(toolkit.Interceptor{Name: "retry", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		if out := next(ctx, inv); out.State == events.StateSuccess {
			return out
		}
		return next(ctx, inv)
	}}); err != nil {
		t.Fatal(err)
	}
	r := testutil.Run(t, tk, "s", testutil.Call("1", "flaky", `{}`))[0]
	if r.State != events.StateSuccess || r.Text() != "try 2 says ok" {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	if err := <-staleErr; !errors.Is(err, stream.ErrCallFinished) {
		t.Errorf("a delta from the first attempt's emitter: %v, want ErrCallFinished", err)
	}
	if r.Meta["try"] != 2 || r.Meta["stale"] != nil {
		t.Errorf("meta %v: want try 2 and nothing from the stale emitter", r.Meta)
	}
	var progress []string
	for _, ev := range rec.OfType(events.TypeProgress) {
		progress = append(progress, ev.Progress.Message)
	}
	if !slices.Equal(progress, []string{"try 1", "try 2"}) {
		t.Errorf("progress %q", progress)
	}
	testutil.CheckDeltasAddUp(t, rec, r)
	rec.Check(t)
}

// TestObserverRemovedMidBatch: an asynchronous observer removed while a
// batch it was attached to runs refuses the batch's later events, and the
// batch does not wait for it: Wait returns at once, not after the flush
// timeout (a minute here).
func TestObserverRemovedMidBatch(t *testing.T) {
	var seen atomic.Int32
	tk := testutil.Kit(t, toolkit.WithFlushTimeout(time.Minute))
	remove := tk.Observe(toolkit.ObserverFunc(func(*events.Event) { seen.Add(1) }))
	entered, release := make(chan struct{}), make(chan struct{})
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "slow"}, func(context.Context, none) (string, error) {
		close(entered)
		<-release
		return "done", nil
	}))
	b := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("1", "slow", `{}`)})
	testutil.WaitFor(t, entered, "the call to run")
	remove()
	remove() // twice is harmless
	close(release)
	select {
	case <-b.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the batch waits for an observer that was removed")
	}
	if r := b.Wait()[0]; r.State != events.StateSuccess {
		t.Errorf("%s %v", r.State, r.Err)
	}
	// Close drains every observer still attached: one that was not let go
	// of would have its result event now.
	if err := tk.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := seen.Load(); n > 1 {
		t.Errorf("the removed observer saw %d events; at most the start, before it was removed", n)
	}
}

// TestObserveAfterClose: an observer attached once the toolkit is closed
// sees nothing, its remove does nothing, and no goroutine is left.
func TestObserveAfterClose(t *testing.T) {
	t.Cleanup(leak.Check(t))
	tk := toolkit.New()
	if err := tk.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	remove := tk.Observe(toolkit.ObserverFunc(func(*events.Event) { t.Error("an observer of a closed toolkit saw an event") }))
	removeInline := tk.ObserveInline(toolkit.ObserverFunc(func(*events.Event) { t.Error("an inline observer of a closed toolkit saw an event") }))
	remove()
	removeInline()
}

// flusher is an inline observer that hands events on later (as the NATS
// publisher does) and fails its Flush.
type flusher struct {
	mu      sync.Mutex
	results int // result events seen
	flushed []int
	dl      []bool // whether each Flush had a deadline
}

func (f *flusher) Observe(ev *events.Event) {
	if ev.Type == events.TypeResult {
		f.mu.Lock()
		f.results++
		f.mu.Unlock()
	}
}

func (f *flusher) Flush(ctx context.Context) error {
	_, ok := ctx.Deadline()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushed = append(f.flushed, f.results)
	f.dl = append(f.dl, ok)
	return errors.New("the queue is stuck")
}

// TestFlusherAtBatchEnd: an inline observer that has a Flush method is flushed
// once per batch, after it saw every result event and before Wait returns,
// with a context bounded by the flush timeout; its error is logged as a
// warning and changes no result.
func TestFlusherAtBatchEnd(t *testing.T) {
	f := &flusher{}
	var log testutil.SyncBuffer
	tk := testutil.Kit(t, toolkit.WithInlineObserver(f), toolkit.WithLogger(zerolog.New(&log)))
	var ran atomic.Int32
	testutil.Add(t, tk, countTool(t, "a", &ran))
	rs := testutil.Run(t, tk, "s", testutil.Call("1", "a", `{}`), testutil.Call("2", "a", `{}`))
	for _, r := range rs {
		if r.State != events.StateSuccess {
			t.Errorf("call %s: %s %v", r.Call.ID, r.State, r.Err)
		}
	}
	f.mu.Lock()
	flushed, dl := slices.Clone(f.flushed), slices.Clone(f.dl)
	f.mu.Unlock()
	if !slices.Equal(flushed, []int{2}) || !slices.Equal(dl, []bool{true}) {
		t.Errorf("flushed after %v results (deadline %v); want once, after both", flushed, dl)
	}
	if out := log.String(); !strings.Contains(out, "did not hand the run's events on in time") || !strings.Contains(out, "the queue is stuck") {
		t.Errorf("the log does not tell the failed flush: %s", out)
	}
}

// TestCallbacksSeeEveryType: Callbacks calls the function of each event
// type, with the call's identity, in order; a missing one is skipped.
func TestCallbacksSeeEveryType(t *testing.T) {
	var mu sync.Mutex
	var got []string
	add := func(s string) {
		mu.Lock()
		got = append(got, s)
		mu.Unlock()
	}
	cb := toolkit.Callbacks{
		OnStart:    func(c toolkit.CallInfo, args []byte) { add("start " + c.CallID + " " + c.Tool + " " + string(args)) },
		OnProgress: func(c toolkit.CallInfo, p events.Progress) { add("progress " + c.CallID + " " + p.Message) },
		OnDelta:    func(c toolkit.CallInfo, d events.Part) { add("delta " + c.CallID + " " + d.Text) },
		OnSuspend:  func(c toolkit.CallInfo, reason string) { add("suspend " + c.CallID + " " + reason) },
		OnResult:   func(c toolkit.CallInfo, r events.Result) { add("result " + c.CallID + " " + string(r.State)) },
	}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(cb), toolkit.WithInlineObserver(toolkit.Callbacks{}))
	testutil.Add(t, tk, externalTool(t, toolkit.Spec{Name: "ask"}), testutil.Tool(t, toolkit.Spec{Name: "talk"}, func(ctx context.Context, _ none) (string, error) {
		stream.From(ctx).Progress("thinking", 0.5)
		return "said", nil
	}))
	s := testutil.Session(t, tk, "s")
	b := s.Start(context.Background(), []toolkit.Call{testutil.Call("1", "talk", `{}`), testutil.Call("2", "ask", `{"question":"?"}`)})
	waitSuspended(t, b)
	if err := s.Submit("2", []events.Part{events.Text("answer")}, nil); err != nil {
		t.Fatal(err)
	}
	b.Wait()
	want := []string{"start 1 talk {}", "progress 1 thinking", "delta 1 said", "result 1 success",
		`start 2 ask {"question":"?"}`, "suspend 2 external", "delta 2 answer", "result 2 success"}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, want) {
		t.Errorf("callbacks:\n got %q\nwant %q", got, want)
	}
}

// TestCallIDLimits: a call id longer than MaxCallIDLen or not valid UTF-8
// fails the call with ErrInvalidCall and a message that says what is wrong
// (the id cut short); the call never runs. An id of MaxCallIDLen bytes is
// fine.
func TestCallIDLimits(t *testing.T) {
	var ran atomic.Int32
	tk := testutil.Kit(t)
	testutil.Add(t, tk, countTool(t, "a", &ran))
	long := strings.Repeat("x", toolkit.MaxCallIDLen+1)
	rs := testutil.Run(t, tk, "s", testutil.Call(long, "a", `{}`), testutil.Call("bad\xff", "a", `{}`), testutil.Call(long[1:], "a", `{}`))
	for i, want := range []string{"257 bytes long, at most 256 allowed", "not valid UTF-8"} {
		r := rs[i]
		if r.State != events.StateError || !errors.Is(r.Err, toolkit.ErrInvalidCall) || !strings.Contains(r.Text(), want) || len(r.Text()) > 200 {
			t.Errorf("call %d: %s %v %q", i, r.State, r.Err, r.Text())
		}
	}
	if rs[2].State != events.StateSuccess || ran.Load() != 1 {
		t.Errorf("a %d-byte id: %s %v; ran %d", toolkit.MaxCallIDLen, rs[2].State, rs[2].Err, ran.Load())
	}
}

// TestNegativeToolTimeout: a tool whose Spec.Timeout is negative has no
// deadline, even under a toolkit default timeout.
func TestNegativeToolTimeout(t *testing.T) {
	tk := testutil.Kit(t, toolkit.WithDefaultTimeout(time.Millisecond))
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "long", Timeout: -1}, func(ctx context.Context, _ none) (string, error) {
		if d, ok := ctx.Deadline(); ok {
			return "", fmt.Errorf("a deadline: %v", d)
		}
		return "no deadline", ctx.Err()
	}))
	if r := testutil.Run(t, tk, "s", testutil.Call("1", "long", `{}`))[0]; r.State != events.StateSuccess || r.Text() != "no deadline" {
		t.Errorf("%s %q", r.State, r.Text())
	}
}

// TestOutcomeWithoutState: an outcome without a state is a success,
// whether an interceptor returns it or the caller gives it (WithOutcome).
func TestOutcomeWithoutState(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(rec))
	var ran atomic.Int32
	testutil.Add(t, tk, countTool(t, "a", &ran))
	if err := tk.Use(toolkit.Interceptor{Name: "cache", Tools: []string{"a"}, Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		if inv.Call.ID == "cached" {
			return toolkit.Outcome{Content: []events.Part{events.Text("from the cache")}}
		}
		return next(ctx, inv)
	}}); err != nil {
		t.Fatal(err)
	}
	rs := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("cached", "a", `{}`), testutil.Call("given", "a", `{}`)},
		toolkit.WithOutcome(1, toolkit.Outcome{Content: []events.Part{events.Text("given")}}))
	for i, want := range []string{"from the cache", "given"} {
		if r := rs[i]; r.State != events.StateSuccess || r.IsError() || r.Text() != want {
			t.Errorf("call %s: %s %q", r.Call.ID, r.State, r.Text())
		}
		testutil.CheckDeltasAddUp(t, rec, rs[i])
	}
	if ran.Load() != 0 {
		t.Errorf("the tool ran %d times", ran.Load())
	}
	rec.Check(t)
}

// TestInterceptorForeignContext: an interceptor that hands next a context
// not derived from the call's (context.Background with a value of its
// own) still gets the handler the call's emitter: what it streams reaches
// the result and the observers.
func TestInterceptorForeignContext(t *testing.T) {
	type key struct{}
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(rec))
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "talk"}, func(ctx context.Context, _ none) (string, error) {
		if err := stream.From(ctx).Text("streamed, "); err != nil {
			return "", err
		}
		v, _ := ctx.Value(key{}).(string)
		return v, nil
	}))
	if err := tk.Use(toolkit.Interceptor{Name: "detach", Intercept: func(_ context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		return next(context.WithValue(context.Background(), key{}, "detached"), inv)
	}}); err != nil {
		t.Fatal(err)
	}
	r := testutil.Run(t, tk, "s", testutil.Call("1", "talk", `{}`))[0]
	if r.State != events.StateSuccess || r.Text() != "streamed, detached" {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	testutil.CheckDeltasAddUp(t, rec, r)
}

// TestHandlerDerivedContexts: contexts a handler derives from its own and
// cancels early are let go of (the call's context forgets them, without a
// goroutine each), and those it still holds end with the call's deadline.
func TestHandlerDerivedContexts(t *testing.T) {
	tk := testutil.Kit(t, toolkit.WithCancelGrace(5*time.Second))
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "derive", Timeout: 100 * time.Millisecond}, func(ctx context.Context, _ none) (string, error) {
		for range 10 {
			sub, cancel := context.WithCancel(ctx)
			cancel()
			if sub.Err() == nil {
				return "", errors.New("a cancelled sub-context is not done")
			}
		}
		// Held sub-contexts cost no goroutine each: the context package
		// starts one per child of a parent it cannot register with.
		before := runtime.NumGoroutine()
		for range 20 {
			_, cancel := context.WithCancel(ctx)
			defer cancel()
		}
		if grew := runtime.NumGoroutine() - before; grew >= 10 {
			return "", fmt.Errorf("20 held sub-contexts started %d goroutines", grew)
		}
		held, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(ctx, func() {})
		if !stop() {
			return "", errors.New("AfterFunc's stop found nothing to stop")
		}
		if stop() {
			return "", errors.New("AfterFunc's stop stopped twice")
		}
		<-held.Done()
		if ctx.Err() == nil || !errors.Is(held.Err(), context.Canceled) && !errors.Is(held.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("held ended with %v while the call's context says %v", held.Err(), ctx.Err())
		}
		return "", ctx.Err()
	}))
	r := testutil.Run(t, tk, "s", testutil.Call("1", "derive", `{}`))[0]
	if r.State != events.StateTimeout || !errors.Is(r.Err, context.DeadlineExceeded) || r.Text() != `Error: tool "derive" timed out after 100ms: context deadline exceeded` {
		t.Errorf("%s %v %q", r.State, r.Err, r.Text())
	}
}
