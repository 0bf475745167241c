package interceptors_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

type loopClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *loopClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *loopClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func loopFixture(t *testing.T, n int, window time.Duration, ics ...toolkit.Interceptor) (*toolkit.Toolkit, *loopClock, *icCounter) {
	clk := &loopClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	tk := icKit(t, nil, append(ics, interceptors.LoopGuardAt(n, window, clk.now))...)
	ran := &icCounter{}
	for _, name := range []string{"search", "fetch"} {
		tool, err := toolkit.NewRawTool(toolkit.Spec{Name: name}, json.RawMessage(`{"type":"object"}`),
			func(ctx context.Context, _ json.RawMessage) ([]events.Part, error) {
				ran.inc()
				return nil, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		testutil.Add(t, tk, tool)
	}
	return tk, clk, ran
}

var loopSeq int

func loopRun(t *testing.T, s *toolkit.Session, tool, args string) toolkit.Result {
	t.Helper()
	loopSeq++
	return icRun(t, s, testutil.Call(fmt.Sprintf("call-%d", loopSeq), tool, args))
}

func TestLoopGuardRefusesTheNthRepeat(t *testing.T) {
	tk, clk, ran := loopFixture(t, 3, time.Minute)
	s := testutil.Session(t, tk, "s")
	for i := range 2 {
		if r := loopRun(t, s, "search", `{"q":"go","n":1}`); r.State != events.StateSuccess {
			t.Fatalf("call %d: %s", i+1, r.State)
		}
		clk.advance(10 * time.Second)
	}
	// Same arguments in another key order and spacing: the third repeat.
	r := loopRun(t, s, "search", ` { "n": 1, "q": "go" } `)
	if r.State != events.StateError || !errors.Is(r.Err, interceptors.ErrLoop) {
		t.Fatalf("third call: %s %v, want refused", r.State, r.Err)
	}
	for _, want := range []string{`"search"`, "3 times", "change your approach"} {
		if !strings.Contains(r.Text(), want) {
			t.Fatalf("message %q lacks %q", r.Text(), want)
		}
	}
	if r := loopRun(t, s, "search", `{"q":"go","n":1}`); r.State != events.StateError || !strings.Contains(r.Text(), "4 times") {
		t.Fatalf("fourth call: %s %q", r.State, r.Text())
	}
	if ran.get() != 2 {
		t.Fatalf("ran %d times, want 2", ran.get())
	}
	// Other arguments, another tool, another session: not repeats.
	for _, c := range [][2]string{{"search", `{"q":"rust","n":1}`}, {"fetch", `{"q":"go","n":1}`}} {
		if r := loopRun(t, s, c[0], c[1]); r.State != events.StateSuccess {
			t.Fatalf("%s %s: %s", c[0], c[1], r.State)
		}
	}
	if r := loopRun(t, testutil.Session(t, tk, "other"), "search", `{"q":"go","n":1}`); r.State != events.StateSuccess {
		t.Fatalf("another session: %s", r.State)
	}
}

func TestLoopGuardWindow(t *testing.T) {
	tk, clk, _ := loopFixture(t, 2, time.Minute)
	s := testutil.Session(t, tk, "s")
	loopRun(t, s, "search", `{"q":"go"}`)
	clk.advance(59 * time.Second)
	if r := loopRun(t, s, "search", `{"q":"go"}`); r.State != events.StateError {
		t.Fatalf("repeat within the window: %s", r.State)
	}
	// Refused calls count: the model must pause for a whole window.
	clk.advance(59 * time.Second)
	if r := loopRun(t, s, "search", `{"q":"go"}`); r.State != events.StateError {
		t.Fatalf("repeat 59s after a refused one: %s", r.State)
	}
	clk.advance(61 * time.Second)
	if r := loopRun(t, s, "search", `{"q":"go"}`); r.State != events.StateSuccess {
		t.Fatalf("after the window: %s %v", r.State, r.Err)
	}
}

func TestLoopGuardNoWindowAndEmptyArgs(t *testing.T) {
	tk, clk, _ := loopFixture(t, 2, 0)
	s := testutil.Session(t, tk, "s")
	loopRun(t, s, "fetch", ``)
	clk.advance(24 * time.Hour)
	if r := loopRun(t, s, "fetch", `{}`); r.State != events.StateError || !strings.Contains(r.Text(), "in this conversation") {
		t.Fatalf("no arguments, then {} a day later: %s %q", r.State, r.Text())
	}
}

func TestLoopGuardRetryIsNotARepeat(t *testing.T) {
	sl := &retrySleeps{}
	clk := &loopClock{t: time.Now()}
	tk := icKit(t, nil, interceptors.Retry(interceptors.RetrySleep(sl.sleep)),
		interceptors.LoopGuardAt(2, time.Minute, clk.now))
	var ran icCounter
	testutil.Add(t, tk, flakyTool(t, "flaky", 3, &ran))
	r := icRun(t, testutil.Session(t, tk, "s"), testutil.Call("c1", "flaky", `{}`))
	if r.State != events.StateSuccess || ran.get() != 3 {
		t.Fatalf("got %s after %d runs: attempts of one call are not repeats", r.State, ran.get())
	}
}

// loopHeap returns the live heap after a full collection.
func loopHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// LoopGuard keeps fixed-size hashes, not the arguments: twenty distinct
// calls of 256 KiB each leave the session's state small, and a repeat of a
// large call is still caught.
func TestLoopGuardKeepsHashesNotArguments(t *testing.T) {
	const calls, size = 20, 256 << 10
	tk, _, ran := loopFixture(t, 2, 0)
	s := testutil.Session(t, tk, "s")
	big := func(i int) string {
		return fmt.Sprintf(`{"q":%q,"i":%d}`, strings.Repeat("x", size), i)
	}
	loopRun(t, s, "search", `{"warm":"up"}`)
	before := loopHeap()
	for i := range calls {
		if r := loopRun(t, s, "search", big(i)); r.State != events.StateSuccess {
			t.Fatalf("call %d: %s %v", i, r.State, r.Err)
		}
	}
	after := loopHeap()
	retained := int64(after) - int64(before)
	t.Logf("retained %d bytes after %d distinct calls of %d bytes", retained, calls, size)
	if retained > size {
		t.Fatalf("the session kept %d bytes for %d distinct calls of %d bytes: arguments are retained", retained, calls, size)
	}
	if r := loopRun(t, s, "search", big(7)); r.State != events.StateError || !errors.Is(r.Err, interceptors.ErrLoop) {
		t.Fatalf("a repeated large call: %s %v, want refused", r.State, r.Err)
	}
	if ran.get() != calls+1 {
		t.Fatalf("ran %d times, want %d", ran.get(), calls+1)
	}
	runtime.KeepAlive(s)
}

// The state per session is bounded: past LoopGuardRemembered distinct
// calls, the least recently called is forgotten (so repeating it runs), and
// the most recent are still caught.
func TestLoopGuardRemembersABoundedNumberOfCalls(t *testing.T) {
	tk, clk, _ := loopFixture(t, 2, 0)
	s := testutil.Session(t, tk, "s")
	calls := make([]toolkit.Call, 0, interceptors.LoopGuardRemembered+1)
	for i := range interceptors.LoopGuardRemembered + 1 {
		calls = append(calls, testutil.Call(fmt.Sprint("b", i), "search", fmt.Sprintf(`{"i":%d}`, i)))
	}
	for _, c := range calls { // one at a time, so that each has its own time
		clk.advance(time.Millisecond)
		if r := icRun(t, s, c); r.State != events.StateSuccess {
			t.Fatalf("%s: %s", c.ID, r.State)
		}
	}
	if r := loopRun(t, s, "search", `{"i":0}`); r.State != events.StateSuccess {
		t.Fatalf("the oldest call should have been forgotten: %s %v", r.State, r.Err)
	}
	if r := loopRun(t, s, "search", fmt.Sprintf(`{"i":%d}`, interceptors.LoopGuardRemembered)); r.State != events.StateError {
		t.Fatalf("the latest call should be remembered: %s", r.State)
	}
}

// The state goes with the session: a new session under the same id starts
// with nothing remembered.
func TestLoopGuardStateEndsWithTheSession(t *testing.T) {
	tk, _, _ := loopFixture(t, 2, 0)
	s := testutil.Session(t, tk, "s")
	loopRun(t, s, "search", `{"q":"go"}`)
	s.Close()
	if r := loopRun(t, testutil.Session(t, tk, "s"), "search", `{"q":"go"}`); r.State != events.StateSuccess {
		t.Fatalf("after Close: %s %v", r.State, r.Err)
	}
}
