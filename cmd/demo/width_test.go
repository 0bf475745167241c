package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/toolkit"
)

// fakeSize is a terminal size a test can change, as a resize would.
type fakeSize struct {
	mu         sync.Mutex
	cols, rows int
}

func (f *fakeSize) get() (int, int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cols, f.rows, true
}

func (f *fakeSize) set(cols, rows int) {
	f.mu.Lock()
	f.cols, f.rows = cols, rows
	f.mu.Unlock()
}

// feedTour plays, into a view, the kind of output a run produces: a turn
// with long names and messages (wide characters too), calls that run with
// bars, one waiting for an approval, results with long lines and tabs, and
// the summary. After each step it lets the view redraw its block, and
// check sees the screen then.
func feedTour(v *termView, check func(step string)) {
	long := strings.Repeat("abcdefghij ", 12)
	calls := []toolkit.Call{
		{ID: "call_1", Name: "count_lines", Args: []byte(`{"dir":"."}`)},
		{ID: "call_2", Name: "load_skill_through_path", Args: []byte(`{"skillId":"file-analysis","path":"SKILL.md"}`)},
		{ID: "call_with_a_long_id_0123456789", Name: "write_note", Args: []byte(`{"title":"` + long + `"}`)},
	}
	defs := []toolkit.Definition{{Name: "count_lines"}, {Name: "watch_folder"}, {Name: "ask_user"}, {Name: "hash_files"}, {Name: "search_text"},
		{Name: "write_note"}, {Name: "folder_stats"}, {Name: "file_inventory"}, {Name: "load_skill_through_path"}, {Name: "reset_tools"}}
	v.user("Give me an overview of this folder: " + long)
	v.turn(3, Turn{Note: "three calls with long names; " + long, Text: "Working on it. " + long, Calls: calls}, defs)
	for _, c := range calls {
		v.Observe(&events.Event{Type: events.TypeStart, Call: c.ID, Tool: c.Name})
	}
	v.redraw()
	check("started")
	for i := 1; i <= 4; i++ {
		v.Observe(progressEvent("call_1", float64(i)/4, fmt.Sprintf("counted internal/schema/日本語のファイル名_%d_%s.go", i, long)))
		v.Observe(progressEvent("call_2", float64(i)/5, "reading "+long))
		v.redraw()
		check(fmt.Sprintf("progress %d", i))
	}
	v.Observe(&events.Event{Type: events.TypeSuspend, Call: "call_with_a_long_id_0123456789", Tool: "write_note", Suspend: &events.Suspend{Reason: "approval"}})
	v.redraw()
	check("waiting")
	v.printf("  approval %-8s %s %s asks: %s\n", "call_with_a_long_id_0123456789", "write_note", long, long)
	v.resumed("", "call_with_a_long_id_0123456789", "approved, running")
	v.redraw()
	check("approved")
	var results []toolkit.Result
	for _, c := range calls {
		v.Observe(&events.Event{Type: events.TypeResult, Call: c.ID, Tool: c.Name, Result: &events.Result{State: "success", DurationMS: 12}})
		results = append(results, toolkit.Result{Call: c, State: events.StateSuccess, Content: []events.Part{events.Text("     1\tpath\t" + long + "\n日本語 " + long)}, Duration: 12 * time.Millisecond})
		v.redraw()
	}
	check("finished")
	v.results(results, 1500*time.Millisecond)
	v.answer(4, Turn{Text: "Done. " + long})
	v.summary(runSummary{Turns: 4, Results: results, Took: 3 * time.Second}, natsbus.PublisherStats{Published: 818})
}

// TestTermViewFitsWidth: on terminals 80 and 40 columns wide, no line the
// view writes is wider than the terminal (so the terminal never wraps
// one), the live block is redrawn in place (the cursor goes up exactly the
// rows the block took, and no bar is left behind), and a call waiting for
// an approval says so in its row.
func TestTermViewFitsWidth(t *testing.T) {
	for _, cols := range []int{80, 40} {
		t.Run(fmt.Sprint(cols), func(t *testing.T) {
			var buf syncBuffer
			size := &fakeSize{cols: cols, rows: 24}
			v := newTermViewSized(&buf, true, size.get)
			scr := newScreen(cols)
			seen := 0
			feedTour(v, func(step string) {
				out := buf.String()
				scr.write(out[seen:])
				seen = len(out)
				bars := scr.barRows()
				want := map[string]int{"started": 3, "waiting": 3, "approved": 3, "finished": 0}[step]
				if strings.HasPrefix(step, "progress") {
					want = 3
				}
				if len(bars) != want {
					t.Errorf("%s: %d rows with a bar, want %d:\n%s", step, len(bars), want, scr)
				}
				if step == "waiting" && !strings.Contains(strings.Join(bars, "\n"), "awaiting approval") {
					t.Errorf("the call waiting for approval has no label:\n%s", strings.Join(bars, "\n"))
				}
			})
			v.stop()
			scr.write(buf.String()[seen:])
			if scr.wraps > 0 || scr.widest() >= cols {
				t.Errorf("%d lines wrapped; widest row %d columns on a %d-column terminal:\n%s", scr.wraps, scr.widest(), cols, scr)
			}
			if len(scr.bad) > 0 {
				t.Errorf("sequences a terminal acts on: %q", scr.bad)
			}
			if rows := scr.barRows(); len(rows) > 0 {
				t.Errorf("stale bars left on the screen:\n%s", strings.Join(rows, "\n"))
			}
			for _, ln := range scr.lines() {
				if strings.Contains(ln, "\t") {
					t.Errorf("a tab reached the terminal: %q", ln)
				}
			}
			s := scr.String()
			for _, want := range []string{"=== Turn 3: three calls", "=== Turn 4: the model answers", "=== Summary: 4 turns", "write_note", "reset_tools"} {
				if !strings.Contains(s, want) {
					t.Errorf("screen lacks %q:\n%s", want, s)
				}
			}
		})
	}
}

// TestTermViewResize: when the terminal becomes narrower, the block drawn
// at the old width (which the terminal reflows onto more rows) is cleared
// by going up over all those rows, and the next lines fit the new width.
func TestTermViewResize(t *testing.T) {
	var buf syncBuffer
	size := &fakeSize{cols: 80, rows: 24}
	v := newTermViewSized(&buf, true, size.get)
	defer v.stop()
	for _, id := range []string{"c1", "c2"} {
		v.Observe(&events.Event{Type: events.TypeStart, Call: id, Tool: "count_lines"})
		v.Observe(progressEvent(id, 0.5, strings.Repeat("x", 100)))
	}
	v.redraw()
	before := buf.String()
	lines := strings.Split(strings.TrimSuffix(before, "\n"), "\n")
	if len(lines) != 2 || displayWidth(lines[0]) != 79 {
		t.Fatalf("block at 80 columns: %q", lines)
	}
	size.set(40, 24)
	v.resized()
	v.redraw()
	after := buf.String()[len(before):]
	// Each 79-column line takes two rows of 40 after the reflow.
	if !strings.HasPrefix(after, "\x1b[4A\x1b[J") {
		t.Errorf("after the resize the block was cleared with %q, want 4 rows up", after[:min(len(after), 12)])
	}
	for _, l := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(after, "\x1b[4A\x1b[J"), "\n"), "\n") {
		if w := displayWidth(l); w > 39 {
			t.Errorf("line of %d columns after the resize to 40: %q", w, l)
		}
	}
}

// TestTermViewTallBlock: more running calls than the terminal has rows
// are summed up in one line, so that the block fits on the screen (the
// cursor cannot go up past its top).
func TestTermViewTallBlock(t *testing.T) {
	var buf syncBuffer
	v := newTermViewSized(&buf, true, func() (int, int, bool) { return 80, 6, true })
	defer v.stop()
	for i := range 10 {
		v.Observe(&events.Event{Type: events.TypeStart, Call: fmt.Sprintf("c%d", i), Tool: "count_lines"})
	}
	v.redraw()
	out := buf.String()
	if n := strings.Count(out, "\n"); n != 5 || !strings.Contains(out, "… and 6 more calls running") {
		t.Errorf("block of %d lines on a 6-row terminal:\n%s", n, out)
	}
}

func TestFitWidth(t *testing.T) {
	for _, tc := range []struct {
		in   string
		cols int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello world", 5, "hell…"},
		{"hello", 5, "hello"},
		{"日本語です", 6, "日本…"},       // wide characters count 2
		{"日本語です", 5, "日本…"},       // no half of a wide character
		{"a\tb", 12, "a       b"}, // tabs to their stops
		{"abc", 1, "…"},
		{"anything", 0, "anything"}, // no terminal: no limit
		{"e\u0301tude", 5, "e\u0301tude"},
	} {
		if got := fitWidth(tc.in, tc.cols); got != tc.want {
			t.Errorf("fitWidth(%q, %d) = %q, want %q", tc.in, tc.cols, got, tc.want)
		}
	}
}

func TestWrapWords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		cols int
		want []string
	}{
		{"offered: count_lines, watch_folder, ask_user, hash_files", 24, []string{"offered: count_lines,", "  watch_folder,", "  ask_user, hash_files"}},
		{"saved to /tmp/toolstream-results/file_inventory-0123.txt ok", 20, []string{"saved to /tmp/toolst", "  ream-results/file_", "  inventory-0123.txt", "  ok"}},
		{"short", 20, []string{"short"}},
		{"日本語の文章です", 9, []string{"日本語の", "  文章で", "  す"}},
		{"a\tb", 20, []string{"a       b"}},
	} {
		if got := wrapWords(tc.in, tc.cols, "  "); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("wrapWords(%q, %d) = %q, want %q", tc.in, tc.cols, got, tc.want)
		}
	}
}

// FuzzWrapWords: wrapped lines are never wider than asked, and they hold
// every character of the text (only spaces become line breaks).
func FuzzWrapWords(f *testing.F) {
	for _, s := range []string{"", "a b c", "offered: count_lines, watch_folder", strings.Repeat("x", 90), "日本語 の 文章", "a\tb  c"} {
		f.Add(s, 10)
	}
	f.Fuzz(func(t *testing.T, s string, cols int) {
		s = safeLine(s)
		cols = cols%120 + 1
		if cols < 1 {
			cols += 120
		}
		lines := wrapWords(s, cols, "  ")
		for _, l := range lines {
			if w := displayWidth(l); w > cols {
				t.Fatalf("wrapWords(%q, %d): line %q is %d columns", s, cols, l, w)
			}
		}
		if cols > 1 {
			squeeze := func(x string) string { return strings.NewReplacer(" ", "", "\t", "").Replace(x) }
			if got := squeeze(strings.Join(lines, "")); got != squeeze(expandTabs(s)) {
				t.Fatalf("wrapWords(%q, %d) lost text: %q", s, cols, lines)
			}
		}
	})
}

// FuzzFitWidth: whatever the text, a fit line is never wider than asked,
// and a line that fits is left as it was.
func FuzzFitWidth(f *testing.F) {
	for _, s := range []string{"", "hello", "日本語", "a\tb\tc", "e\u0301", "🙂🙂🙂", "\u200b\u200b"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, cols int) {
		s = safeText(s)
		cols = cols%200 + 1
		if cols < 1 {
			cols += 200
		}
		got := fitWidth(s, cols)
		if strings.Contains(s, "\n") {
			return // fitWidth is for one line
		}
		if w := displayWidth(got); w > cols {
			t.Fatalf("fitWidth(%q, %d) = %q, %d columns", s, cols, got, w)
		}
		if !strings.Contains(s, "\t") && displayWidth(s) <= cols && got != s {
			t.Fatalf("fitWidth(%q, %d) changed a line that fits: %q", s, cols, got)
		}
	})
}
