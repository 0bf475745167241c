package toolkit_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// TestWithResult: a call given its outcome at Start never runs (no
// interceptor, no handler), batch hooks find it decided, its events are a
// start, its content and its result like any call's; indexes outside the
// batch are ignored and a malformed call keeps its own failure. Run takes
// the option as Start does.
func TestWithResult(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(rec))
	var mu sync.Mutex
	var ran, intercepted []string
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "write"}, func(ctx context.Context, in struct{}) (string, error) {
		info, _ := toolkit.CallInfoFrom(ctx)
		mu.Lock()
		ran = append(ran, info.CallID)
		mu.Unlock()
		return "written", nil
	}))
	_ = tk.Use(toolkit.Interceptor{Name: "note", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		mu.Lock()
		intercepted = append(intercepted, inv.Call.ID)
		mu.Unlock()
		return next(ctx, inv)
	}})
	var decided []bool
	if err := tk.Use(toolkit.Interceptor{Name: "look", BeforeBatch: func(ctx context.Context, p *toolkit.BatchPlan) {
		decided = decided[:0]
		for i := range p.Len() {
			decided = append(decided, p.Decided(i))
		}
	}}); err != nil {
		t.Fatal(err)
	}
	cut := errors.New("your reply was cut: call write again")
	sess := testutil.Session(t, tk, "s")
	rs := sess.Start(context.Background(), []toolkit.Call{
		testutil.Call("1", "write", `{}`),
		testutil.Call("2", "write", `{"half":`),
		testutil.Call("3", "nosuchtool", `{}`),
		testutil.Call("1", "write", `{}`), // a duplicate id: malformed
	},
		toolkit.WithResult(1, toolkit.Failure(events.StateError, cut)),
		toolkit.WithResult(2, toolkit.Success(events.Text("from the cache"))),
		toolkit.WithResult(3, toolkit.Success(events.Text("must not win"))),
		toolkit.WithResult(-1, toolkit.Success()), toolkit.WithResult(4, toolkit.Success()), nil,
	).Wait()

	if !slices.Equal(decided, []bool{false, true, true, false}) {
		t.Errorf("the batch hook saw decided %v", decided)
	}
	if !slices.Equal(ran, []string{"1"}) || !slices.Equal(intercepted, []string{"1"}) {
		t.Errorf("ran %v, intercepted %v: only call 1 should", ran, intercepted)
	}
	if rs[0].State != events.StateSuccess || rs[0].Text() != "written" {
		t.Errorf("call 1: %s %q", rs[0].State, rs[0].Text())
	}
	if rs[1].State != events.StateError || !errors.Is(rs[1].Err, cut) || rs[1].Text() != "Error: "+cut.Error() {
		t.Errorf("call 2: %s %q %v", rs[1].State, rs[1].Text(), rs[1].Err)
	}
	if rs[2].State != events.StateSuccess || rs[2].Text() != "from the cache" {
		t.Errorf("call 3: %s %q", rs[2].State, rs[2].Text())
	}
	if !errors.Is(rs[3].Err, toolkit.ErrInvalidCall) {
		t.Errorf("the malformed call: %s %v", rs[3].State, rs[3].Err)
	}
	for i, id := range []string{"2", "3"} {
		if got := testutil.Types(rec.Of(id)); !slices.Equal(got, []events.Type{events.TypeStart, events.TypeDelta, events.TypeResult}) {
			t.Errorf("call %s's events: %v", id, got)
		}
		testutil.CheckDeltasAddUp(t, rec, rs[i+1])
	}
	rec.Check(t)

	rs = sess.Run(context.Background(), []toolkit.Call{testutil.Call("r", "write", `{}`)},
		toolkit.WithResult(0, toolkit.Failure(events.StateDenied, cut)))
	if rs[0].State != events.StateDenied || !errors.Is(rs[0].Err, cut) || len(ran) != 1 {
		t.Errorf("Run: %s %v, ran %v", rs[0].State, rs[0].Err, ran)
	}
}

// TestWithResultLaterHookDecides: a batch hook may decide a call given its
// outcome at Start otherwise (as WithResult's godoc says): the hook's
// outcome is the result, and the call still does not run.
func TestWithResultLaterHookDecides(t *testing.T) {
	tk := testutil.Kit(t)
	ran := false
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "write"}, func(context.Context, struct{}) (string, error) {
		ran = true
		return "written", nil
	}))
	if err := tk.Use(toolkit.Interceptor{Name: "override", BeforeBatch: func(ctx context.Context, p *toolkit.BatchPlan) {
		if p.Decided(0) {
			p.Decide(0, toolkit.Success(events.Text("the hook's")))
		}
	}}); err != nil {
		t.Fatal(err)
	}
	rs := testutil.Session(t, tk, "s").Run(context.Background(), []toolkit.Call{testutil.Call("1", "write", `{}`)},
		toolkit.WithResult(0, toolkit.Failure(events.StateError, errors.New("the caller's"))))
	if rs[0].State != events.StateSuccess || rs[0].Text() != "the hook's" || ran {
		t.Errorf("%s %q (ran %v), want success %q without running", rs[0].State, rs[0].Text(), ran, "the hook's")
	}
}
