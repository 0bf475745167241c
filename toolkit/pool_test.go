package toolkit_test

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// poolWorkers counts the goroutines of toolkits' pools.
func poolWorkers() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Count(buf[:n], []byte("toolkit.(*pool).work("))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// TestIdleWorkersBounded: after a burst of 300 calls running at once, the
// pool keeps at most 256 idle goroutines: the others exit (a toolkit that
// ran a huge batch once does not hold its goroutines for ever).
func TestIdleWorkersBounded(t *testing.T) {
	const n = 300
	tk := testutil.Kit(t, toolkit.WithMaxParallel(n))
	var all sync.WaitGroup
	all.Add(n)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "meet", ConcurrencySafe: true}, func(context.Context, none) (string, error) {
		all.Done()
		all.Wait() // every call runs at once: n runners
		return "", nil
	}))
	calls := make([]toolkit.Call, n)
	for i := range calls {
		calls[i] = testutil.Call(itoa(i), "meet", `{}`)
	}
	for _, r := range testutil.Run(t, tk, "s", calls...) {
		if r.State != events.StateSuccess {
			t.Fatalf("call %s: %s %v", r.Call.ID, r.State, r.Err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for poolWorkers() > 256 {
		if time.Now().After(deadline) {
			t.Fatalf("%d pool goroutines 5 s after the batch, want at most 256", poolWorkers())
		}
		runtime.Gosched()
	}
}

// TestDerivedToolkitOwnObservers: a toolkit derived from one without
// observers reports its batches to its own observers.
func TestDerivedToolkitOwnObservers(t *testing.T) {
	parent := testutil.Kit(t)
	rec := &testutil.Recorder{}
	kid := parent.Derive(toolkit.WithInlineObserver(rec))
	t.Cleanup(func() { kid.Close(context.Background()) })
	testutil.Add(t, kid, testutil.Tool(t, toolkit.Spec{Name: "a"}, func(context.Context, none) (string, error) { return "a", nil }))
	testutil.Run(t, kid, "s", testutil.Call("1", "a", `{}`))
	if got := testutil.Types(rec.Of("1")); len(got) != 3 || got[2] != events.TypeResult {
		t.Errorf("the derived toolkit's observer saw %v", got)
	}
	rec.Check(t)
}

// TestZeroFlushTimeout: with a flush timeout of zero a batch reports its
// results without waiting for a slow asynchronous observer, which still
// gets every event later.
func TestZeroFlushTimeout(t *testing.T) {
	release := make(chan struct{})
	got := make(chan events.Type, 16)
	tk := testutil.Kit(t, toolkit.WithFlushTimeout(0), toolkit.WithObserver(toolkit.ObserverFunc(func(ev *events.Event) {
		<-release
		got <- ev.Type
	})))
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "a"}, func(context.Context, none) (string, error) { return "a", nil }))
	b := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("1", "a", `{}`)})
	select {
	case <-b.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the batch waited for a slow observer with a flush timeout of zero")
	}
	close(release)
	for want := range 3 {
		select {
		case typ := <-got:
			if want == 2 && typ != events.TypeResult {
				t.Errorf("the last event is %s", typ)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("the observer got %d events, want 3", want)
		}
	}
}

// TestCloseAfterAMiddleBatchEnded: of three batches running at once, the
// middle one ends first; Toolkit.Close still finds and interrupts the two
// others (ErrClosed) and returns once they are done.
func TestCloseAfterAMiddleBatchEnded(t *testing.T) {
	tk := toolkit.New()
	entered := make(chan string, 3)
	releaseB := make(chan struct{})
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "wait"}, func(ctx context.Context, _ none) (string, error) {
		info, _ := toolkit.CallInfoFrom(ctx)
		entered <- info.CallID
		if info.CallID == "B" {
			<-releaseB
			return "B done", nil
		}
		<-ctx.Done()
		return "", ctx.Err()
	}))
	s := testutil.Session(t, tk, "s")
	var bs []*toolkit.Batch
	for _, id := range []string{"A", "B", "C"} {
		bs = append(bs, s.Start(context.Background(), []toolkit.Call{testutil.Call(id, "wait", `{}`)}))
		if got := <-entered; got != id {
			t.Fatalf("call %s ran, want %s", got, id)
		}
	}
	close(releaseB)
	testutil.WaitFor(t, bs[1].Done(), "the middle batch to end")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tk.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i, b := range bs {
		r := b.Wait()[0]
		if i == 1 {
			if r.State != events.StateSuccess {
				t.Errorf("B: %s %v", r.State, r.Err)
			}
			continue
		}
		if r.State != events.StateInterrupted || !errors.Is(r.Err, toolkit.ErrClosed) {
			t.Errorf("%s: %s %v", r.Call.ID, r.State, r.Err)
		}
	}
}
