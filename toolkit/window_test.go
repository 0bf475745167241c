package toolkit_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/leak"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// await waits for ch, for at most 5 s (then the test fails: the batch hangs
// on the hold, not on the engine).
func await(t *testing.T, ch <-chan struct{}, what string) {
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Errorf("%s did not happen within 5 s", what)
	}
}

// resultSeen is an inline observer that closes seen when call id's result
// goes out.
func resultSeen(id string) (toolkit.Observer, <-chan struct{}) {
	seen := make(chan struct{})
	var once sync.Once
	return toolkit.ObserverFunc(func(ev *events.Event) {
		if ev.Call == id && ev.Type == events.TypeResult {
			once.Do(func() { close(seen) })
		}
	}), seen
}

// TestStuckHandlersOnEveryRunner: in a parallel stage, handlers that ignore
// their context hold every runner, the driver and a pool runner. At their
// deadline plus the grace period both calls are reported, and the call
// waiting behind them (no timeout, so still in time) runs on other
// goroutines: the driver's place is taken over (takeOver), the pool
// runner's slot given up (makeWay). The batch ends while both handlers are
// still stuck, and nothing is left running once they return. (The deadline
// leaves the pool runner 200 ms to start; one that started later would find
// its call timed out without running: the same results.)
func TestStuckHandlersOnEveryRunner(t *testing.T) {
	t.Cleanup(leak.Check(t))
	entered := make(chan struct{}, 2)
	tk := testutil.Kit(t, toolkit.WithMaxParallel(2), toolkit.WithCancelGrace(10*time.Millisecond))
	release := releaseAtEnd(t)
	var ran atomic.Int32
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "deaf", ConcurrencySafe: true, Timeout: 200 * time.Millisecond}, func(context.Context, none) (string, error) {
		entered <- struct{}{}
		<-release // ignores its context
		return "too late", nil
	}), testutil.Tool(t, toolkit.Spec{Name: "quick", ConcurrencySafe: true}, func(context.Context, none) (string, error) {
		ran.Add(1)
		return "quick ran", nil
	}))
	b := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{
		testutil.Call("1", "deaf", `{}`), testutil.Call("2", "deaf", `{}`), testutil.Call("3", "quick", `{}`)})
	select {
	case <-b.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the batch did not end while both runners were stuck")
	}
	rs := b.Wait()
	for _, r := range rs[:2] {
		if r.State != events.StateTimeout || !strings.HasPrefix(r.Text(), `Error: tool "deaf" timed out after 200ms`) {
			t.Errorf("call %s: %s %q", r.Call.ID, r.State, r.Text())
		}
	}
	if rs[2].State != events.StateSuccess || rs[2].Text() != "quick ran" || ran.Load() != 1 {
		t.Errorf("the call behind them: %s %q", rs[2].State, rs[2].Text())
	}
	<-entered // the driver's handler, at least, held a runner
	close(release)
}
