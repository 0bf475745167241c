package toolkit_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/leak"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// TestDecidedCallNeverTimesOut: a call that runs nothing (its outcome given
// with WithOutcome or by a batch hook, or one that fails before running,
// such as a duplicate id) has nothing to time out: when its deadline passes
// while it waits for a slot behind calls that hold every runner, it still
// ends with its own outcome (the denial, the cut call's message, the
// duplicate id), with the usual events (a start, its content, its result),
// not as a timeout "waiting for a free slot" that would hide the decision
// from the model.
func TestDecidedCallNeverTimesOut(t *testing.T) {
	t.Cleanup(leak.Check(t))
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithMaxParallel(2), toolkit.WithCancelGrace(20*time.Millisecond), toolkit.WithObserver(rec))
	release := releaseAtEnd(t)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "deaf", ConcurrencySafe: true, Timeout: 100 * time.Millisecond}, func(context.Context, none) (string, error) {
		<-release // ignores its context: both runners are held past the deadline
		return "too late", nil
	}))
	denied := errors.New("a person said no")
	cut := errors.New("your reply was cut: call deaf again")
	if err := tk.Use(toolkit.Interceptor{Name: "approve", BeforeBatch: func(_ context.Context, p *toolkit.BatchPlan) {
		p.Decide(2, toolkit.Failure(events.StateDenied, denied))
	}}); err != nil {
		t.Fatal(err)
	}
	b := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{
		testutil.Call("1", "deaf", `{}`), testutil.Call("2", "deaf", `{}`),
		testutil.Call("3", "deaf", `{}`), testutil.Call("4", "deaf", `{}`), testutil.Call("1", "deaf", `{}`),
	}, toolkit.WithOutcome(3, toolkit.Failure(events.StateError, cut)))
	select {
	case <-b.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the batch did not end")
	}
	rs := b.Wait()
	for _, r := range rs[:2] {
		if r.State != events.StateTimeout {
			t.Errorf("call %s: %s %v", r.Call.ID, r.State, r.Err)
		}
	}
	if r := rs[2]; r.State != events.StateDenied || !errors.Is(r.Err, denied) || !strings.Contains(r.Text(), denied.Error()) {
		t.Errorf("the denied call: %s %v %q", r.State, r.Err, r.Text())
	}
	if r := rs[3]; r.State != events.StateError || !errors.Is(r.Err, cut) || r.Text() != "Error: "+cut.Error() {
		t.Errorf("the call given its outcome: %s %v %q", r.State, r.Err, r.Text())
	}
	if r := rs[4]; !errors.Is(r.Err, toolkit.ErrInvalidCall) || !strings.Contains(r.Text(), "duplicate call id") {
		t.Errorf("the duplicate id: %s %v %q", r.State, r.Err, r.Text())
	}
	for _, i := range []int{2, 3} {
		if got := testutil.Types(rec.Of(rs[i].Call.ID)); !slices.Equal(got, []events.Type{events.TypeStart, events.TypeDelta, events.TypeResult}) {
			t.Errorf("call %s's events: %v", rs[i].Call.ID, got)
		}
	}
	close(release)
}
