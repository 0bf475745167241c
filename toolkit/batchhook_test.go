package toolkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

func sayTool(t *testing.T, name string, spec toolkit.Spec) *toolkit.Tool {
	spec.Name = name
	return testutil.Tool(t, spec, func(_ context.Context, in struct {
		Say string `json:"say,omitempty"`
	}) (string, error) {
		if in.Say == "fail" {
			return "", errors.New("asked to fail")
		}
		return name + ": " + in.Say, nil
	})
}

// TestBatchHookBeforeAndAfter: Before sees the whole batch before any call
// runs and denies, answers and rewrites calls; After sees the results in
// call order.
func TestBatchHookBeforeAndAfter(t *testing.T) {
	tk := testutil.Kit(t)
	var ran []string
	var mu sync.Mutex
	note := func(s string) { mu.Lock(); ran = append(ran, s); mu.Unlock() }
	testutil.Add(t, tk, sayTool(t, "read", toolkit.Spec{ReadOnly: true}), sayTool(t, "delete", toolkit.Spec{}), sayTool(t, "write", toolkit.Spec{}))
	_ = tk.Use(toolkit.Interceptor{Name: "note", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		note(inv.Call.Name + " " + string(inv.Call.Args))
		return next(ctx, inv)
	}})
	var saw []string
	var after []toolkit.Result
	err := tk.Use(toolkit.Interceptor{Name: "policy",
		BeforeBatch: func(ctx context.Context, p *toolkit.BatchPlan) {
			mu.Lock()
			if len(ran) != 0 {
				t.Errorf("calls ran before the batch hook: %v", ran)
			}
			mu.Unlock()
			for i := range p.Len() {
				c := p.Call(i)
				saw = append(saw, c.Name)
				switch {
				case c.Name == "delete" && p.Len() > 1:
					p.Decide(i, toolkit.Failure(events.StateDenied, errors.New("no deletes in a batch with other calls")))
				case c.Name == "write":
					p.Rewrite(i, "", json.RawMessage(`{"say":"rewritten"}`))
				case c.Name == "old_read":
					p.Rewrite(i, "read", nil)
				case c.Name == "cached":
					p.Decide(i, toolkit.Success(events.Text("from the cache")))
				}
			}
		},
		AfterBatch: func(ctx context.Context, b *toolkit.Batch, rs []toolkit.Result) { after = append(after, rs...) },
	})
	if err != nil {
		t.Fatal(err)
	}
	rs := testutil.Run(t, tk, "s",
		testutil.Call("1", "read", `{"say":"a"}`),
		testutil.Call("2", "delete", `{"say":"b"}`),
		testutil.Call("3", "write", `{"say":"c"}`),
		testutil.Call("4", "old_read", `{"say":"d"}`),
		testutil.Call("5", "cached", `{}`),
	)
	if strings.Join(saw, ",") != "read,delete,write,old_read,cached" {
		t.Fatalf("Before saw %v", saw)
	}
	wants := []struct {
		state events.State
		text  string
	}{
		{events.StateSuccess, "read: a"},
		{events.StateDenied, "Error: no deletes in a batch with other calls"},
		{events.StateSuccess, "write: rewritten"},
		{events.StateSuccess, "read: d"},
		{events.StateSuccess, "from the cache"},
	}
	for i, w := range wants {
		if rs[i].State != w.state || rs[i].Text() != w.text {
			t.Errorf("call %d: %s %q, want %s %q", i+1, rs[i].State, rs[i].Text(), w.state, w.text)
		}
	}
	if rs[3].Call.Name != "read" {
		t.Errorf("the renamed call reports name %q", rs[3].Call.Name)
	}
	if len(after) != len(rs) || after[1].State != events.StateDenied || after[0].Call.ID != "1" {
		t.Fatalf("After saw %d results: %+v", len(after), after)
	}
	mu.Lock()
	seen := strings.Join(ran, "|")
	mu.Unlock()
	if seen != `read {"say":"a"}|write {"say":"rewritten"}|read {"say":"d"}` {
		t.Fatalf("interceptors saw %q", seen)
	}
	// Removing the hook restores the plain path.
	if !tk.RemoveInterceptor("policy") || tk.RemoveInterceptor("policy") {
		t.Fatal("RemoveInterceptor")
	}
	rs = testutil.Run(t, tk, "s", testutil.Call("6", "delete", `{"say":"x"}`), testutil.Call("7", "read", `{}`))
	if rs[0].State != events.StateSuccess {
		t.Fatalf("after removal: %s %q", rs[0].State, rs[0].Text())
	}
}

// TestBatchHookSuspendAndCancel: a hook that waits for a decision on the
// whole batch makes each call appear suspended on Results; cancelling the
// batch ends its wait, and the calls are interrupted without running.
func TestBatchHookSuspendAndCancel(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, sayTool(t, "a", toolkit.Spec{}), sayTool(t, "b", toolkit.Spec{}))
	waiting := make(chan struct{})
	released := make(chan error, 1)
	_ = tk.Use(toolkit.Interceptor{Name: "ask", BeforeBatch: func(ctx context.Context, p *toolkit.BatchPlan) {
		p.Suspend()
		close(waiting)
		<-ctx.Done()
		released <- context.Cause(ctx)
	}})
	sess := testutil.Session(t, tk, "s")
	b := sess.Start(context.Background(), []toolkit.Call{testutil.Call("1", "a", `{}`), testutil.Call("2", "b", `{}`)})
	testutil.WaitFor(t, waiting, "the hook to wait")
	var suspended []string
	for r := range b.Results() {
		if !r.Final() {
			suspended = append(suspended, r.Call.ID)
			if len(suspended) == 2 {
				b.Cancel()
			}
			continue
		}
		if r.State != events.StateInterrupted || !errors.Is(r.Err, toolkit.ErrInterrupted) {
			t.Errorf("call %s: %s %v", r.Call.ID, r.State, r.Err)
		}
	}
	if strings.Join(suspended, ",") != "1,2" {
		t.Fatalf("suspended notices: %v", suspended)
	}
	if err := <-released; !errors.Is(err, context.Canceled) {
		t.Fatalf("the hook's context ended with %v", err)
	}
}

// TestApprovedReachesInterceptors: calls a batch hook approved say so to
// interceptors.
func TestApprovedReachesInterceptors(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, sayTool(t, "a", toolkit.Spec{}))
	var got []bool
	var mu sync.Mutex
	_ = tk.Use(toolkit.Interceptor{Name: "look", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		mu.Lock()
		got = append(got, inv.Approved())
		mu.Unlock()
		return next(ctx, inv)
	}})
	_ = tk.Use(toolkit.Interceptor{Name: "ok", BeforeBatch: func(_ context.Context, p *toolkit.BatchPlan) { p.Approve(1) }})
	testutil.Run(t, tk, "s", testutil.Call("1", "a", `{}`))
	testutil.Run(t, tk, "s", testutil.Call("2", "a", `{}`), testutil.Call("3", "a", `{}`))
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 || got[0] || got[1] == got[2] {
		t.Fatalf("Approved: %v", got)
	}
}

// TestReturnDirect: a batch stops the loop when all its calls succeeded on
// return-direct tools (Spring AI's all-calls rule), not when one failed or
// one is an ordinary tool.
func TestReturnDirect(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, sayTool(t, "answer", toolkit.Spec{ReturnDirect: true}), sayTool(t, "chart", toolkit.Spec{ReturnDirect: true}), sayTool(t, "plain", toolkit.Spec{}),
		testutil.Tool(t, toolkit.Spec{Name: "blank", ReturnDirect: true}, func(_ context.Context, in struct {
			Say string `json:"say"`
		}) (string, error) {
			return in.Say, nil
		}))
	sess := testutil.Session(t, tk, "s")
	cases := []struct {
		calls []toolkit.Call
		stop  bool
	}{
		{[]toolkit.Call{testutil.Call("1", "answer", `{"say":"42"}`)}, true},
		{[]toolkit.Call{testutil.Call("1", "answer", `{"say":"42"}`), testutil.Call("2", "chart", `{"say":"bars"}`)}, true},
		{[]toolkit.Call{testutil.Call("1", "answer", `{"say":"42"}`), testutil.Call("2", "plain", `{}`)}, false},
		{[]toolkit.Call{testutil.Call("1", "answer", `{"say":"fail"}`)}, false},
		{[]toolkit.Call{testutil.Call("1", "answer", `{"say":7}`)}, false},
		{[]toolkit.Call{testutil.Call("1", "plain", `{}`)}, false},
		// An empty or blank answer goes back to the model (Solon's rule).
		{[]toolkit.Call{testutil.Call("1", "blank", `{"say":""}`)}, false},
		{[]toolkit.Call{testutil.Call("1", "blank", `{"say":" \n "}`)}, false},
		{[]toolkit.Call{testutil.Call("1", "answer", `{"say":"42"}`), testutil.Call("2", "blank", `{"say":""}`)}, false},
		{[]toolkit.Call{testutil.Call("1", "blank", `{"say":"done"}`)}, true},
	}
	for i, tc := range cases {
		b := sess.Start(context.Background(), tc.calls)
		b.Wait()
		s, ok := b.Stop()
		if ok != tc.stop || ok && s.Reason != toolkit.StopReturnDirect {
			t.Errorf("case %d: Stop() = %+v, %v; want stop %v", i, s, ok, tc.stop)
		}
	}
}

// TestStopLoopFromInterceptor: an interceptor's request to stop is the
// batch's Stop, the first one winning, ahead of return-direct.
func TestStopLoopFromInterceptor(t *testing.T) {
	tk := testutil.Kit(t, toolkit.WithMaxParallel(1))
	testutil.Add(t, tk, sayTool(t, "answer", toolkit.Spec{ReturnDirect: true, ConcurrencySafe: true}))
	_ = tk.Use(toolkit.Interceptor{Name: "stopper", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		inv.StopLoop("budget", "spent "+inv.Call.ID)
		return next(ctx, inv)
	}})
	b := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("1", "answer", `{}`), testutil.Call("2", "answer", `{}`)})
	b.Wait()
	s, ok := b.Stop()
	if !ok || s.Reason != "budget" || s.Detail != "spent 1" || s.Call != "1" {
		t.Fatalf("Stop() = %+v, %v", s, ok)
	}
}

// TestBatchEndEvent: with WithBatchEndEvents, observers get one batch_end
// event per batch after its results, with every call's state and the stop.
func TestBatchEndEvent(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithObserver(rec), toolkit.WithBatchEndEvents())
	testutil.Add(t, tk, sayTool(t, "answer", toolkit.Spec{ReturnDirect: true}))
	b := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("1", "answer", `{"say":"x"}`), testutil.Call("2", "answer", `{"say":"y"}`)})
	b.Wait() // observers have the batch_end event when Wait returns
	all := rec.All()
	last := all[len(all)-1]
	if last.Type != events.TypeBatchEnd || last.Call != "" || last.Seq != 1 {
		t.Fatalf("last event: %s call %q seq %d", last.Type, last.Call, last.Seq)
	}
	body, err := events.DecodeBatchEnd(last)
	if err != nil {
		t.Fatal(err)
	}
	if body.Batch != b.ID() || len(body.Calls) != 2 || body.Calls[1].Call != "2" || body.Calls[1].State != events.StateSuccess ||
		body.Stop == nil || body.Stop.Reason != string(toolkit.StopReturnDirect) || body.DurationMS <= 0 {
		t.Fatalf("batch_end: %+v", body)
	}
	rec.Check(t)
	// The published schema holds batch_end data to its shape.
	bad := *last
	bad.Data = json.RawMessage(`{"batch":"b","calls":[{"call":"c","tool":"t","state":"suspended"}],"duration_ms":1}`)
	if err := testutil.ValidateEvent(events.AppendJSON(nil, &bad)); err == nil {
		t.Fatal("the schema accepts a batch_end with a call still suspended")
	}
	// Off by default.
	rec2 := &testutil.Recorder{}
	tk2 := testutil.Kit(t, toolkit.WithInlineObserver(rec2))
	testutil.Add(t, tk2, sayTool(t, "answer", toolkit.Spec{}))
	testutil.Run(t, tk2, "s", testutil.Call("1", "answer", `{}`))
	if n := len(rec2.OfType(events.TypeBatchEnd)); n != 0 {
		t.Fatalf("%d batch_end events without WithBatchEndEvents", n)
	}
}

// TestBatchHookPanics: a hook that panics loses nothing: the batch runs and
// ends as without it.
func TestBatchHookPanics(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, sayTool(t, "a", toolkit.Spec{}))
	_ = tk.Use(toolkit.Interceptor{Name: "bad",
		BeforeBatch: func(context.Context, *toolkit.BatchPlan) { panic("before") },
		AfterBatch:  func(context.Context, *toolkit.Batch, []toolkit.Result) { panic("after") }})
	rs := testutil.Run(t, tk, "s", testutil.Call("1", "a", `{"say":"hi"}`))
	if rs[0].State != events.StateSuccess || rs[0].Text() != "a: hi" {
		t.Fatalf("%s %q", rs[0].State, rs[0].Text())
	}
	if err := tk.Use(toolkit.Interceptor{Name: "empty"}); err == nil {
		t.Fatal("a hook with nothing to run was accepted")
	}
}

// TestInterceptorWithABatchPart: one interceptor may wrap calls and see
// whole batches; EnableInterceptor switches both parts and
// RemoveInterceptor removes both; Tools filters the calls it wraps, not the
// batches it sees.
func TestInterceptorWithABatchPart(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, sayTool(t, "a", toolkit.Spec{}), sayTool(t, "b", toolkit.Spec{}))
	var mu sync.Mutex
	var seen []string
	note := func(s string) { mu.Lock(); seen = append(seen, s); mu.Unlock() }
	err := tk.Use(toolkit.Interceptor{Name: "both", Tools: []string{"a"},
		BeforeBatch: func(_ context.Context, p *toolkit.BatchPlan) { note("before " + p.Call(0).Name) },
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
			note("call " + inv.Call.Name)
			return next(ctx, inv)
		},
		AfterBatch: func(_ context.Context, _ *toolkit.Batch, rs []toolkit.Result) { note("after " + rs[0].Text()) },
	})
	if err != nil {
		t.Fatal(err)
	}
	run := func(tool string) []string {
		mu.Lock()
		seen = nil
		mu.Unlock()
		testutil.Run(t, tk, "s", testutil.Call("1", tool, `{"say":"hi"}`))
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
	if got := strings.Join(run("a"), "|"); got != "before a|call a|after a: hi" {
		t.Fatalf("a: %s", got)
	}
	if got := strings.Join(run("b"), "|"); got != "before b|after b: hi" {
		t.Fatalf("b (not in Tools): %s", got)
	}
	if err := tk.EnableInterceptor("both", false); err != nil {
		t.Fatal(err)
	}
	if got := run("a"); len(got) != 0 {
		t.Fatalf("switched off, it still saw %v", got)
	}
	if err := tk.EnableInterceptor("both", true); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(run("a"), "|"); got != "before a|call a|after a: hi" {
		t.Fatalf("switched on again: %s", got)
	}
	if !tk.RemoveInterceptor("both") {
		t.Fatal("RemoveInterceptor: not found")
	}
	if got := run("a"); len(got) != 0 {
		t.Fatalf("removed, it still saw %v", got)
	}
}
