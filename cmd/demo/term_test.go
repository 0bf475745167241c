package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
)

func progressEvent(call string, f float64, msg string) *events.Event {
	return &events.Event{Type: events.TypeProgress, Call: call, Tool: "count_lines", Progress: &events.Progress{Message: msg, Fraction: &f}}
}

// TestTermViewPlain: without a terminal, a call's progress is a few plain
// lines (start, each quarter, the result) with no escape sequences.
func TestTermViewPlain(t *testing.T) {
	var buf bytes.Buffer
	v := newTermView(&buf, false)
	defer v.stop()
	v.Observe(&events.Event{Type: events.TypeStart, Call: "c1", Tool: "count_lines"})
	for i := 1; i <= 20; i++ {
		v.Observe(progressEvent("c1", float64(i)/20, "file"))
	}
	v.Observe(&events.Event{Type: events.TypeResult, Call: "c1", Tool: "count_lines", Result: &events.Result{State: "success", DurationMS: 12}})
	s := buf.String()
	if strings.Contains(s, "\x1b[") {
		t.Errorf("escape sequences in plain output: %q", s)
	}
	if n := strings.Count(s, "\n"); n != 6 { // start, 25, 50, 75, 100 %, result
		t.Errorf("%d lines, want 6:\n%s", n, s)
	}
	for _, want := range []string{"start       c1", " 50%", "100%", "success     c1       count_lines in 12ms"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

// TestTermViewLive: on a terminal, running calls get bars that are redrawn
// in place (cursor up, clear) under the other output, and vanish at the
// result.
func TestTermViewLive(t *testing.T) {
	var buf syncBuffer
	v := newTermView(&buf, true)
	v.Observe(&events.Event{Type: events.TypeStart, Call: "c1", Tool: "count_lines"})
	v.Observe(progressEvent("c1", 0.5, "halfway"))
	time.Sleep(200 * time.Millisecond) // the redraw ticks every 80 ms
	v.printf("a line above the bars\n")
	mid := buf.String()
	v.Observe(&events.Event{Type: events.TypeResult, Call: "c1", Tool: "count_lines", Result: &events.Result{State: "success"}})
	v.stop()
	if !strings.Contains(mid, "[████████████░░░░░░░░░░░░]  50% halfway") {
		t.Errorf("no half-full bar:\n%q", mid)
	}
	if !strings.Contains(mid, "\x1b[1A\x1b[J") {
		t.Errorf("the bar was not redrawn in place:\n%q", mid)
	}
	// After the result the bar is cleared and not drawn again.
	end := buf.String()[len(mid):]
	if !strings.HasPrefix(end, "\x1b[1A\x1b[J") || strings.Contains(end, "halfway") {
		t.Errorf("the finished call's bar stayed:\n%q", end)
	}
}

// TestNotATerminal: /dev/null is a character device but no terminal; a
// demo whose output goes there must not wait for Ctrl-C.
func TestNotATerminal(t *testing.T) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Fatal("/dev/null taken for a terminal")
	}
	cfg, err := parseFlags(nil, nil, f)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.once {
		t.Fatal("-once defaults to false with output to /dev/null")
	}
}
