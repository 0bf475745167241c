package natsbus_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// heapAfterGC is the live heap once garbage is collected.
func heapAfterGC() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestPublisherMemoryPerSession: the publisher keeps nothing per session.
// 50,000 sessions that each send a session-level event (as groups, skills
// and Session.Emit do) and make a call, then close, leave the heap where it
// was (the publisher used to keep ~670 bytes per such session, 32 MiB for
// 50,000), and a call's state goes with its result.
func TestPublisherMemoryPerSession(t *testing.T) {
	if testing.Short() {
		t.Skip("50,000 sessions")
	}
	bus := natstest.Bus(t)
	tk := testutil.Kit(t, toolkit.WithInlineObserver(bus.Publisher()))
	testutil.Add(t, tk, toolkit.MustTool(toolkit.Spec{Name: "work"}, func(ctx context.Context, _ struct{}) (string, error) {
		stream.From(ctx).Progress("working", 0.5)
		return "done", nil
	}))
	ctx := context.Background()
	cycle := func(from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			s, err := tk.Session(fmt.Sprintf("session-%06d", i))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Emit(context.Background(), "groups", map[string]any{"active": []string{"files", "notes"}, "by": "code"}); err != nil {
				t.Fatal(err)
			}
			if r := s.Run(ctx, []toolkit.Call{{ID: "c", Name: "work"}}); r[0].State != events.StateSuccess {
				t.Fatalf("%s: %s", r[0].Call.ID, r[0].State)
			}
			s.Close()
		}
		if err := bus.Publisher().Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cycle(0, 2000) // buffers and pools reach their working size
	before := heapAfterGC()
	sessions := int64(50000)
	if testutil.Race {
		sessions = 10000 // the detector makes each session ten times slower
	}
	cycle(2000, int(sessions))
	after := heapAfterGC()
	grew := int64(after) - int64(before)
	t.Logf("heap %d KiB before, %d KiB after %d sessions: %+d bytes per session (publisher %+v)",
		before>>10, after>>10, sessions, grew/sessions, bus.Publisher().Stats())
	if grew > sessions*40 { // 2 MiB for 50,000: 40 bytes a session
		t.Fatalf("the heap grew by %d KiB over %d closed sessions (%d bytes each)", grew>>10, sessions, grew/sessions)
	}
}
