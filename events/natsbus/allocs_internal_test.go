package natsbus

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
)

// TestPublisherAllocs: what the publisher does per event and per batch
// allocates nothing once a call is known, and a call's state is a handful
// of allocations (its subjects, its message-id prefix), built once.
func TestPublisherAllocs(t *testing.T) {
	ctx := context.Background()
	bus, err := Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close(ctx)
	p := makePublisher(bus, 1<<20) // its goroutine does not run: nothing is sent
	ev := &events.Event{Version: events.Version, Type: events.TypeProgress, Session: "s", Call: "c", Tool: "t",
		Time: time.Now(), Progress: &events.Progress{Message: "working"}}
	for range 10 {
		p.Observe(ev)
	}
	if n := testing.AllocsPerRun(1000, func() { p.Observe(ev) }); n != 0 {
		t.Errorf("Observe: %v allocations", n)
	}
	// A result with no drops to tell is queued as it is, even while other
	// calls' drops wait to be told.
	res := &events.Event{Version: events.Version, Type: events.TypeResult, Session: "s", Call: "c", Tool: "t",
		Time: time.Now(), Result: &events.Result{State: events.StateSuccess}}
	p.mu.Lock()
	p.drops = map[callKey]uint64{{"s", "other"}: 1}
	p.mu.Unlock()
	if n := testing.AllocsPerRun(1000, func() { p.Observe(res) }); n != 0 {
		t.Errorf("Observe of a result: %v allocations", n)
	}
	// A batch that no Flush waits for wakes no one.
	if n := testing.AllocsPerRun(100, p.notify); n != 0 {
		t.Errorf("the end of a batch: %v allocations", n)
	}
	w := p.newWire(ev)
	for _, typ := range callTypes {
		if got, want := w.subject(typ), bus.Subjects().Call("s", "c", string(typ)); got != want {
			t.Errorf("subject of %s: %q, want %q", typ, got, want)
		}
	}
	if got, want := w.subject("other"), bus.Subjects().Call("s", "c", "other"); got != want {
		t.Errorf("subject of another type: %q, want %q", got, want)
	}
	if !strings.HasPrefix(w.idBase, "s.c.") || !strings.HasSuffix(w.idBase, w.nonce+".") {
		t.Errorf("message-id prefix %q, want s.c.<nonce>.", w.idBase)
	}
	perCall := testing.AllocsPerRun(100, func() {
		w := p.newWire(ev)
		for _, typ := range callTypes {
			w.subject(typ)
			w.subject(typ)
		}
	})
	t.Logf("a call's state: %v allocations", perCall)
	if perCall > 5 {
		t.Errorf("a call's state: %v allocations, want at most 5", perCall)
	}
}

// TestPublisherLeavesOutHugeArgumentsCheaply: a start whose arguments are
// far over the max payload costs the publishing goroutine about a message's
// worth of work, not the arguments' size: it goes out without them
// (args_omitted) and the next call's events are published right after. It
// used to encode the arguments twice first (200 MiB for 100 MiB), which on
// a loaded machine held a small call's result back for seconds (issue 27,
// item 7).
func TestPublisherLeavesOutHugeArgumentsCheaply(t *testing.T) {
	ctx := context.Background()
	bus, err := Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close(ctx)
	sub, err := bus.nc.SubscribeSync(bus.subjects.Call("s", "big", string(events.TypeStart)))
	if err != nil {
		t.Fatal(err)
	}
	size := 100 << 20
	if testutil.Race {
		size = 20 << 20
	}
	args := json.RawMessage(`{"data":"` + strings.Repeat("a", size) + `"}`)
	ev := &events.Event{Version: events.Version, Type: events.TypeStart, Session: "s", Call: "big", Tool: "t",
		Time: time.Now(), Start: &events.Start{Args: args}}
	p := makePublisher(bus, 1<<20) // published here, on this goroutine
	p.payload = p.limit0()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	p.publish(ev)
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(p.payload) {
		t.Errorf("publishing a start with %d MiB of arguments allocated %d kB, want less than a message (%d kB)", size>>20, alloc>>10, p.payload>>10)
	}
	m, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got, err := events.Decode(m.Data)
	if err != nil || got.Start == nil || !got.Start.ArgsOmitted || got.Start.Args != nil || p.Stats().Cut != 1 {
		t.Fatalf("on the wire: %s (%v), stats %+v", m.Data, err, p.Stats())
	}
}
