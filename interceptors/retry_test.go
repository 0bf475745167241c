package interceptors_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

var errFlaky = errors.New("flaky backend")

// retrySleeps records the waits Retry asks for, without waiting.
type retrySleeps struct {
	mu sync.Mutex
	ds []time.Duration
}

func (s *retrySleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.ds = append(s.ds, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *retrySleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.ds...)
}

// flakyTool streams a line per attempt and fails transiently until
// attempt okAt (never if okAt is 0).
func flakyTool(t *testing.T, name string, okAt int, ran *icCounter) *toolkit.Tool {
	return icTool(t, toolkit.Spec{Name: name}, func(ctx context.Context) (string, error) {
		n := ran.inc()
		stream.From(ctx).Text(fmt.Sprintf("attempt %d streamed; ", n))
		if okAt == 0 || n < okAt {
			return "", interceptors.Transient(errFlaky)
		}
		return "ok", nil
	})
}

// retryFlaky runs call "c1" of a flakyTool that succeeds at attempt okAt
// through Retry(opts...) in a toolkit made with tkOpts, and returns the
// result, how often the tool ran and the waits Retry asked for (it does
// not wait).
func retryFlaky(t *testing.T, okAt int, tkOpts []toolkit.Option, opts ...interceptors.RetryOption) (r toolkit.Result, ran int, waits []time.Duration) {
	t.Helper()
	sl := &retrySleeps{}
	tk := icKit(t, tkOpts, interceptors.Retry(append(opts, interceptors.RetrySleep(sl.sleep))...))
	var n icCounter
	testutil.Add(t, tk, flakyTool(t, "flaky", okAt, &n))
	r = icRun(t, testutil.Session(t, tk, "s"), testutil.Call("c1", "flaky", `{}`))
	return r, n.get(), sl.all()
}

func TestRetrySucceedsOnThirdAttempt(t *testing.T) {
	rec := &testutil.Recorder{}
	r, ran, waits := retryFlaky(t, 3, []toolkit.Option{toolkit.WithInlineObserver(rec)})
	if r.State != events.StateSuccess || r.Text() != "attempt 3 streamed; ok" {
		t.Fatalf("got %s %q, want success with the third attempt only", r.State, r.Text())
	}
	if ran != 3 || len(waits) != 2 {
		t.Fatalf("ran %d times, slept %d times; want 3 and 2", ran, len(waits))
	}
	if got := r.Meta[interceptors.MetaAttempts]; got != 3 {
		t.Fatalf("attempts meta = %v, want 3", got)
	}
	// What observers rebuilt from the deltas is the result: failed attempts
	// left no trace.
	if got := fmt.Sprint(rec.Content("c1")); got != fmt.Sprint(r.Content) {
		t.Fatalf("deltas add up to %s, result is %s", got, fmt.Sprint(r.Content))
	}
}

func TestRetryGivesUp(t *testing.T) {
	r, ran, waits := retryFlaky(t, 0, nil, interceptors.RetryMaxAttempts(4))
	want := `Error: tool "flaky" failed after 4 attempts: flaky backend`
	if r.State != events.StateError || r.Text() != want {
		t.Fatalf("got %s %q, want error %q", r.State, r.Text(), want)
	}
	if !errors.Is(r.Err, errFlaky) {
		t.Fatalf("errors.Is(%v, errFlaky) = false", r.Err)
	}
	var re *interceptors.RetryError
	if !errors.As(r.Err, &re) || re.Attempts != 4 {
		t.Fatalf("cause %#v, want a RetryError with 4 attempts", r.Err)
	}
	if ran != 4 {
		t.Fatalf("ran %d times, want 4", ran)
	}
	if n := len(waits); n != 3 {
		t.Fatalf("slept %d times, want 3 (never after the last attempt)", n)
	}
}

func TestRetryOneAttemptIsNoRetry(t *testing.T) {
	r, ran, waits := retryFlaky(t, 0, nil, interceptors.RetryMaxAttempts(1))
	if ran != 1 || len(waits) != 0 {
		t.Fatalf("ran %d, slept %d; want 1 and 0", ran, len(waits))
	}
	if r.State != events.StateError || r.Text() != "attempt 1 streamed; Error: flaky backend" {
		t.Fatalf("got %s %q: the outcome of a single attempt must stay as it is", r.State, r.Text())
	}
}

func TestRetryNotRetried(t *testing.T) {
	sl := &retrySleeps{}
	deny := toolkit.Interceptor{Name: "deny", Tools: []string{"denied"},
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
			return toolkit.Failure(events.StateDenied, interceptors.Transient(errors.New("not allowed")))
		}}
	tk := icKit(t, nil, interceptors.Retry(interceptors.RetrySleep(sl.sleep)), deny)
	var typedRan, permRan, panicRan, deniedRan icCounter
	testutil.Add(t, tk,
		toolkit.MustTool(toolkit.Spec{Name: "typed"}, func(ctx context.Context, in struct {
			N int `json:"n"`
		}) (string, error) {
			typedRan.inc()
			return "ok", nil
		}),
		icTool(t, toolkit.Spec{Name: "permanent"}, func(ctx context.Context) (string, error) {
			permRan.inc()
			return "", errors.New("no such file")
		}),
		icTool(t, toolkit.Spec{Name: "panics"}, func(ctx context.Context) (string, error) {
			panicRan.inc()
			panic("boom")
		}),
		icTool(t, toolkit.Spec{Name: "denied"}, func(ctx context.Context) (string, error) {
			deniedRan.inc()
			return "ok", nil
		}),
	)
	s := testutil.Session(t, tk, "s")

	r := icRun(t, s, testutil.Call("c1", "typed", `{"n":"three"}`))
	// Invalid arguments never reach the interceptors: nothing to retry.
	if !isErr[*toolkit.ArgumentError](r.Err) || typedRan.get() != 0 || r.Meta[interceptors.MetaAttempts] != nil {
		t.Fatalf("invalid arguments: %v, ran %d, attempts %v", r.Err, typedRan.get(), r.Meta[interceptors.MetaAttempts])
	}
	r = icRun(t, s, testutil.Call("c2", "permanent", `{}`))
	if r.Text() != "Error: no such file" || permRan.get() != 1 {
		t.Fatalf("non-transient error: %q, ran %d", r.Text(), permRan.get())
	}
	r = icRun(t, s, testutil.Call("c3", "panics", `{}`))
	if !isErr[*toolkit.PanicError](r.Err) || panicRan.get() != 1 {
		t.Fatalf("panic: %v, ran %d", r.Err, panicRan.get())
	}
	r = icRun(t, s, testutil.Call("c4", "denied", `{}`))
	if r.State != events.StateDenied || deniedRan.get() != 0 {
		t.Fatalf("denied: %s, ran %d", r.State, deniedRan.get())
	}
	if n := len(sl.all()); n != 0 {
		t.Fatalf("slept %d times, want none", n)
	}
}

func TestRetryBackoff(t *testing.T) {
	const initial, maxWait = 100 * time.Millisecond, 350 * time.Millisecond
	run := func(t *testing.T, jitter bool, attempts int) []time.Duration {
		_, ran, waits := retryFlaky(t, 0, nil, interceptors.RetryMaxAttempts(attempts),
			interceptors.RetryBackoff(initial, maxWait), interceptors.RetryJitter(jitter))
		if ran != attempts {
			t.Fatalf("ran %d times, want %d", ran, attempts)
		}
		return waits
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, maxWait, maxWait}
	if got := run(t, false, 5); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("waits %v, want %v", got, want)
	}
	t.Run("jitter within the cap", func(t *testing.T) {
		for range 20 {
			got := run(t, true, 6)
			if len(got) != 5 {
				t.Fatalf("%d waits for 6 attempts, want 5", len(got))
			}
			for i, d := range got {
				full := min(initial<<i, maxWait)
				if d < full/2 || d > full || d > maxWait {
					t.Fatalf("wait %d is %v, want within [%v, %v]", i+1, d, full/2, full)
				}
			}
		}
	})
	t.Run("factor", func(t *testing.T) {
		_, _, waits := retryFlaky(t, 0, nil, interceptors.RetryMaxAttempts(4), interceptors.RetryFactor(3),
			interceptors.RetryBackoff(10*time.Millisecond, time.Second), interceptors.RetryJitter(false))
		if got := fmt.Sprint(waits); got != "[10ms 30ms 90ms]" {
			t.Fatalf("waits %s, want [10ms 30ms 90ms]", got)
		}
	})
}

func TestRetryCancelledDuringSleep(t *testing.T) {
	// A long real wait: only the cancellation can end it.
	tk := icKit(t, nil, interceptors.Retry(interceptors.RetryBackoff(time.Hour, time.Hour), interceptors.RetryJitter(false)))
	var ran icCounter
	first := make(chan struct{})
	testutil.Add(t, tk, icTool(t, toolkit.Spec{Name: "flaky", Timeout: -1}, func(ctx context.Context) (string, error) {
		if ran.inc() == 1 {
			close(first)
		}
		return "", interceptors.Transient(errFlaky)
	}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := testutil.Session(t, tk, "s").Start(ctx, []toolkit.Call{testutil.Call("c1", "flaky", `{}`)})
	testutil.WaitFor(t, first, "the first attempt")
	cancel()
	testutil.WaitFor(t, run.Done(), "the run to end after cancellation")
	r := run.Wait()[0]
	if ran.get() != 1 {
		t.Fatalf("ran %d times after cancellation, want 1", ran.get())
	}
	if !errors.Is(r.Err, errFlaky) {
		t.Fatalf("result %s %v: want the last attempt's outcome", r.State, r.Err)
	}
}

func TestRetryStopsWhenTheCallDeadlinePassed(t *testing.T) {
	sl := &retrySleeps{}
	tk := icKit(t, nil, interceptors.Retry(interceptors.RetrySleep(sl.sleep)))
	var ran icCounter
	testutil.Add(t, tk, icTool(t, toolkit.Spec{Name: "slow", Timeout: 30 * time.Millisecond}, func(ctx context.Context) (string, error) {
		ran.inc()
		<-ctx.Done()
		return "", ctx.Err()
	}))
	r := icRun(t, testutil.Session(t, tk, "s"), testutil.Call("c1", "slow", `{}`))
	if r.State != events.StateTimeout || !errors.Is(r.Err, toolkit.ErrTimeout) {
		t.Fatalf("got %s %v, want a timeout", r.State, r.Err)
	}
	if ran.get() != 1 || len(sl.all()) != 0 {
		t.Fatalf("ran %d, slept %d: a call past its own deadline cannot be retried", ran.get(), len(sl.all()))
	}
}

func TestRetryGivesUpWhenTheWaitOutlastsTheDeadline(t *testing.T) {
	// The call has 10s; the wait would be 30s at least.
	r, ran, waits := retryFlaky(t, 0, []toolkit.Option{toolkit.WithDefaultTimeout(10 * time.Second)},
		interceptors.RetryBackoff(time.Minute, time.Minute))
	if ran != 1 || len(waits) != 0 || !errors.Is(r.Err, errFlaky) {
		t.Fatalf("ran %d, slept %d, err %v: no attempt fits before the deadline", ran, len(waits), r.Err)
	}
}

// Out of attempts, a call that timed out every time is still a timeout:
// Retry keeps the last attempt's state under its own message and cause.
func TestRetryGivesUpKeepsTheState(t *testing.T) {
	sl := &retrySleeps{}
	tk := icKit(t, nil, interceptors.Retry(interceptors.RetryMaxAttempts(2), interceptors.RetrySleep(sl.sleep)),
		interceptors.Timeout(10*time.Millisecond))
	var ran icCounter
	testutil.Add(t, tk, icTool(t, toolkit.Spec{Name: "stuck"}, func(ctx context.Context) (string, error) {
		ran.inc()
		<-ctx.Done()
		return "", ctx.Err()
	}))
	r := icRun(t, testutil.Session(t, tk, "s"), testutil.Call("c1", "stuck", `{}`))
	var re *interceptors.RetryError
	if r.State != events.StateTimeout || !errors.As(r.Err, &re) || re.Attempts != 2 || !errors.Is(r.Err, toolkit.ErrTimeout) {
		t.Fatalf("got %s %v, want a timeout with a RetryError of 2 attempts", r.State, r.Err)
	}
	if !strings.HasPrefix(r.Text(), `Error: tool "stuck" failed after 2 attempts: tool "stuck" timed out`) || ran.get() != 2 {
		t.Fatalf("model reads %q after %d runs", r.Text(), ran.get())
	}
}

func TestRetryRerunsInnerInterceptors(t *testing.T) {
	sl := &retrySleeps{}
	var inner icCounter
	var seenAttempts []int
	counting := toolkit.Interceptor{Name: "count", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		inner.inc()
		seenAttempts = append(seenAttempts, inv.Attempts())
		// Each attempt may change the arguments; the tool sees the change.
		inv.Call.Args = json.RawMessage(fmt.Sprintf(`{"try":%d}`, inv.Attempts()+1))
		return next(ctx, inv)
	}}
	tk := icKit(t, nil, interceptors.Retry(interceptors.RetrySleep(sl.sleep)), counting)
	var args []string
	tool, err := toolkit.NewRawTool(toolkit.Spec{Name: "flaky"}, json.RawMessage(`{"type":"object"}`),
		func(ctx context.Context, raw json.RawMessage) ([]events.Part, error) {
			args = append(args, string(raw))
			if len(args) < 3 {
				return nil, interceptors.Transient(errFlaky)
			}
			return nil, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Add(t, tk, tool)
	r := icRun(t, testutil.Session(t, tk, "s"), testutil.Call("c1", "flaky", `{}`))
	if r.State != events.StateSuccess || inner.get() != 3 {
		t.Fatalf("got %s, inner interceptor ran %d times; want success and 3", r.State, inner.get())
	}
	if fmt.Sprint(seenAttempts) != "[0 1 2]" || strings.Join(args, " ") != `{"try":1} {"try":2} {"try":3}` {
		t.Fatalf("attempts seen %v, args %v", seenAttempts, args)
	}
}

func TestRetryWithPerAttemptTimeout(t *testing.T) {
	const perAttempt = 40 * time.Millisecond
	tk := icKit(t, nil,
		interceptors.Retry(interceptors.RetryBackoff(time.Millisecond, time.Millisecond)),
		interceptors.Timeout(perAttempt))
	var ran icCounter
	var mu sync.Mutex
	var deadlines []time.Time
	testutil.Add(t, tk, icTool(t, toolkit.Spec{Name: "stuck"}, func(ctx context.Context) (string, error) {
		d, _ := ctx.Deadline()
		mu.Lock()
		deadlines = append(deadlines, d)
		mu.Unlock()
		if ran.inc() < 3 {
			<-ctx.Done() // honours cancellation
			return "", ctx.Err()
		}
		return "ok", nil
	}))
	start := time.Now()
	r := icRun(t, testutil.Session(t, tk, "s"), testutil.Call("c1", "stuck", `{}`))
	if r.State != events.StateSuccess || r.Text() != "ok" || ran.get() != 3 {
		t.Fatalf("got %s %q after %d attempts, want ok on the third", r.State, r.Text(), ran.get())
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(deadlines); i++ {
		if !deadlines[i].After(deadlines[i-1]) {
			t.Fatalf("attempt deadlines %v: each attempt needs its own", deadlines)
		}
	}
	if first := deadlines[0].Sub(start); first > time.Second { // the engine's own is 2 minutes
		t.Fatalf("first attempt's deadline %v after the start, want about %v", first, perAttempt)
	}
}

func TestRetryTools(t *testing.T) {
	sl := &retrySleeps{}
	retry := interceptors.Retry(interceptors.RetrySleep(sl.sleep))
	retry.Tools = []string{"a"}
	tk := icKit(t, nil, retry)
	var ranA, ranB icCounter
	testutil.Add(t, tk, flakyTool(t, "a", 0, &ranA), flakyTool(t, "b", 0, &ranB))
	s := testutil.Session(t, tk, "s")
	icRun(t, s, testutil.Call("c1", "a", `{}`))
	icRun(t, s, testutil.Call("c2", "b", `{}`))
	if ranA.get() != 3 || ranB.get() != 1 {
		t.Fatalf("a ran %d, b ran %d; want 3 and 1", ranA.get(), ranB.get())
	}
}

func TestRetryIf(t *testing.T) {
	sl := &retrySleeps{}
	tk := icKit(t, nil, interceptors.Retry(interceptors.RetrySleep(sl.sleep),
		interceptors.RetryIf(func(o toolkit.Outcome) bool { return strings.Contains(o.Text(), "busy") })))
	var ran icCounter
	testutil.Add(t, tk, icTool(t, toolkit.Spec{Name: "t"}, func(ctx context.Context) (string, error) {
		if ran.inc() == 1 {
			return "", errors.New("server busy") // not transient, but RetryIf says so
		}
		return "ok", nil
	}))
	r := icRun(t, testutil.Session(t, tk, "s"), testutil.Call("c1", "t", `{}`))
	if r.Text() != "ok" || ran.get() != 2 {
		t.Fatalf("got %q after %d runs", r.Text(), ran.get())
	}
}

type retryNetErr struct{ timeout bool }

func (e retryNetErr) Error() string   { return "net" }
func (e retryNetErr) Timeout() bool   { return e.timeout }
func (e retryNetErr) Temporary() bool { return false }

var _ net.Error = retryNetErr{}

func TestIsTransient(t *testing.T) {
	plain := errors.New("plain")
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{plain, false},
		{interceptors.Transient(plain), true},
		{fmt.Errorf("wrapped: %w", interceptors.Transient(plain)), true},
		{errors.Join(plain, interceptors.Transient(plain)), true},
		{retryNetErr{timeout: true}, true},
		{retryNetErr{timeout: false}, false},
		{&net.DNSError{Err: "x", IsTimeout: true}, true},
		{fmt.Errorf("dial: %w", syscall.ETIMEDOUT), true},
		{context.DeadlineExceeded, true},
		{context.Canceled, false},
	} {
		if got := interceptors.IsTransient(tc.err); got != tc.want {
			t.Errorf("IsTransient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if interceptors.Transient(nil) != nil {
		t.Error("Transient(nil) != nil")
	}
	if !errors.Is(interceptors.Transient(plain), plain) {
		t.Error("Transient hides its error from errors.Is")
	}
}

// Retry runs a flaky call again until it succeeds; the model sees only the
// successful attempt.
func ExampleRetry() {
	tk := toolkit.New()
	defer tk.Close(context.Background())
	tk.Use(interceptors.Retry(interceptors.RetryMaxAttempts(3), interceptors.RetryBackoff(time.Millisecond, 10*time.Millisecond)))

	tries := 0
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "fetch"}, func(ctx context.Context, _ struct{}) (string, error) {
		tries++
		if tries < 3 {
			return "", interceptors.Transient(errors.New("connection reset"))
		}
		return "page content", nil
	}))
	sess, _ := tk.Session("s")
	r := sess.Run(context.Background(), []toolkit.Call{{ID: "1", Name: "fetch"}})[0]
	fmt.Println(r.State, r.Text(), r.Meta[interceptors.MetaAttempts])
	// Output:
	// success page content 3
}
