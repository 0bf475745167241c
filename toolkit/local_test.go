package toolkit_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// localCalls returns n calls of the echo tool (concurrency-safe), ids c0...
func localCalls(n int) []toolkit.Call {
	calls := make([]toolkit.Call, n)
	for i := range calls {
		calls[i] = testutil.Call(fmt.Sprint("c", i), "echo", `{}`)
	}
	return calls
}

// TestBatchLocalSharedByConcurrentCalls: the calls of one batch, running at
// once, share one value of a batch local, made by one init (the others wait
// for it); the batch's Before hook finds none yet, and the next batch gets
// a value of its own.
func TestBatchLocalSharedByConcurrentCalls(t *testing.T) {
	const n = 8
	tk := testutil.Kit(t)
	testutil.Add(t, tk, echoTool(t))
	hits := toolkit.NewBatchLocal[*atomic.Int32]()
	var inits atomic.Int32
	var arrived atomic.Int32
	var all, release chan struct{}
	var mu sync.Mutex
	var values []*atomic.Int32
	if err := tk.Use(toolkit.Interceptor{Name: "plan", BeforeBatch: func(ctx context.Context, p *toolkit.BatchPlan) {
		if _, ok := hits.Get(p); ok {
			t.Error("the Before hook found a value before any call ran")
		}
	}}); err != nil {
		t.Fatal(err)
	}
	if err := tk.Use(toolkit.Interceptor{Name: "count", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		if arrived.Add(1)%n == 0 {
			close(all)
		}
		testutil.WaitFor(t, all, "every call of the batch in the interceptor at once")
		c := hits.LoadOrInit(inv, func() *atomic.Int32 {
			inits.Add(1)
			<-release // the other calls wait for this init meanwhile
			return new(atomic.Int32)
		})
		c.Add(1)
		mu.Lock()
		values = append(values, c)
		mu.Unlock()
		return next(ctx, inv)
	}}); err != nil {
		t.Fatal(err)
	}
	s := testutil.Session(t, tk, "s")
	var first *atomic.Int32
	for round := range 2 {
		all, release = make(chan struct{}), make(chan struct{})
		values = nil
		b := s.Start(context.Background(), localCalls(n))
		testutil.WaitFor(t, all, "the calls")
		waitInLoadOrInit(t, n) // one in init, the others waiting for it
		close(release)
		b.Wait()
		if got := inits.Load(); got != int32(round+1) {
			t.Fatalf("batch %d: init ran %d times in all, want %d (once per batch)", round, got, round+1)
		}
		mu.Lock()
		for _, v := range values {
			if v != values[0] {
				t.Fatalf("batch %d: calls got different values", round)
			}
		}
		if len(values) != n || values[0].Load() != n {
			t.Fatalf("batch %d: %d calls counted %d", round, len(values), values[0].Load())
		}
		if round == 0 {
			first = values[0]
		} else if values[0] == first {
			t.Fatal("the second batch got the first batch's value")
		}
		mu.Unlock()
	}
}

// waitInLoadOrInit waits until n goroutines are blocked inside
// LoadOrInit: the stacks are the only witness that the callers who do not
// run init are inside it, waiting, rather than not there yet.
func waitInLoadOrInit(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	buf := make([]byte, 1<<20)
	for {
		got := 0
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "[chan receive") && strings.Contains(g, "(*localStore).loadOrInit") {
				got++
			}
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines blocked in LoadOrInit, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBatchLocalPlanAndCallsShareValue: what a Before hook sets in a batch
// or session local, the batch's interceptors get, and what they add, the
// next batch's hook sees in the session local only.
func TestBatchLocalPlanAndCallsShareValue(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, echoTool(t))
	note := toolkit.NewBatchLocal[string]()
	seen := toolkit.NewSessionLocal[*sync.Map]() // call id -> the batch note it saw
	var mu sync.Mutex
	var hookSaw []int // calls the session local held when each batch began
	if err := tk.Use(toolkit.Interceptor{Name: "plan", BeforeBatch: func(ctx context.Context, p *toolkit.BatchPlan) {
		if _, ok := note.Get(p); ok {
			t.Error("a new batch has a note already")
		}
		note.Set(p, p.Batch().ID())
		n := 0
		seen.LoadOrInit(p, func() *sync.Map { return new(sync.Map) }).Range(func(any, any) bool { n++; return true })
		mu.Lock()
		hookSaw = append(hookSaw, n)
		mu.Unlock()
	}}); err != nil {
		t.Fatal(err)
	}
	if err := tk.Use(toolkit.Interceptor{Name: "read", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		v, ok := note.Get(inv)
		if !ok || v != inv.BatchID() {
			t.Errorf("call %s: batch note %q %v, want its batch's id %q", inv.Call.ID, v, ok, inv.BatchID())
		}
		m, ok := seen.Get(inv)
		if !ok {
			t.Errorf("call %s: no session value though the hook made one", inv.Call.ID)
		} else {
			m.Store(inv.Call.ID, v)
		}
		return next(ctx, inv)
	}}); err != nil {
		t.Fatal(err)
	}
	s := testutil.Session(t, tk, "s")
	s.Run(context.Background(), localCalls(3))
	s.Run(context.Background(), []toolkit.Call{testutil.Call("x", "echo", `{}`)})
	s.Close()
	testutil.Run(t, tk, "s", testutil.Call("y", "echo", `{}`))
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(hookSaw) != "[0 3 0]" {
		t.Errorf("session values when each batch began: %v, want [0 3 0] (three calls, then one more batch, then a closed session's successor)", hookSaw)
	}
}

// TestSessionLocalAcrossBatches: a session local keeps its value across the
// session's batches, apart from other sessions, and is gone after
// Session.Close (a session of the same id starts afresh).
func TestSessionLocalAcrossBatches(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, echoTool(t))
	calls := toolkit.NewSessionLocal[*atomic.Int32]()
	var mu sync.Mutex
	counts := map[string][]int32{}
	if err := tk.Use(toolkit.Interceptor{Name: "count", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		n := calls.LoadOrInit(inv, func() *atomic.Int32 { return new(atomic.Int32) }).Add(1)
		mu.Lock()
		counts[inv.Session] = append(counts[inv.Session], n)
		mu.Unlock()
		return next(ctx, inv)
	}}); err != nil {
		t.Fatal(err)
	}
	a := testutil.Session(t, tk, "a")
	a.Run(context.Background(), localCalls(1))
	testutil.Run(t, tk, "b", localCalls(1)...)
	a.Run(context.Background(), localCalls(1))
	a.Close()
	testutil.Run(t, tk, "a", localCalls(1)...)
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(counts["a"]) != "[1 2 1]" || fmt.Sprint(counts["b"]) != "[1]" {
		t.Errorf("counts per session %v, want a: [1 2 1] (reset by Close), b: [1]", counts)
	}
}

// TestCallLocalPerCall: each call of a batch has its own value of a call
// local, shared by the interceptors around it; a BatchPlan has no call, so
// a call local there holds nothing; the zero Local is a call local.
func TestCallLocalPerCall(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, echoTool(t))
	id := toolkit.NewCallLocal[string]()
	var zero toolkit.Local[int]
	if err := tk.Use(toolkit.Interceptor{Name: "plan", BeforeBatch: func(ctx context.Context, p *toolkit.BatchPlan) {
		id.Set(p, "plan")
		if v, ok := id.Get(p); ok {
			t.Errorf("a call local on a plan holds %q", v)
		}
		if v := id.LoadOrInit(p, func() string { return "a" }) + id.LoadOrInit(p, func() string { return "b" }); v != "ab" {
			t.Errorf("LoadOrInit on a plan kept a value: %q", v)
		}
	}}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string]string{}
	outer := toolkit.Interceptor{Name: "outer", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		if v, ok := id.Get(inv); ok {
			t.Errorf("call %s starts with %q", inv.Call.ID, v)
		}
		id.Set(inv, inv.Call.ID)
		zero.Set(inv, len(inv.Call.ID))
		return next(ctx, inv)
	}}
	inner := toolkit.Interceptor{Name: "inner", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		v, _ := id.Get(inv)
		if n, ok := zero.Get(inv); !ok || n != len(inv.Call.ID) {
			t.Errorf("call %s: zero Local holds %d %v", inv.Call.ID, n, ok)
		}
		mu.Lock()
		got[inv.Call.ID] = v
		mu.Unlock()
		return next(ctx, inv)
	}}
	if err := tk.Use(outer, inner); err != nil {
		t.Fatal(err)
	}
	testutil.Run(t, tk, "s", localCalls(4)...)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 4 {
		t.Fatalf("%v", got)
	}
	for call, v := range got {
		if v != call {
			t.Errorf("call %s read %q", call, v)
		}
	}
}

// TestLocalInitPanics: an init that panics keeps nothing (the call fails
// like any interceptor panic) and the next LoadOrInit runs init again.
func TestLocalInitPanics(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, echoTool(t))
	l := toolkit.NewSessionLocal[string]()
	var inits atomic.Int32
	if err := tk.Use(toolkit.Interceptor{Name: "init", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		v := l.LoadOrInit(inv, func() string {
			if inits.Add(1) == 1 {
				panic("first init fails")
			}
			return "made"
		})
		return toolkit.Success(events.Text(v))
	}}); err != nil {
		t.Fatal(err)
	}
	s := testutil.Session(t, tk, "s")
	if r := s.Run(context.Background(), localCalls(1))[0]; r.State != events.StateError {
		t.Fatalf("the call whose init panicked: %s %q", r.State, r.Text())
	}
	for range 2 {
		if r := s.Run(context.Background(), localCalls(1))[0]; r.Text() != "made" {
			t.Fatalf("after the panic: %s %q", r.State, r.Text())
		}
	}
	if inits.Load() != 2 {
		t.Errorf("init ran %d times, want 2 (the panic kept nothing, the second kept its value)", inits.Load())
	}
}

// TestLocalsFreedWhenTheirScopeEnds: a call local's value can be collected
// once the call's interceptors returned and a batch local's once the batch
// ended, though the caller still holds the batch; a session local's is
// kept while the session is open and can be collected after Session.Close,
// though the caller still holds the session.
func TestLocalsFreedWhenTheirScopeEnds(t *testing.T) {
	type big struct{ _ [1 << 10]byte }
	tk := testutil.Kit(t)
	callL := toolkit.NewCallLocal[*big]()
	batchL := toolkit.NewBatchLocal[*big]()
	sessL := toolkit.NewSessionLocal[*big]()
	var callW, batchW, sessW weak.Pointer[big]
	keptDuringCall := false
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "gc"}, func(ctx context.Context, _ none) (string, error) {
		runtime.GC()
		keptDuringCall = callW.Value() != nil && batchW.Value() != nil
		return "ok", nil
	}))
	if err := tk.Use(toolkit.Interceptor{Name: "keep", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		callW = weak.Make(callL.LoadOrInit(inv, func() *big { return new(big) }))
		batchW = weak.Make(batchL.LoadOrInit(inv, func() *big { return new(big) }))
		sessW = weak.Make(sessL.LoadOrInit(inv, func() *big { return new(big) }))
		return next(ctx, inv)
	}}); err != nil {
		t.Fatal(err)
	}
	s := testutil.Session(t, tk, "s")
	b := s.Start(context.Background(), []toolkit.Call{testutil.Call("1", "gc", `{}`)})
	if r := b.Wait()[0]; r.Text() != "ok" {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	if !keptDuringCall {
		t.Fatal("the values were collected while the call ran")
	}
	collect := func() {
		for range 3 {
			runtime.GC()
		}
	}
	collect()
	if callW.Value() != nil {
		t.Error("the call local's value is still held after the call")
	}
	if batchW.Value() != nil {
		t.Error("the batch local's value is still held after the batch ended")
	}
	if sessW.Value() == nil {
		t.Fatal("the session local's value was collected while the session is open")
	}
	s.Close()
	collect()
	if sessW.Value() != nil {
		t.Error("the session local's value is still held after Session.Close")
	}
	runtime.KeepAlive(b)
	runtime.KeepAlive(s)
}
