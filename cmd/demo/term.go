package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/toolkit"
)

// termView is the terminal side of the demo, fed by the toolkit's events:
// on a terminal, a live block of progress bars (one per running call)
// redrawn under the output; elsewhere, plain lines. Results are printed
// apart, per turn, and a summary table at the end.
type termView struct {
	mu      sync.Mutex
	w       io.Writer
	live    bool
	drawn   int // lines of the live block on screen now
	dirty   bool
	running []string // calls with a bar, in start order
	calls   map[string]*callRow
	quit    chan struct{}
	done    chan struct{}
	stopped bool
}

// callRow is what the view knows about one call.
type callRow struct {
	turn     int
	tool     string
	fraction float64 // -1: unknown
	message  string
	lastStep int // plain mode: the last quarter printed
	events   int
}

func newTermView(w io.Writer, live bool) *termView {
	v := &termView{w: w, live: live, calls: map[string]*callRow{}, quit: make(chan struct{}), done: make(chan struct{})}
	if live {
		go v.redrawLoop()
	} else {
		close(v.done)
	}
	return v
}

func (v *termView) stop() {
	v.mu.Lock()
	if v.stopped {
		v.mu.Unlock()
		return
	}
	v.stopped = true
	v.mu.Unlock()
	close(v.quit)
	<-v.done
}

func (v *termView) redrawLoop() {
	defer close(v.done)
	t := time.NewTicker(80 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-v.quit:
			return
		case <-t.C:
			v.mu.Lock()
			if v.dirty {
				v.clearBlock()
				v.drawBlock()
				v.dirty = false
			}
			v.mu.Unlock()
		}
	}
}

// printf prints above the live block.
func (v *termView) printf(format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clearBlock()
	fmt.Fprintf(v.w, format, args...)
	v.drawBlock()
}

func (v *termView) clearBlock() {
	if v.live && v.drawn > 0 {
		fmt.Fprintf(v.w, "\x1b[%dA\x1b[J", v.drawn)
		v.drawn = 0
	}
}

func (v *termView) drawBlock() {
	if !v.live {
		return
	}
	for _, id := range v.running {
		r := v.calls[id]
		fmt.Fprintf(v.w, "  %-8s %-15s %s %s\n", id, r.tool, bar(r.fraction, 24), clipRunes(r.message, 48))
		v.drawn++
	}
}

// bar draws a progress bar with its percentage; unknown progress is dots.
func bar(f float64, width int) string {
	if f < 0 {
		return "[" + strings.Repeat("·", width) + "]     "
	}
	f = min(max(f, 0), 1)
	n := int(f * float64(width))
	return fmt.Sprintf("[%s%s] %3d%%", strings.Repeat("█", n), strings.Repeat("░", width-n), int(f*100))
}

// Observe implements toolkit.Observer.
func (v *termView) Observe(ev *events.Event) {
	if ev.Call == "" {
		v.sessionEvent(ev)
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	r := v.calls[ev.Call]
	if r == nil {
		r = &callRow{tool: ev.Tool, fraction: -1}
		v.calls[ev.Call] = r
	}
	r.events++
	switch ev.Type {
	case events.TypeStart:
		if v.live {
			v.running = append(v.running, ev.Call)
			v.dirty = true
			return
		}
		v.line("  %-11s %-8s %s\n", "start", ev.Call, ev.Tool)
	case events.TypeProgress:
		p := ev.Progress
		if p.Fraction != nil {
			r.fraction = *p.Fraction
		}
		if p.Message != "" {
			r.message = p.Message
		}
		if v.live {
			v.dirty = true
			return
		}
		if p.Fraction == nil {
			v.line("  %-11s %-8s %s\n", "...", ev.Call, p.Message)
			return
		}
		if q := int(*p.Fraction * 4); q > r.lastStep {
			r.lastStep = q
			v.line("  %-11s %-8s %s\n", fmt.Sprintf("%3d%%", int(*p.Fraction*100)), ev.Call, p.Message)
		}
	case events.TypeSuspend:
		v.line("  %-11s %-8s %s (%s)\n", "waiting", ev.Call, ev.Tool, ev.Suspend.Reason)
	case events.TypeResult:
		for i, id := range v.running {
			if id == ev.Call {
				v.running = append(v.running[:i], v.running[i+1:]...)
				break
			}
		}
		v.line("  %-11s %-8s %s in %s\n", ev.Result.State, ev.Call, ev.Tool, ms(ev.Result.DurationMS))
	}
}

// line prints one line above the block (the lock is held).
func (v *termView) line(format string, args ...any) {
	v.clearBlock()
	fmt.Fprintf(v.w, format, args...)
	v.drawBlock()
}

func (v *termView) sessionEvent(ev *events.Event) {
	switch ev.Type {
	case "groups", "skills": // approvals are the desk's to print
		v.mu.Lock()
		v.line("  %-11s %s\n", ev.Type, ev.Data)
		v.mu.Unlock()
	}
}

// turn prints what the model asked for and the tools it was offered.
func (v *termView) turn(n int, t Turn, defs []toolkit.Definition) {
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Name
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clearBlock()
	fmt.Fprintf(v.w, "\n=== Turn %d: %s ===\n", n, t.Note)
	fmt.Fprintf(v.w, "offered: %s\n", strings.Join(names, ", "))
	if t.Text != "" {
		fmt.Fprintf(v.w, "model: %s\n", t.Text)
	}
	for _, c := range t.Calls {
		fmt.Fprintf(v.w, "  %-8s %s %s\n", c.ID, c.Name, c.Args)
		if r := v.calls[c.ID]; r != nil {
			r.turn = n
		} else {
			v.calls[c.ID] = &callRow{turn: n, tool: c.Name, fraction: -1}
		}
	}
	fmt.Fprintln(v.w, "--- progress (for people; never shown to the model) ---")
	v.drawBlock()
}

// results prints a turn's results: what the model sees, in call order.
func (v *termView) results(rs []toolkit.Result, took time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clearBlock()
	fmt.Fprintf(v.w, "--- results (what the model sees, in call order; the turn took %v) ---\n", took.Round(time.Millisecond))
	for _, r := range rs {
		fmt.Fprintf(v.w, "[%s] %s -> %s\n", r.Call.ID, r.Call.Name, r.State)
		fmt.Fprintln(v.w, indent(clip(r.Text(), 12), "    "))
	}
	v.drawBlock()
}

// summary prints the table of every call and the totals.
func (v *termView) summary(sum runSummary, st natsbus.PublisherStats) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clearBlock()
	fmt.Fprintf(v.w, "\n=== Summary: %d turns, %d calls in %v; %d events published to NATS (%d progress dropped, %d undelivered) ===\n",
		sum.Turns, len(sum.Results), sum.Took.Round(time.Millisecond), st.Published, st.DroppedProgress, st.Undelivered)
	fmt.Fprintf(v.w, "%-5s %-8s %-24s %-12s %10s %7s\n", "turn", "call", "tool", "state", "duration", "events")
	states := map[toolkit.State]int{}
	for _, r := range sum.Results {
		row := v.calls[r.Call.ID]
		turn, evs := 0, 0
		if row != nil {
			turn, evs = row.turn, row.events
		}
		states[r.State]++
		fmt.Fprintf(v.w, "%-5d %-8s %-24s %-12s %10s %7d\n", turn, r.Call.ID, r.Call.Name, r.State, ms(float64(r.Duration)/float64(time.Millisecond)), evs)
	}
	var parts []string
	for s, n := range states {
		parts = append(parts, fmt.Sprintf("%d %s", n, s))
	}
	sort.Strings(parts)
	fmt.Fprintf(v.w, "states: %s\n", strings.Join(parts, ", "))
}

func ms(f float64) string {
	if f < 1 {
		return fmt.Sprintf("%.2fms", f)
	}
	return (time.Duration(f * float64(time.Millisecond))).Round(time.Millisecond).String()
}

func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func clip(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) <= lines {
		return strings.Join(parts, "\n")
	}
	return strings.Join(parts[:lines], "\n") + fmt.Sprintf("\n... (%d more lines)", len(parts)-lines)
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}
