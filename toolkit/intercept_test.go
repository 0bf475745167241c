package toolkit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// trace records what interceptors saw, in order.
type trace struct {
	mu  sync.Mutex
	log []string
}

func (tr *trace) add(s string) {
	tr.mu.Lock()
	tr.log = append(tr.log, s)
	tr.mu.Unlock()
}

func (tr *trace) get() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.log)
}

func tracing(name string, tr *trace) toolkit.Interceptor {
	return toolkit.Interceptor{Name: name, Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		tr.add(name + ">")
		out := next(ctx, inv)
		tr.add("<" + name)
		return out
	}}
}

func echoTool(t *testing.T) *toolkit.Tool {
	return testutil.Tool(t, toolkit.Spec{Name: "echo", ConcurrencySafe: true}, func(ctx context.Context, in struct {
		S string `json:"s,omitempty"`
	}) (string, error) {
		return "echo:" + in.S, nil
	})
}

// sayKit is a toolkit with a recording observer and one tool, "say", that
// streams one text delta and returns another.
func sayKit(t *testing.T, streamed, returned string) (*toolkit.Toolkit, *testutil.Recorder) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithObserver(rec))
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "say"}, func(ctx context.Context, _ none) (string, error) {
		stream.From(ctx).Text(streamed)
		return returned, nil
	}))
	return tk, rec
}

func TestChainOrder(t *testing.T) {
	tr := &trace{}
	tk := testutil.Kit(t)
	testutil.Add(t, tk, echoTool(t))
	if err := tk.Use(tracing("outer", tr), tracing("middle", tr), tracing("inner", tr)); err != nil {
		t.Fatal(err)
	}
	r := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("1", "echo", `{"s":"x"}`)})[0]
	if r.Text() != "echo:x" {
		t.Fatalf("%q", r.Text())
	}
	if got, want := tr.get(), []string{"outer>", "middle>", "inner>", "<inner", "<middle", "<outer"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// TestRetryReentersTheWholeInnerChain: an outer interceptor calling next
// three times runs every inner interceptor three times; each attempt starts
// the content over, so the deltas still add up to the final result.
func TestRetryReentersTheWholeInnerChain(t *testing.T) {
	tr := &trace{}
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithObserver(rec))
	attempts := 0
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "flaky"}, func(ctx context.Context, _ none) (string, error) {
		attempts++
		stream.From(ctx).Text(fmt.Sprintf("attempt %d streamed\n", attempts))
		if attempts < 3 {
			return "", errors.New("transient")
		}
		return "ok", nil
	}))
	retry := toolkit.Interceptor{Name: "retry", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		var out toolkit.Outcome
		for range 3 {
			if out = next(ctx, inv); out.State == events.StateSuccess {
				break
			}
		}
		inv.Meta("attempts", inv.Attempts())
		return out
	}}
	tk.Use(retry, tracing("inner", tr))
	r := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("c", "flaky", ``)})[0]
	if r.State != events.StateSuccess || r.Text() != "attempt 3 streamed\nok" {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	if r.Meta["attempts"] != 3 || len(tr.get()) != 6 {
		t.Fatalf("attempts %v, inner ran %d times", r.Meta["attempts"], len(tr.get())/2)
	}
	testutil.CheckDeltasAddUp(t, rec, r)
	evs := rec.Of("c")
	resets := 0
	for _, ev := range evs {
		if ev.Reset {
			resets++
		}
	}
	if resets != 2 {
		t.Fatalf("%d reset deltas, want 2 (one before each retry)", resets)
	}
}

// TestReplacedContent: an interceptor that rewrites the result resets the
// deltas; observers rebuild exactly the new result.
func TestReplacedContent(t *testing.T) {
	tk, rec := sayKit(t, strings.Repeat("x", 100), "tail")
	tk.Use(toolkit.Interceptor{Name: "shorten", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		out := next(ctx, inv)
		return toolkit.Success(events.Text(fmt.Sprintf("%d bytes, shortened", len(out.Text()))))
	}})
	r := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("c", "say", ``)})[0]
	if r.Text() != "104 bytes, shortened" {
		t.Fatalf("%q", r.Text())
	}
	testutil.CheckDeltasAddUp(t, rec, r)
}

// TestSwitchWhileRunning: switching an interceptor off affects calls that
// start afterwards; a call already running keeps its chain.
func TestSwitchWhileRunning(t *testing.T) {
	tk := testutil.Kit(t)
	started, release := make(chan struct{}), make(chan struct{})
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "wait", ConcurrencySafe: true}, func(ctx context.Context, in struct {
		Block bool `json:"block,omitempty"`
	}) (string, error) {
		if in.Block {
			close(started)
			<-release
		}
		return "ran", nil
	}))
	tk.Use(toolkit.Interceptor{Name: "tag", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		out := next(ctx, inv)
		return toolkit.Success(events.Text(out.Text() + "+tagged"))
	}})
	s := testutil.Session(t, tk, "s")
	first := s.Start(context.Background(), []toolkit.Call{testutil.Call("1", "wait", `{"block":true}`)})
	testutil.WaitFor(t, started, "first call")
	if err := tk.EnableInterceptor("tag", false); err != nil {
		t.Fatal(err)
	}
	second := s.Run(context.Background(), []toolkit.Call{testutil.Call("2", "wait", `{}`)})[0]
	close(release)
	if r := first.Wait()[0]; r.Text() != "ran+tagged" {
		t.Fatalf("running call lost its chain: %q", r.Text())
	}
	if second.Text() != "ran" {
		t.Fatalf("switched-off interceptor ran: %q", second.Text())
	}
	tk.EnableInterceptor("tag", true)
	if r := s.Run(context.Background(), []toolkit.Call{testutil.Call("3", "wait", `{}`)})[0]; r.Text() != "ran+tagged" {
		t.Fatalf("switched back on: %q", r.Text())
	}
	if err := tk.EnableInterceptor("nope", true); err == nil {
		t.Fatal("switching an unknown interceptor")
	}
}

func TestScopeAndNames(t *testing.T) {
	tr := &trace{}
	tk := testutil.Kit(t)
	testutil.Add(t, tk, echoTool(t), testutil.Tool(t, toolkit.Spec{Name: "other", ReadOnly: true}, func(ctx context.Context, _ none) (string, error) { return "", nil }))
	byName := tracing("byname", tr)
	byName.Tools = []string{"echo"}
	byMatch := tracing("bymatch", tr)
	byMatch.Match = func(t *toolkit.Tool) bool { return t.Spec().ReadOnly }
	tk.Use(byName, byMatch)
	s := testutil.Session(t, tk, "s")
	s.Run(context.Background(), []toolkit.Call{testutil.Call("1", "echo", `{}`)})
	s.Run(context.Background(), []toolkit.Call{testutil.Call("2", "other", `{}`)})
	s.Run(context.Background(), []toolkit.Call{testutil.Call("3", "nope", `{}`)}) // unknown: no interceptor runs
	if got, want := tr.get(), []string{"byname>", "<byname", "bymatch>", "<bymatch"}; !slices.Equal(got, want) {
		t.Fatalf("%v, want %v", got, want)
	}
	// Same name: Use refuses it, ReplaceInterceptor replaces in place, switched on.
	if err := tk.EnableInterceptor("byname", false); err != nil {
		t.Fatal(err)
	}
	tr2 := &trace{}
	if err := tk.Use(tracing("byname", tr2)); err == nil || !strings.Contains(err.Error(), `"byname" is already in use`) {
		t.Fatalf("Use with a name in use: %v", err)
	}
	if err := tk.ReplaceInterceptor(tracing("byname", tr2)); err != nil {
		t.Fatal(err)
	}
	names, on := tk.Interceptors()
	if !slices.Equal(names, []string{"byname", "bymatch"}) || !on[0] {
		t.Fatalf("%v %v", names, on)
	}
	s.Run(context.Background(), []toolkit.Call{testutil.Call("4", "other", `{}`)})
	if len(tr2.get()) != 2 {
		t.Fatalf("replacement (now for every tool) did not run: %v", tr2.get())
	}
	if err := tk.Use(toolkit.Interceptor{Name: "", Intercept: byName.Intercept}); err == nil {
		t.Fatal("an unnamed interceptor was accepted")
	}
	if !tk.RemoveInterceptor("bymatch") || tk.RemoveInterceptor("bymatch") {
		t.Fatal("RemoveInterceptor")
	}
}

// TestInterceptorSeesAndChangesTheCall: session, call, spec, context values
// are visible; changed arguments are checked again.
func TestInterceptorSeesAndChangesTheCall(t *testing.T) {
	type tenant string
	tk := testutil.Kit(t)
	testutil.Add(t, tk, echoTool(t))
	tk.Use(toolkit.Interceptor{Name: "rewrite", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		ten, _ := toolkit.Value[tenant](ctx)
		if inv.Session != "s" || inv.Call.ID == "" || inv.Tool.Spec().Name != "echo" || ten != "acme" {
			return toolkit.Failure(events.StateError, fmt.Errorf("saw %q %q %q %q", inv.Session, inv.Call.ID, inv.Tool.Spec().Name, ten))
		}
		if strings.Contains(string(inv.Call.Args), "bad") {
			inv.Call.Args = []byte(`{"s": 42}`)
		} else {
			inv.Call.Args = []byte(`{"s":"rewritten"}`)
		}
		return next(ctx, inv)
	}})
	ctx := toolkit.WithValue(context.Background(), tenant("acme"))
	rs := testutil.Session(t, tk, "s").Run(ctx, []toolkit.Call{testutil.Call("1", "echo", `{"s":"orig"}`), testutil.Call("2", "echo", `{"s":"bad"}`)})
	if rs[0].Text() != "echo:rewritten" {
		t.Fatalf("%q", rs[0].Text())
	}
	if !isErr[*toolkit.ArgumentError](rs[1].Err) || !strings.Contains(rs[1].Text(), "s: must be a string") {
		t.Fatalf("changed arguments not checked: %v", rs[1].Err)
	}
}

// TestDeltaFilterAndEvents: a delta filter sees every delta, streamed or
// returned, before observers do; Emit sends free event types only.
func TestDeltaFilterAndEvents(t *testing.T) {
	tk, rec := sayKit(t, "token=SECRET1 ", "and SECRET2")
	tk.Use(toolkit.Interceptor{Name: "redact", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		inv.FilterDeltas(func(p events.Part) events.Part {
			p.Text = strings.ReplaceAll(strings.ReplaceAll(p.Text, "SECRET1", "***"), "SECRET2", "***")
			return p
		})
		if err := inv.Emit("audit", map[string]string{"tool": inv.Call.Name}); err != nil {
			return toolkit.Failure(events.StateError, err)
		}
		if err := inv.Emit(events.TypeResult, nil); err == nil {
			return toolkit.Failure(events.StateError, errors.New("a lifecycle type was accepted"))
		}
		return next(ctx, inv)
	}})
	r := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("c", "say", ``)})[0]
	if r.Text() != "token=*** and ***" {
		t.Fatalf("%q", r.Text())
	}
	testutil.CheckDeltasAddUp(t, rec, r)
	for _, ev := range rec.Of("c") {
		if ev.Type == events.TypeDelta && strings.Contains(ev.Delta.Text, "SECRET") {
			t.Fatalf("a streamed delta leaked: %q", ev.Delta.Text)
		}
	}
	if got := testutil.Types(rec.Of("c")); len(got) < 2 || got[1] != "audit" {
		t.Fatalf("events %v", got)
	}
}

// TestSuspendResume: an interceptor waits for an outside decision: the call
// shows as suspended, gives up its slot, and its deadline starts over when
// it resumes.
func TestSuspendResume(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithObserver(rec), toolkit.WithMaxParallel(1))
	decide := make(chan struct{})
	var during error
	testutil.Add(t, tk,
		testutil.Tool(t, toolkit.Spec{Name: "guarded", ConcurrencySafe: true, Timeout: 80 * time.Millisecond}, func(ctx context.Context, _ none) (string, error) {
			dl, _ := ctx.Deadline()
			if time.Until(dl) < 40*time.Millisecond {
				return "", errors.New("the deadline did not start over")
			}
			return "approved work", nil
		}),
		testutil.Tool(t, toolkit.Spec{Name: "free", ConcurrencySafe: true}, func(ctx context.Context, _ none) (string, error) {
			return "free ran", nil
		}),
	)
	var waiting []string // Invocation.Waiting before, during and after the wait
	g := toolkit.Interceptor{Name: "gate", Tools: []string{"guarded"}, Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		waiting = append(waiting, inv.Waiting())
		wait, resume := inv.Suspend("approval")
		waiting = append(waiting, inv.Waiting())
		select {
		case <-decide:
		case <-wait.Done():
			during = wait.Err()
			return toolkit.Failure(events.StateInterrupted, wait.Err())
		}
		ctx = resume()
		waiting = append(waiting, inv.Waiting())
		return next(ctx, inv)
	}}
	tk.Use(g)
	s := testutil.Session(t, tk, "s")
	run := s.Start(context.Background(), []toolkit.Call{testutil.Call("g", "guarded", ``), testutil.Call("f", "free", ``)})
	var seen []string
	for r := range run.Results() {
		seen = append(seen, r.Call.ID+":"+string(r.State))
		if r.Call.ID == "f" { // ran although "g" holds... nothing: it gave its slot up
			time.Sleep(120 * time.Millisecond) // longer than guarded's timeout
			close(decide)
		}
	}
	if !slices.Equal(seen, []string{"g:suspended", "f:success", "g:success"}) {
		t.Fatalf("results %v (during: %v)", seen, during)
	}
	if r := run.Wait()[0]; r.Text() != "approved work" {
		t.Fatalf("%q", r.Text())
	}
	if got := testutil.Types(rec.Of("g")); !slices.Equal(got, []events.Type{"start", "suspend", "delta", "result"}) {
		t.Fatalf("events %v", got)
	}
	if !slices.Equal(waiting, []string{"", "approval", ""}) {
		t.Fatalf("Waiting before, during, after the wait: %q", waiting)
	}
}

// TestSuspendedCallInterrupted: cancelling the run ends the wait, and an
// interceptor around the one that waited sees why the call waited.
func TestSuspendedCallInterrupted(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, echoTool(t))
	var waited string
	tk.Use(toolkit.Interceptor{Name: "outer", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		out := next(ctx, inv)
		waited = inv.Waiting()
		return out
	}})
	tk.Use(toolkit.Interceptor{Name: "gate", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		wait, _ := inv.Suspend("approval")
		<-wait.Done()
		return toolkit.Failure(events.StateInterrupted, fmt.Errorf("no decision: %w", wait.Err()))
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := testutil.Session(t, tk, "s").Start(ctx, []toolkit.Call{testutil.Call("1", "echo", `{}`)})
	for r := range run.Results() {
		if r.State == events.StateSuspended {
			cancel()
		}
	}
	if r := run.Wait()[0]; r.State != events.StateInterrupted || !errors.Is(r.Err, context.Canceled) {
		t.Fatalf("%s %v", r.State, r.Err)
	}
	if waited != "approval" {
		t.Fatalf("Waiting after an interrupted wait: %q, want approval", waited)
	}
}

// ExampleInterceptor shows a custom interceptor: it times each call and
// notes the duration in the result's metadata.
func ExampleInterceptor() {
	tk := toolkit.New()
	defer tk.Close(context.Background())
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "hello"}, func(ctx context.Context, _ struct{}) (string, error) {
		return "hello", nil
	}))
	tk.Use(toolkit.Interceptor{
		Name: "timing",
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
			start := time.Now()
			out := next(ctx, inv) // run the tool (and the interceptors inside this one)
			inv.Meta("took", time.Since(start))
			return out
		},
	})
	sess, _ := tk.Session("s")
	r := sess.Run(context.Background(), []toolkit.Call{{ID: "1", Name: "hello"}})[0]
	_, timed := r.Meta["took"].(time.Duration)
	fmt.Println(r.Text(), timed)
	// Output: hello true
}

// TestChainFollowsReplacedTool: chains are cached per tool; replacing the
// tool under the same name must rebuild its chain (Match sees the new spec).
func TestChainFollowsReplacedTool(t *testing.T) {
	tr := &trace{}
	tk := testutil.Kit(t)
	testutil.Add(t, tk, echoTool(t))
	ro := tracing("readonly", tr)
	ro.Match = func(t *toolkit.Tool) bool { return t.Spec().ReadOnly }
	tk.Use(ro)
	s := testutil.Session(t, tk, "s")
	s.Run(context.Background(), []toolkit.Call{testutil.Call("1", "echo", `{}`)})
	if len(tr.get()) != 0 {
		t.Fatalf("ran for a tool that is not read-only: %v", tr.get())
	}
	again := testutil.Tool(t, toolkit.Spec{Name: "echo", ReadOnly: true}, func(ctx context.Context, _ none) (string, error) { return "v2", nil })
	if err := tk.Replace(again); err != nil {
		t.Fatal(err)
	}
	if r := s.Run(context.Background(), []toolkit.Call{testutil.Call("2", "echo", `{}`)})[0]; r.Text() != "v2" {
		t.Fatalf("%q", r.Text())
	}
	if got := tr.get(); !slices.Equal(got, []string{"readonly>", "<readonly"}) {
		t.Fatalf("replaced tool kept the old chain: %v", got)
	}
}

// TestInPlaceEditIsAReplacement: an interceptor that edits the content it
// got from next in place (instead of building a new list) still replaces
// the result properly: the deltas add up to what it returned.
func TestInPlaceEditIsAReplacement(t *testing.T) {
	tk, rec := sayKit(t, "secret ", "words")
	tk.Use(toolkit.Interceptor{Name: "edit", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		out := next(ctx, inv)
		out.Content[0].Text = strings.Replace(out.Content[0].Text, "secret", "public", 1)
		return out
	}})
	r := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("c", "say", ``)})[0]
	if r.Text() != "public words" {
		t.Fatalf("%q", r.Text())
	}
	testutil.CheckDeltasAddUp(t, rec, r)
}

// TestCallLocalsSurviveRetries: a call local holds one value for every
// attempt of one call and a fresh one for the next call.
func TestCallLocalsSurviveRetries(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "fail"}, func(ctx context.Context, _ none) (string, error) {
		return "", errors.New("no")
	}))
	marks := toolkit.NewCallLocal[*int]()
	var perCall []int
	inner := toolkit.Interceptor{Name: "count", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		*marks.LoadOrInit(inv, func() *int { return new(int) })++
		return next(ctx, inv)
	}}
	retry := toolkit.Interceptor{Name: "retry", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		next(ctx, inv)
		out := next(ctx, inv)
		v, _ := marks.Get(inv)
		perCall = append(perCall, *v)
		return out
	}}
	tk.Use(retry, inner)
	s := testutil.Session(t, tk, "s")
	s.Run(context.Background(), []toolkit.Call{testutil.Call("a", "fail", ``)})
	s.Run(context.Background(), []toolkit.Call{testutil.Call("b", "fail", ``)})
	if !slices.Equal(perCall, []int{2, 2}) {
		t.Fatalf("inner ran %v times per call, want [2 2]", perCall)
	}
}

// TestBatchIDsUnique: batch ids differ between toolkits (and so between
// processes), not only within one.
func TestBatchIDsUnique(t *testing.T) {
	ids := map[string]bool{}
	for range 2 {
		tk := testutil.Kit(t)
		testutil.Add(t, tk, echoTool(t))
		tk.Use(toolkit.Interceptor{Name: "id", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
			ids[inv.BatchID()] = true
			return next(ctx, inv)
		}})
		testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("c", "echo", `{}`)})
	}
	if len(ids) != 2 {
		t.Fatalf("run ids %v", ids)
	}
}

// TestAbandonedAttemptCannotWrite: an interceptor gives up on a stuck
// attempt and runs the tool again; whatever the stuck attempt writes or
// returns later must not reach the result or the deltas.
func TestAbandonedAttemptCannotWrite(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithObserver(rec))
	release, stuckDone := make(chan struct{}), make(chan error, 1)
	var n int
	var mu sync.Mutex
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "slow"}, func(ctx context.Context, _ none) (string, error) {
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		if first {
			<-release // ignores its context
			stuckDone <- stream.From(ctx).Text("late ")
			return "stale", nil
		}
		stream.From(ctx).Text("fresh ")
		return "ok", nil
	}))
	tk.Use(toolkit.Interceptor{Name: "giveup", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		cp := *inv
		go next(ctx, &cp) // abandoned at once
		for inv.Attempts() < 1 {
			time.Sleep(time.Millisecond)
		}
		out := next(ctx, inv)
		close(release)
		if err := <-stuckDone; !errors.Is(err, stream.ErrCallFinished) {
			t.Errorf("the abandoned attempt could still write: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // let its return value arrive
		return out
	}})
	r := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("c", "slow", ``)})[0]
	if r.Text() != "fresh ok" || r.State != events.StateSuccess {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	testutil.CheckDeltasAddUp(t, rec, r)
}

// holdSecret is a StreamFilter that replaces SECRET with [x] even when the
// word comes split across deltas: it holds back any tail of the text that
// could be the start of the word.
type holdSecret struct{ held string }

func (h *holdSecret) Filter(p events.Part) []events.Part {
	if p.Type != events.PartText {
		return []events.Part{p}
	}
	text := strings.ReplaceAll(h.held+p.Text, "SECRET", "[x]")
	h.held = ""
	for n := min(len(text), len("SECRET")-1); n > 0; n-- {
		if strings.HasPrefix("SECRET", text[len(text)-n:]) {
			text, h.held = text[:len(text)-n], text[len(text)-n:]
			break
		}
	}
	return []events.Part{events.Text(text)}
}

func (h *holdSecret) Flush() []events.Part {
	held := h.held
	h.held = ""
	return []events.Part{events.Text(held)}
}

func (h *holdSecret) Reset() { h.held = "" }

// TestStreamFilterHoldsTextBack: a stream filter sees a secret cut across
// deltas whole, so no observer ever sees a piece of it; what it holds at
// the end of an attempt goes out; a retry drops what it held; and the
// deltas still add up to the result.
func TestStreamFilterHoldsTextBack(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(rec))
	attempts := 0
	tk.Use(toolkit.Interceptor{Name: "redact", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		inv.FilterStream(&holdSecret{})
		out := next(ctx, inv)
		if inv.Call.Name == "retried" && out.State != events.StateSuccess {
			out = next(ctx, inv) // a retry: the first attempt's held text must not leak into it
		}
		return out
	}})
	testutil.Add(t, tk,
		testutil.Tool(t, toolkit.Spec{Name: "leaky"}, func(ctx context.Context, _ none) (string, error) {
			em := stream.From(ctx)
			for _, piece := range []string{"key: SEC", "RET, other: S", "ECR", "ET and SE", "CURE, end: SEC"} {
				em.Text(piece)
			}
			return "", nil // the held "SEC" goes out when the attempt ends
		}),
		testutil.Tool(t, toolkit.Spec{Name: "retried"}, func(ctx context.Context, _ none) (string, error) {
			attempts++
			stream.From(ctx).Text("first SECR")
			if attempts == 1 {
				return "", errors.New("flaky")
			}
			return "ET done", nil
		}))
	rs := testutil.Run(t, tk, "s", testutil.Call("1", "leaky", `{}`), testutil.Call("2", "retried", `{}`))
	if got, want := rs[0].Text(), "key: [x], other: [x] and SECURE, end: SEC"; got != want {
		t.Errorf("leaky: %q, want %q", got, want)
	}
	if got, want := rs[1].Text(), "first [x] done"; got != want {
		t.Errorf("retried: %q, want %q", got, want)
	}
	for _, r := range rs {
		testutil.CheckDeltasAddUp(t, rec, r)
	}
	for _, d := range rec.DeltaTexts("1") {
		for _, piece := range []string{"SECR", "CRET", "RET,", "ECR"} {
			if strings.Contains(d, piece) {
				t.Errorf("a delta shows a piece of the secret: %q", d)
			}
		}
	}
}

// TestStreamFilterResetWhenResultReplaced: when an interceptor replaces
// the result while nothing has gone out but a filter holds text back (here
// streamed after next, the attempt's output empty), what the filter holds
// is dropped: the result is the replacement alone, and the deltas add up to
// it (finishOutcome resets the filters even with nothing out).
func TestStreamFilterResetWhenResultReplaced(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(rec))
	tk.Use(toolkit.Interceptor{Name: "redact", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		inv.FilterStream(&holdSecret{})
		next(ctx, inv)
		stream.From(ctx).Text("SEC") // held back whole: it could start the secret
		return toolkit.Success(events.Text("answered"))
	}})
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "t"}, func(context.Context, none) (string, error) {
		return "", nil
	}))
	r := testutil.Run(t, tk, "s", testutil.Call("1", "t", `{}`))[0]
	if r.State != events.StateSuccess || r.Text() != "answered" {
		t.Errorf("%s %q, want success %q", r.State, r.Text(), "answered")
	}
	testutil.CheckDeltasAddUp(t, rec, r)
	for _, d := range rec.DeltaTexts("1") {
		if strings.Contains(d, "SEC") {
			t.Errorf("a delta shows what the filter held: %q", d)
		}
	}
}
