package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/toolkit"
)

// echoIn is the benchmarks' five-field input.
type echoIn struct {
	ID    int      `json:"id"`
	Name  string   `json:"name"`
	Tags  []string `json:"tags"`
	Score float64  `json:"score"`
	OK    bool     `json:"ok"`
}

func echoTool() *toolkit.Tool {
	return toolkit.MustTool(toolkit.Spec{Name: "echo", ReadOnly: true, ConcurrencySafe: true},
		func(_ context.Context, in echoIn) (echoIn, error) { return in, nil })
}

const echoArgs = `{"id":7,"name":"seven","tags":["a","b"],"score":0.5,"ok":true}`

// TestSpikeWaits: 1,000 sessions each run a batch of 4 calls at once
// against two workers with the default limits (64 calls running each): the
// calls above the limits wait in the workers' queues and every one
// succeeds. Before, a call that found its worker busy was refused, sent
// again three times and failed: 61-63% of them did (the figure).
func TestSpikeWaits(t *testing.T) {
	sessions := 1000
	if testing.Short() {
		sessions = 200
	}
	bus := natstest.Bus(t)
	var ran atomic.Int64
	for range 2 {
		wk := testutil.Kit(t)
		testutil.Add(t, wk, toolkit.MustTool(toolkit.Spec{Name: "echo", ReadOnly: true, ConcurrencySafe: true},
			func(_ context.Context, in echoIn) (echoIn, error) {
				ran.Add(1)
				time.Sleep(time.Millisecond) // a little work: the slots fill
				return in, nil
			}))
		serve(t, bus, wk)
	}
	c := remote.NewClient(conn(t, bus))
	agent := testutil.Kit(t)
	testutil.Add(t, agent, discover(t, c, 1)...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := map[string]int{}
	for s := range sessions {
		wg.Go(func() {
			sess, err := agent.Session(fmt.Sprint("s", s))
			if err != nil {
				t.Error(err)
				return
			}
			defer sess.Close()
			calls := make([]toolkit.Call, 4)
			for i := range calls {
				calls[i] = toolkit.Call{ID: fmt.Sprint("c", i), Name: "echo", Args: json.RawMessage(echoArgs)}
			}
			for _, r := range sess.Run(ctx, calls) {
				if r.State != events.StateSuccess {
					mu.Lock()
					failed[r.Text()]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("failed calls, by error: %v", failed)
	}
	if n := ran.Load(); n != int64(4*sessions) {
		t.Fatalf("the tool ran %d times for %d calls", n, 4*sessions)
	}
	if st := c.Stats(); st.Resent != 0 || st.Dropped != 0 {
		t.Errorf("client stats %+v: the queues should have held the spike", st)
	}
}

// TestQueueOrderAndDeadline: the calls above MaxInFlight wait in the order
// they came; one whose deadline passes while it waits ends as a timeout
// that says it never ran, and one cancelled while it waits ends
// interrupted, never having run.
func TestQueueOrderAndDeadline(t *testing.T) {
	bus := natstest.Bus(t)
	var mu sync.Mutex
	var order []string
	release := make(chan struct{})
	started := make(chan struct{}, 16)
	wk := testutil.Kit(t)
	testutil.Add(t, wk, toolkit.MustTool(toolkit.Spec{Name: "hold", ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (string, error) {
		info, _ := toolkit.CallInfoFrom(ctx)
		mu.Lock()
		order = append(order, info.Session)
		mu.Unlock()
		started <- struct{}{}
		select {
		case <-release:
			return "done", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}))
	w := serve(t, bus, wk, remote.WithMaxInFlight(1))
	c := remote.NewClient(conn(t, bus))
	tools := discover(t, c, 1)
	agent := testutil.Kit(t)
	testutil.Add(t, agent, tools...)
	hasty := testutil.Kit(t, toolkit.WithDefaultTimeout(time.Second))
	testutil.Add(t, hasty, tools...)
	run := func(session string, timeout time.Duration) *toolkit.Batch {
		kit := agent
		if timeout > 0 {
			kit = hasty
		}
		return testutil.Session(t, kit, session).Start(context.Background(), []toolkit.Call{testutil.Call("c", "hold", `{}`)})
	}
	first := run("s0", 0)
	testutil.WaitFor(t, started, "the first call to run")
	waitQueued := func(n int64) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); w.Stats().Queued != n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d calls wait, want %d", w.Stats().Queued, n)
			}
		}
	}
	second := run("s1", 0)
	waitQueued(1)
	late := run("late", time.Second)
	waitQueued(2)
	third := run("s2", 0)
	waitQueued(3)
	cancelled := run("gone", 0)
	waitQueued(4)
	cancelled.Cancel()
	if r := cancelled.Wait()[0]; r.State != events.StateInterrupted || !strings.Contains(r.Text(), "never ran") {
		t.Fatalf("cancelled while waiting: %s %q", r.State, r.Text())
	}
	if r := late.Wait()[0]; r.State != events.StateTimeout || !strings.Contains(r.Text(), "never ran") {
		t.Fatalf("past its deadline while waiting: %s %q", r.State, r.Text())
	}
	waitQueued(2)
	close(release)
	for _, b := range []*toolkit.Batch{first, second, third} {
		if r := b.Wait()[0]; r.State != events.StateSuccess {
			t.Fatalf("%s %q", r.State, r.Text())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(order, " ") != "s0 s1 s2" {
		t.Fatalf("ran in the order %v", order)
	}
}

// TestStopHandsBackWaitingCalls: a worker that stops hands the calls that
// wait in its queue back to their callers, which send them again: another
// worker runs them, once.
func TestStopHandsBackWaitingCalls(t *testing.T) {
	bus := natstest.Bus(t)
	var runs sync.Map
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	kit := func() *toolkit.Toolkit {
		wk := testutil.Kit(t)
		testutil.Add(t, wk, toolkit.MustTool(toolkit.Spec{Name: "hold", ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (string, error) {
			info, _ := toolkit.CallInfoFrom(ctx)
			n, _ := runs.LoadOrStore(info.Session, new(atomic.Int32))
			n.(*atomic.Int32).Add(1)
			started <- struct{}{}
			if info.Session == "s0" {
				<-release
			}
			return "done", nil
		}))
		return wk
	}
	a := serve(t, bus, kit(), remote.WithMaxInFlight(1))
	c := remote.NewClient(conn(t, bus))
	agent := testutil.Kit(t)
	testutil.Add(t, agent, discover(t, c, 1)...)
	first := testutil.Session(t, agent, "s0").Start(context.Background(), []toolkit.Call{testutil.Call("c", "hold", `{}`)})
	testutil.WaitFor(t, started, "the first call to run")
	waiting := testutil.Session(t, agent, "s1").Start(context.Background(), []toolkit.Call{testutil.Call("c", "hold", `{}`)})
	for deadline := time.Now().Add(5 * time.Second); a.Stats().Queued != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second call does not wait on worker A")
		}
	}
	b := serve(t, bus, kit())
	stopped := make(chan error, 1)
	go func() { stopped <- a.Stop(context.Background()) }()
	r := waiting.Wait()[0]
	if r.State != events.StateSuccess || r.Meta[remote.MetaWorker] != b.ID() {
		t.Fatalf("the call handed back: %s %q on %v", r.State, r.Text(), r.Meta[remote.MetaWorker])
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if r := first.Wait()[0]; r.State != events.StateSuccess || r.Meta[remote.MetaWorker] != a.ID() {
		t.Fatalf("the running call: %s %q", r.State, r.Text())
	}
	runs.Range(func(k, v any) bool {
		if n := v.(*atomic.Int32).Load(); n != 1 {
			t.Errorf("session %v: the tool ran %d times", k, n)
		}
		return true
	})
	if st := c.Stats(); st.Resent != 1 {
		t.Errorf("client stats %+v", st)
	}
}

// TestQueueBounds: a worker holds at most WithMaxQueued calls, and at most
// WithMaxQueuedBytes of their arguments, waiting for a slot; the next one is
// refused at once (503, with the worker's count) and, with
// WithBusyRetries(0), fails with ErrBusy, never having run.
func TestQueueBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []remote.WorkerOption
		args string // the third call's
	}{
		{"count", []remote.WorkerOption{remote.WithMaxInFlight(1), remote.WithMaxQueued(1)}, `{}`},
		{"bytes", []remote.WorkerOption{remote.WithMaxInFlight(1), remote.WithMaxQueuedBytes(64)}, `{"pad":"` + strings.Repeat("x", 64) + `"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bus := natstest.Bus(t)
			b := newBlock()
			wk := testutil.Kit(t)
			testutil.Add(t, wk, toolkit.MustTool(toolkit.Spec{Name: "hold", ConcurrencySafe: true}, func(ctx context.Context, _ map[string]any) (string, error) {
				b.started <- struct{}{}
				select {
				case <-b.release:
					return "released", nil
				case <-ctx.Done():
					return "", ctx.Err()
				}
			}))
			w := serve(t, bus, wk, tc.opts...)
			c := remote.NewClient(conn(t, bus), remote.WithBusyRetries(0))
			agent := testutil.Kit(t)
			testutil.Add(t, agent, discover(t, c, 1)...)
			first := testutil.Session(t, agent, "s0").Start(context.Background(), []toolkit.Call{testutil.Call("c", "hold", `{}`)})
			testutil.WaitFor(t, b.started, "the first call to run")
			second := testutil.Session(t, agent, "s1").Start(context.Background(), []toolkit.Call{testutil.Call("c", "hold", `{}`)})
			for deadline := time.Now().Add(5 * time.Second); w.Stats().Queued != 1; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the second call does not wait")
				}
			}
			// Were it queued, the call would wait for the release: 5 s end it.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			r := testutil.Session(t, agent, "s2").Run(ctx, []toolkit.Call{testutil.Call("c", "hold", tc.args)})[0]
			if !errors.Is(r.Err, remote.ErrBusy) || !strings.Contains(r.Text(), "1 calls running and 1 waiting, its limits") {
				t.Fatalf("the call past the queue: %s %q", r.State, r.Text())
			}
			close(b.release)
			for _, bt := range []*toolkit.Batch{first, second} {
				if r := bt.Wait()[0]; r.State != events.StateSuccess {
					t.Fatalf("%s %q", r.State, r.Text())
				}
			}
			if st := w.Stats(); st.Calls != 2 || st.Refused != 1 {
				t.Fatalf("worker stats %+v", st)
			}
		})
	}
}
