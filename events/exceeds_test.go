package events

import (
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// TestFitLeavesOutHugeArgumentsCheaply: a start whose arguments are far
// larger than the limit is cut without encoding them: Fit's work is bounded
// by the limit, not by the arguments. Fit used to encode the whole event
// first (64 MiB here, each time), so a publisher spent seconds on a start
// it then sent without its arguments, and every other call's events waited
// behind it (issue 27, item 7).
func TestFitLeavesOutHugeArgumentsCheaply(t *testing.T) {
	args := json.RawMessage(`{"data":"` + strings.Repeat("a", 64<<20) + `"}`)
	ev := &Event{Version: Version, Type: TypeStart, Session: "s", Call: "big", Tool: "t", Start: &Start{Args: args}}
	const limit = 1 << 20
	if !Exceeds(ev, limit) {
		t.Fatal("Exceeds: false for 64 MiB of arguments against 1 MiB")
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, lossy, err := Fit(ev, limit)
	runtime.ReadMemStats(&after)
	if err != nil || !lossy || len(out) != 1 || !out[0].Start.ArgsOmitted || out[0].Start.Args != nil {
		t.Fatalf("Fit: %+v, lossy %v, %v", out, lossy, err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<10 {
		t.Fatalf("Fit allocated %d kB to leave out arguments of 64 MiB, want a few kB", alloc>>10)
	}
	// Arguments just over the limit only once compacted are not taken for
	// too large: they fit, and go out whole.
	spaced := json.RawMessage(`{"data":` + strings.Repeat(" ", 2*limit) + `"x"}`)
	ev.Start.Args = spaced
	if Exceeds(ev, limit) {
		t.Fatal("Exceeds: true for arguments that compact to a few bytes")
	}
	if out, lossy, err := Fit(ev, limit); err != nil || lossy || out[0].Start.ArgsOmitted {
		t.Fatalf("spaced arguments: %+v, lossy %v, %v", out, lossy, err)
	}
}

// TestFitLeavesOutHugeRewrittenArguments: an args event (the arguments an
// interceptor gave the tool) far larger than the limit goes out without
// them, {"args_omitted":true}, cut without encoding them, like a start's;
// before, Fit refused it (ErrTooLarge) and the publisher lost the event.
func TestFitLeavesOutHugeRewrittenArguments(t *testing.T) {
	data := json.RawMessage(`{"args":{"data":"` + strings.Repeat("a", 64<<20) + `"}}`)
	ev := &Event{Version: Version, Type: TypeArgs, Session: "s", Call: "big", Tool: "t", Data: data}
	const limit = 1 << 20
	if !Exceeds(ev, limit) {
		t.Fatal("Exceeds: false for an args event of 64 MiB against 1 MiB")
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, lossy, err := Fit(ev, limit)
	runtime.ReadMemStats(&after)
	if err != nil || !lossy || len(out) != 1 || string(out[0].Data) != `{"args_omitted":true}` || out[0].Call != "big" {
		t.Fatalf("Fit: %+v, lossy %v, %v", out, lossy, err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<10 {
		t.Fatalf("Fit allocated %d kB to leave out arguments of 64 MiB, want a few kB", alloc>>10)
	}
	// A session-level event of the same name is not an args event: its
	// data is not arguments, and nothing of it is left out.
	ev.Call = ""
	if Exceeds(ev, limit) {
		t.Fatal("Exceeds: true for a session-level event")
	}
	if _, _, err := Fit(ev, limit); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("session-level args event: %v, want ErrTooLarge", err)
	}
}

// FuzzExceeds: when Exceeds says an event is longer than the limit, its
// JSON is, whatever the arguments (whitespace that compaction drops,
// characters escaping makes longer, text that is not JSON at all).
func FuzzExceeds(f *testing.F) {
	f.Add([]byte(`{"a": [1, 2,  3], "b": "<x> \u2028"}`), uint16(20))
	f.Add([]byte("  \n\t{ } "), uint16(3))
	f.Add([]byte("not json \xff\xfe"), uint16(8))
	f.Add([]byte(`"`+strings.Repeat(`\"`, 40)+`"`), uint16(50))
	f.Fuzz(func(t *testing.T, raw []byte, limit uint16) {
		for _, ev := range []*Event{
			{Version: Version, Type: TypeStart, Session: "s", Call: "c", Start: &Start{Args: raw}},
			{Version: Version, Type: TypeArgs, Session: "s", Call: "c", Data: raw},
		} {
			if n := len(AppendJSON(nil, ev)); Exceeds(ev, int(limit)) && n <= int(limit) {
				t.Fatalf("Exceeds(%s %q, %d) is true, yet the event is %d bytes", ev.Type, raw, limit, n)
			}
		}
	})
}
