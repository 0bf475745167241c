package interceptors_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// Calls that gave up waiting for their turn (their batch was cancelled)
// give their turns back: the next call waits for the next token, not for
// the turns of every call that left. With x/time/rate's reservations, a
// cancelled reservation that others were made after restores nothing, so
// each cancelled waiter cost the tool one turn for good.
func TestRateLimitCancelledWaitersGiveTheirTurnsBack(t *testing.T) {
	const every = 250 * time.Millisecond
	entered := make(chan struct{}, 16)
	signal := toolkit.Interceptor{Name: "signal", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		entered <- struct{}{}
		return next(ctx, inv)
	}}
	tk := icKit(t, nil, signal, interceptors.RateLimit(map[string]rate.Limit{"search": rate.Every(every)}, 1))
	var ran icCounter
	testutil.Add(t, tk, rateTool(t, "search", &ran))
	if r := icRun(t, testutil.Session(t, tk, "s0"), testutil.Call("c0", "search", `{}`)); r.State != events.StateSuccess {
		t.Fatalf("first call: %s %v", r.State, r.Err)
	}
	<-entered
	start := time.Now()
	var cancels []context.CancelFunc
	var runs []*toolkit.Batch
	for i := range 4 {
		ctx, cancel := context.WithCancel(context.Background())
		cancels = append(cancels, cancel)
		runs = append(runs, testutil.Session(t, tk, fmt.Sprint("w", i)).Start(ctx, []toolkit.Call{testutil.Call("w", "search", `{}`)}))
		<-entered
		time.Sleep(10 * time.Millisecond) // it took its place in the queue (microseconds after entering)
	}
	for i, cancel := range cancels {
		cancel()
		testutil.WaitFor(t, runs[i].Done(), "a cancelled waiter to end")
		if r := runs[i].Wait()[0]; r.State != events.StateInterrupted {
			t.Fatalf("waiter %d: %s, want interrupted", i, r.State)
		}
	}
	r := icRun(t, testutil.Session(t, tk, "late"), testutil.Call("c9", "search", `{}`))
	took := time.Since(start)
	if r.State != events.StateSuccess || ran.get() != 2 {
		t.Fatalf("late call: %s %v, ran %d", r.State, r.Err, ran.get())
	}
	if took > 3*every {
		t.Fatalf("the call after four cancelled waiters ran %v after them, want about %v (one token)", took.Round(time.Millisecond), every)
	}
}
