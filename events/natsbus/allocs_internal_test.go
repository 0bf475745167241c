package natsbus

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
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
