package natsbus_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// takeGate is an inline observer and progress gate that takes the progress
// events take says, given how many times it was asked (from 1).
type takeGate struct {
	take  func(asked int64) bool
	asked atomic.Int64
}

func (g *takeGate) AcceptProgress() bool  { return g.take(g.asked.Add(1)) }
func (g *takeGate) Observe(*events.Event) {}

// TestStatsMatchWhatNATSDelivered: calls report progress much faster than
// the publisher (a queue of 16) can publish it, with the publisher as the
// toolkit's only observer or beside another progress gate, asked after it
// or before it. Whatever the gates decide, a NATS subscriber gets, per
// call, progress events and drop counts that add up to what the tool
// reported, and the publisher's Stats.DroppedProgress is the sum of the
// counts it told: each progress event it did not publish counted once.
func TestStatsMatchWhatNATSDelivered(t *testing.T) {
	const calls, lines = 8, 2000
	gates := []struct {
		name  string
		take  func(int64) bool
		first bool // asked before the publisher
	}{
		{name: "publisher alone"},
		{name: "then a gate that takes all", take: func(int64) bool { return true }},
		{name: "then a gate that takes every other", take: func(n int64) bool { return n%2 == 0 }},
		{name: "then a gate that takes none", take: func(int64) bool { return false }},
		{name: "after a gate that takes every third", take: func(n int64) bool { return n%3 == 0 }, first: true},
	}
	for _, gc := range gates {
		t.Run(gc.name, func(t *testing.T) {
			// Pressure depends on the scheduler: on a loaded machine the
			// publisher can keep up with a whole run. The sums are checked
			// on every attempt; only the pressure is tried again.
			for attempt := 1; ; attempt++ {
				told := statsRun(t, gc.take, gc.first, calls, lines)
				if told > 0 {
					t.Logf("%d of %d progress events dropped (attempt %d)", told, calls*lines, attempt)
					return
				}
				if attempt == 5 {
					t.Fatal("nothing was dropped in 5 runs: the test did not put the publisher under pressure")
				}
			}
		})
	}
}

// statsRun runs calls calls that each report lines progress events through
// a publisher with a queue of 16, with a gate that takes what take says
// (none when nil), asked before the publisher when first. It checks the
// sums and returns how many drops the events on NATS told.
func statsRun(t *testing.T, take func(int64) bool, first bool, calls, lines int) uint64 {
	t.Helper()
	bus := natstest.Bus(t, natsbus.WithPublisherQueue(16))
	pub := bus.Publisher()
	var opts []toolkit.Option
	if take != nil {
		g := toolkit.WithInlineObserver(&takeGate{take: take})
		if first {
			opts = append(opts, g, toolkit.WithInlineObserver(pub))
		} else {
			opts = append(opts, toolkit.WithInlineObserver(pub), g)
		}
	} else {
		opts = append(opts, toolkit.WithInlineObserver(pub))
	}
	tk := toolkit.New(opts...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		tk.Close(ctx)
	})
	if err := tk.Add(toolkit.MustTool(toolkit.Spec{Name: "reporter", ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (string, error) {
		em := stream.From(ctx)
		for i := range lines {
			em.Step("PROGRESS item", i+1, lines)
			if i%8 == 0 {
				runtime.Gosched() // let the publisher catch up now and then: some queued, some dropped
			}
		}
		return "done", nil
	})); err != nil {
		t.Fatal(err)
	}
	col := subscribe(t, bus, bus.Subjects().Session("stats"))
	sess, _ := tk.Session("stats")
	runCalls(t, sess, "reporter", calls)
	evs := col.waitUntil(t, "every result on NATS", func(evs []*events.Event) bool { return countType(evs, events.TypeResult) == calls })
	var told uint64
	for key, list := range checkCalls(t, evs) {
		var received, callTold uint64
		for _, ev := range list {
			switch ev.Type {
			case events.TypeProgress:
				received++
				callTold += ev.Progress.Dropped
			case events.TypeResult:
				callTold += ev.Result.Dropped
			}
		}
		if received+callTold != uint64(lines) {
			t.Errorf("%s: %d progress events on NATS and %d told dropped: %d, the tool reported %d", key, received, callTold, received+callTold, lines)
		}
		told += callTold
	}
	if s := pub.Stats(); s.DroppedProgress != told {
		t.Fatalf("Stats.DroppedProgress = %d, but the events on NATS told %d drops", s.DroppedProgress, told)
	}
	return told
}

// runCalls runs n calls of tool, call-0 to call-n-1, in one batch of sess
// and fails unless each succeeds.
func runCalls(t testing.TB, sess *toolkit.Session, tool string, n int) {
	t.Helper()
	batch := make([]toolkit.Call, n)
	for i := range batch {
		batch[i] = toolkit.Call{ID: fmt.Sprintf("call-%d", i), Name: tool}
	}
	for _, r := range sess.Run(context.Background(), batch) {
		if r.State != events.StateSuccess {
			t.Fatalf("%s: %s %v", r.Call.ID, r.State, r.Err)
		}
	}
}
