package events

import "testing"

// TestWithDropped: a progress or a result tells n more drops in a copy,
// leaving the shared event as it was; other events, and n = 0, are given
// back as they are.
func TestWithDropped(t *testing.T) {
	pr := &Event{Type: TypeProgress, Progress: &Progress{Message: "m", Dropped: 2}}
	res := &Event{Type: TypeResult, Result: &Result{State: StateSuccess}}
	start := &Event{Type: TypeStart}
	if got, ok := pr.WithDropped(3); !ok || got == pr || got.Progress.Dropped != 5 || got.Progress.Message != "m" || pr.Progress.Dropped != 2 {
		t.Fatalf("progress: %v %+v, shared %+v", ok, got.Progress, pr.Progress)
	}
	if got, ok := res.WithDropped(4); !ok || got.Result.Dropped != 4 || res.Result.Dropped != 0 {
		t.Fatalf("result: %v %+v, shared %+v", ok, got.Result, res.Result)
	}
	if got, ok := start.WithDropped(4); ok || got != start {
		t.Fatal("a start event cannot tell drops")
	}
	if got, ok := pr.WithDropped(0); ok || got != pr {
		t.Fatal("nothing to tell: the event itself")
	}
}
