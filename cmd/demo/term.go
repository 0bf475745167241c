package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/toolkit"
)

// termView is the terminal side of the demo, fed by the toolkit's events:
// on a terminal, a live block of progress bars (one per running call)
// redrawn under the output; elsewhere, plain lines. Results are printed
// apart, per turn, and a summary table at the end.
//
// Two rules hold for everything it writes. Text from outside the program
// (tool names and results, progress messages, a model's words, reasons,
// errors) is escaped: printf escapes its arguments, never its format. And
// on a terminal no line is wider than the terminal (re-read when it is
// resized): the live block can then be redrawn in place by moving the
// cursor up one row per line it drew.
type termView struct {
	mu   sync.Mutex
	w    io.Writer
	live bool
	// cols and rows are the terminal's size; cols 0 means no terminal and
	// no limit. size re-reads them (nil: they never change).
	cols, rows int
	size       func() (cols, rows int, ok bool)
	drawn      []int // display widths of the live block's lines on screen now
	dirty      bool
	asking     bool     // a question waits on the terminal: the block stays off
	running    []string // calls with a bar, in start order
	calls      map[string]*callRow
	quit       chan struct{}
	done       chan struct{}
	stopped    bool
	// tour is the tour's session: the calls of other sessions (runs over
	// /agui, /api/chat or /mcp on the same toolkit) are labelled with
	// theirs, and kept apart (their call ids are the model's, like the
	// tour's).
	tour string
}

// setTour names the tour's session.
func (v *termView) setTour(session string) {
	v.mu.Lock()
	v.tour = session
	v.mu.Unlock()
}

// labelOf is the label of a session's lines: "" for the tour's.
func (v *termView) labelOf(session string) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, label := v.rowKey(session, "")
	return label
}

// rowKey is where the view keeps a call, and the label its lines carry:
// the tour's calls by id, unlabelled; another session's by session and id,
// labelled "[session] " (the lock is held).
func (v *termView) rowKey(session, call string) (key, label string) {
	if v.tour == "" || session == "" || session == v.tour {
		return call, ""
	}
	return session + "\x00" + call, "[" + session + "] "
}

// callRow is what the view knows about one call.
type callRow struct {
	turn     int
	tool     string
	fraction float64 // -1: unknown
	message  string
	waiting  string // why the call is suspended, as a label; "" while it runs
	lastStep int    // plain mode: the last quarter printed
	events   int
	label    string // "[session] " for a call of another session than the tour's
	id       string // the call's id, as shown
	// suspendShown: the view printed the call's wait; lines about the
	// wait (afterSuspend) print after it, so wait for it in after.
	suspendShown bool
	after        []string
	shown        chan struct{} // closed when suspendShown is set; nil until asked for
}

// newTermView returns a view writing to w, with live bars when live is
// set; when w is a terminal, lines are fit to its width.
func newTermView(w io.Writer, live bool) *termView {
	var size func() (int, int, bool)
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fd := int(f.Fd())
		size = func() (int, int, bool) {
			c, r, err := term.GetSize(fd)
			return c, r, err == nil && c > 0
		}
	}
	return newTermViewSized(w, live, size)
}

// newTermViewSized is newTermView with the terminal's size read by size
// (nil: no terminal, no width limit).
func newTermViewSized(w io.Writer, live bool, size func() (int, int, bool)) *termView {
	v := &termView{w: w, live: live, size: size, calls: map[string]*callRow{}, quit: make(chan struct{}), done: make(chan struct{})}
	v.readSize()
	if live || size != nil {
		go v.loop()
	} else {
		close(v.done)
	}
	return v
}

func (v *termView) readSize() {
	if v.size == nil {
		return
	}
	if c, r, ok := v.size(); ok {
		v.cols, v.rows = c, r
	}
}

// resized re-reads the terminal's size and redraws the live block for it.
func (v *termView) resized() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.readSize()
	v.dirty = true
}

// stop ends the view: the live block is cleared and not drawn again.
func (v *termView) stop() {
	v.mu.Lock()
	if v.stopped {
		v.mu.Unlock()
		return
	}
	v.clearBlock()
	if v.asking { // end the question's line
		_, _ = io.WriteString(v.w, "\n")
	}
	v.stopped = true
	v.mu.Unlock()
	close(v.quit)
	<-v.done
}

// loop redraws the live block when it changed, at most every 80 ms, and
// follows the terminal's size.
func (v *termView) loop() {
	defer close(v.done)
	resize := make(chan os.Signal, 1)
	if v.size != nil {
		notifyResize(resize)
		defer stopResize(resize)
	}
	t := time.NewTicker(80 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-v.quit:
			return
		case <-resize:
			v.resized()
		case <-t.C:
			v.redraw()
		}
	}
}

// redraw draws the live block again if it changed.
func (v *termView) redraw() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.dirty && !v.stopped {
		v.clearBlock()
		v.drawBlock()
		v.dirty = false
	}
}

// limit is the widest line the view writes: one column short of the
// terminal, so that no terminal wraps a line early; 0 means no limit.
func (v *termView) limit() int {
	if v.cols <= 0 {
		return 0
	}
	return max(v.cols-1, 1)
}

// printf prints above the live block. The format is the program's own; the
// arguments are escaped (safeArgs) and every line is fit to the terminal.
func (v *termView) printf(format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.put(fmt.Sprintf(format, safeArgs(args)...))
}

// line is printf with the lock held.
func (v *termView) line(format string, args ...any) {
	v.put(fmt.Sprintf(format, safeArgs(args)...))
}

// put writes s, made by the program from escaped parts, above the live
// block (the lock is held). On a terminal, a line wider than the terminal
// is wrapped at spaces, its continuation indented under it: nothing is cut.
func (v *termView) put(s string) {
	s = safeText(s) // the parts are escaped already; this keeps it so whatever a caller passes
	v.clearBlock()
	if lim := v.limit(); lim > 0 {
		lines := strings.Split(s, "\n")
		for i, l := range lines {
			if strings.Contains(l, "\t") || displayWidth(l) > lim {
				lead := len(l) - len(strings.TrimLeft(l, " "))
				lines[i] = strings.Join(wrapWords(l, lim, strings.Repeat(" ", lead+4)), "\n")
			}
		}
		s = strings.Join(lines, "\n")
	}
	_, _ = io.WriteString(v.w, s)
	v.drawBlock()
}

// prose returns text (escaped, one paragraph per line) wrapped at spaces to
// the terminal's width, continuation lines indented; each line ends with a
// newline.
func (v *termView) prose(text, indent string) string {
	var b strings.Builder
	for _, para := range strings.Split(text, "\n") {
		for _, l := range wrapWords(para, v.limit(), indent) {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// ask prints a question that waits for an answer typed on the terminal:
// the live block stays off the screen until answered, so that the answer
// is typed after the question and not among the bars.
func (v *termView) ask(format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clearBlock()
	v.asking = true
	q := fmt.Sprintf(format, safeArgs(args)...)
	v.put(strings.Join(wrapWords(q, v.limit(), "  "), "\n"))
}

// answered ends ask.
func (v *termView) answered() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.asking = false
	v.dirty = true
}

// clearBlock moves the cursor up over the live block and clears it. When
// the terminal has become narrower since, it counts the rows the block's
// lines now wrap to (terminals reflow their lines).
func (v *termView) clearBlock() {
	if !v.live || len(v.drawn) == 0 {
		return
	}
	n := 0
	for _, w := range v.drawn {
		n += rowsFor(w, v.cols)
	}
	fmt.Fprintf(v.w, "\x1b[%dA\x1b[J", n)
	v.drawn = v.drawn[:0]
}

// rowsFor is how many rows a line w columns wide takes on a terminal cols
// wide.
func rowsFor(w, cols int) int {
	if cols <= 0 || w <= cols {
		return 1
	}
	return (w + cols - 1) / cols
}

func (v *termView) drawBlock() {
	if !v.live || v.asking || v.stopped {
		return
	}
	ids := v.running
	more := 0
	// The block must fit on the screen with the cursor under it, or moving
	// up over it would stop at the top and leave rows behind.
	if v.rows > 1 && len(ids) > v.rows-1 {
		keep := max(v.rows-2, 0)
		ids, more = ids[:keep], len(ids)-keep
	}
	for _, id := range ids {
		v.drawLine(v.barLine(id))
	}
	if more > 0 {
		v.drawLine(fitWidth(fmt.Sprintf("  … and %d more calls running", more), v.limit()))
	}
}

func (v *termView) drawLine(l string) {
	l = safeLine(l)
	_, _ = io.WriteString(v.w, l+"\n")
	v.drawn = append(v.drawn, displayWidth(l))
}

// barLine is a running call's line of the live block: its id, its tool,
// a bar and the last progress message, or why it waits.
func (v *termView) barLine(id string) string {
	r := v.calls[id]
	if r.id != "" {
		id = r.label + r.id
	}
	lim := v.limit()
	if lim <= 0 {
		return fmt.Sprintf("  %-8s %-15s %s %s", safeLine(id), safeLine(r.tool), v.barOf(r, 24), clipRunes(safeLine(r.message), 48))
	}
	tw := 15 // the tool's column; narrower on a narrow terminal
	if lim < 60 {
		tw = max(8, lim/4)
	}
	head := "  " + padRight(fitWidth(safeLine(id), 8), 8) + " " + padRight(fitWidth(safeLine(r.tool), tw), tw) + " "
	// The bar takes half of what is left, between 6 and 24 cells.
	bw := min(24, max(6, (lim-displayWidth(head)-6)/2))
	return fitWidth(head+v.barOf(r, bw)+" "+safeLine(r.message), lim)
}

// barOf is a call's bar, or the label of what it waits for.
func (v *termView) barOf(r *callRow, width int) string {
	if r.waiting != "" {
		return r.waiting
	}
	return bar(r.fraction, width)
}

// bar draws a progress bar with its percentage; unknown progress is dots.
func bar(f float64, width int) string {
	if f < 0 || f != f {
		return "[" + strings.Repeat("·", width) + "]     "
	}
	f = min(max(f, 0), 1)
	n := int(f * float64(width))
	return fmt.Sprintf("[%s%s] %3d%%", strings.Repeat("█", n), strings.Repeat("░", width-n), int(f*100))
}

// waitLabel says what a suspended call waits for.
func waitLabel(reason string) string {
	switch reason {
	case "approval":
		return "awaiting approval"
	case "external":
		return "awaiting an answer"
	}
	return "awaiting " + safeLine(reason)
}

// Observe implements toolkit.Observer.
func (v *termView) Observe(ev *events.Event) {
	if ev.Call == "" {
		v.sessionEvent(ev)
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	key, label := v.rowKey(ev.Session, ev.Call)
	r := v.calls[key]
	if r == nil {
		r = &callRow{tool: ev.Tool, fraction: -1, label: label, id: ev.Call}
		v.calls[key] = r
	}
	r.events++
	switch ev.Type {
	case events.TypeStart:
		if v.live {
			v.running = append(v.running, key)
			v.dirty = true
			return
		}
		v.line("  %s%-11s %-8s %s\n", label, "start", ev.Call, ev.Tool)
	case events.TypeProgress:
		p := ev.Progress
		r.waiting = ""
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
			v.line("  %s%-11s %-8s %s\n", label, "...", ev.Call, p.Message)
			return
		}
		if q := int(*p.Fraction * 4); q > r.lastStep {
			r.lastStep = q
			v.line("  %s%-11s %-8s %s\n", label, fmt.Sprintf("%3d%%", int(*p.Fraction*100)), ev.Call, p.Message)
		}
	case events.TypeDelta:
		if r.waiting != "" {
			r.waiting = ""
			v.dirty = true
		}
	case events.TypeSuspend:
		r.waiting = waitLabel(ev.Suspend.Reason)
		v.dirty = true
		v.line("  %s%-11s %-8s %s (%s)\n", label, "waiting", ev.Call, ev.Tool, ev.Suspend.Reason)
		v.flushAfter(r)
	case events.TypeResult:
		v.flushAfter(r) // the wait's lines, if its event never came
		for i, id := range v.running {
			if id == key {
				v.running = append(v.running[:i], v.running[i+1:]...)
				break
			}
		}
		v.line("  %s%-11s %-8s %s in %s\n", label, ev.Result.State, ev.Call, ev.Tool, ms(ev.Result.DurationMS))
	}
}

// afterSuspend prints a line about a call's wait (an approval request,
// who answers it) once the view has shown the call's start and wait: the
// view is handed the events on its own goroutine, later than the approval
// desk learns of the wait. Arguments are escaped as printf's.
func (v *termView) afterSuspend(call, format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	r := v.calls[call]
	if r == nil {
		r = &callRow{fraction: -1}
		v.calls[call] = r
	}
	s := fmt.Sprintf(format, safeArgs(args)...)
	if r.suspendShown {
		v.put(s)
		return
	}
	r.after = append(r.after, s)
}

// suspendShownCh is closed once the view has shown the call's wait (or its
// result): a question asked on the terminal comes after it.
func (v *termView) suspendShownCh(call string) <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	r := v.calls[call]
	if r == nil {
		r = &callRow{fraction: -1}
		v.calls[call] = r
	}
	if r.shown == nil {
		r.shown = make(chan struct{})
		if r.suspendShown {
			close(r.shown)
		}
	}
	return r.shown
}

// afterSuspendOf is afterSuspend for a call the view knows (a call of a
// turn it showed); anything else (a batch's id, a call of another session)
// prints at once.
func (v *termView) afterSuspendOf(session, call, format string, args ...any) {
	v.mu.Lock()
	_, known := v.calls[call]
	known = known && (session == v.tour || v.tour == "")
	v.mu.Unlock()
	if known {
		v.afterSuspend(call, format, args...)
		return
	}
	v.printf(format, args...)
}

// flushAfter prints the lines that waited for the call's wait to show
// (the lock is held).
func (v *termView) flushAfter(r *callRow) {
	if !r.suspendShown && r.shown != nil {
		close(r.shown)
	}
	r.suspendShown = true
	for _, s := range r.after {
		v.put(s)
	}
	r.after = nil
}

// resumed labels a call that was waiting (for an approval, say) as running
// again, until its next progress report.
func (v *termView) resumed(session, call, label string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	key, _ := v.rowKey(session, call)
	if r := v.calls[key]; r != nil && r.waiting != "" {
		r.waiting = ""
		r.message = label
		v.dirty = true
	}
}

func (v *termView) sessionEvent(ev *events.Event) {
	switch ev.Type {
	case "groups", "skills": // approvals are the desk's to print
		v.mu.Lock()
		_, label := v.rowKey(ev.Session, "")
		v.line("  %s%-11s %s\n", label, ev.Type, ev.Data)
		v.mu.Unlock()
	case agent.EventContextCut:
		if l := contextCutLine(ev); l != "" {
			v.mu.Lock()
			_, label := v.rowKey(ev.Session, "")
			v.line("  %s%-11s %s\n", label, "context", l)
			v.mu.Unlock()
		}
	}
}

// user prints the user's request.
func (v *termView) user(task string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.put("\n" + v.prose("user: "+safeText(task), "      "))
}

// turn prints what the model asked for and the tools it was offered.
func (v *termView) turn(n int, t Turn, defs []toolkit.Definition) {
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Name
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	var b strings.Builder
	b.WriteString("\n")
	heading := fmt.Sprintf("=== Turn %d ===", n)
	if t.Note != "" {
		heading = fmt.Sprintf("=== Turn %d: %s ===", n, safeLine(t.Note))
	}
	b.WriteString(v.prose(heading, "    "))
	b.WriteString(v.prose("offered: "+safeLine(strings.Join(names, ", ")), "         "))
	if t.Text != "" {
		b.WriteString(v.prose("model: "+safeText(t.Text), "       "))
	}
	for _, c := range t.Calls {
		fmt.Fprintf(&b, "  %-8s %s %s\n", safeLine(c.ID), safeLine(c.Name), safeLine(string(c.Args)))
		if r := v.calls[c.ID]; r != nil {
			r.turn = n
		} else {
			v.calls[c.ID] = &callRow{turn: n, tool: c.Name, fraction: -1}
		}
	}
	b.WriteString(v.prose("--- progress (for people; never shown to the model) ---", ""))
	v.put(b.String())
}

// answer prints the model's last turn: its answer, without calls.
func (v *termView) answer(n int, t Turn) {
	v.mu.Lock()
	defer v.mu.Unlock()
	heading := "the model answers (no more calls)"
	if t.Note != "" {
		heading = safeLine(t.Note)
	}
	v.put("\n" + v.prose(fmt.Sprintf("=== Turn %d: %s ===", n, heading), "    ") + v.prose("model: "+safeText(t.Text), "       "))
}

// results prints a turn's results: what the model sees, in call order.
func (v *termView) results(rs []toolkit.Result, took time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var b strings.Builder
	b.WriteString(v.prose(fmt.Sprintf("--- results (what the model sees, in call order; the turn took %v) ---", took.Round(time.Millisecond)), ""))
	for _, r := range rs {
		fmt.Fprintf(&b, "[%s] %s -> %s\n", safeLine(r.Call.ID), safeLine(r.Call.Name), safeLine(string(r.State)))
		b.WriteString(indent(clip(safeText(r.Text()), 12), "    "))
		b.WriteString("\n")
	}
	v.put(b.String())
}

// summary prints the table of every call and the totals.
func (v *termView) summary(sum runSummary, st natsbus.PublisherStats) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var b strings.Builder
	b.WriteString(v.prose(fmt.Sprintf("\n=== Summary: %d turns, %d calls in %v; %d events published to NATS (%d progress dropped, %d undelivered) ===",
		sum.Turns, len(sum.Results), sum.Took.Round(time.Millisecond), st.Published, st.DroppedProgress, st.Undelivered), "    "))
	fmt.Fprintf(&b, "%-5s %-8s %-24s %-12s %10s %7s\n", "turn", "call", "tool", "state", "duration", "events")
	states := map[events.State]int{}
	for _, r := range sum.Results {
		row := v.calls[r.Call.ID]
		turn, evs := 0, 0
		if row != nil {
			turn, evs = row.turn, row.events
		}
		states[r.State]++
		fmt.Fprintf(&b, "%-5d %s %s %-12s %10s %7d\n", turn, padRight(fitWidth(safeLine(r.Call.ID), 8), 8), padRight(fitWidth(safeLine(r.Call.Name), 24), 24),
			safeLine(string(r.State)), ms(float64(r.Duration)/float64(time.Millisecond)), evs)
	}
	var parts []string
	for s, n := range states {
		parts = append(parts, fmt.Sprintf("%d %s", n, safeLine(string(s))))
	}
	sort.Strings(parts)
	b.WriteString(v.prose("states: "+strings.Join(parts, ", "), "        "))
	v.put(b.String())
}

func ms(f float64) string {
	if f < 1 {
		return fmt.Sprintf("%.2fms", f)
	}
	return (time.Duration(f * float64(time.Millisecond))).Round(time.Millisecond).String()
}

// clipRunes cuts s to n runes, the last an ellipsis.
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
