// Command demo shows toolstream at work: it registers tools that do real
// work on a folder, runs a model-style batch of tool calls and prints the
// progress people see apart from the results the model sees.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", ".", "folder the demo's tools work on")
	session := fs.String("session", "demo", "session id")
	verbose := fs.Bool("v", false, "log every call (zerolog, to stderr)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: go run ./cmd/demo [flags]\n\nRuns a batch of tool calls against a folder and prints progress apart from results.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	root, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	logger := zerolog.Nop()
	if *verbose {
		logger = zerolog.New(zerolog.ConsoleWriter{Out: stderr}).With().Timestamp().Logger()
	}
	out := &printer{w: stdout, last: map[string]int{}}
	tk := toolkit.New(toolkit.WithObserver(out), toolkit.WithLogger(logger))
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tk.Close(cctx)
	}()
	if err := registerTools(tk, root); err != nil {
		return err
	}
	sess, err := tk.Session(*session)
	if err != nil {
		return err
	}

	calls := scriptedTurn()
	fmt.Fprintf(stdout, "toolstream demo: %d tools on %s, session %q\n", len(tk.Tools()), root, sess.ID())
	fmt.Fprintf(stdout, "The model asks for %d calls:\n", len(calls))
	for _, c := range calls {
		fmt.Fprintf(stdout, "  %-8s %s %s\n", c.ID, c.Name, c.Args)
	}
	fmt.Fprintln(stdout, "\n--- progress (for people; never shown to the model) ---")

	start := time.Now()
	runs := sess.Start(ctx, calls)
	var order []string
	for res := range runs.Results() { // as each call finishes
		order = append(order, res.Call.ID)
	}
	results := runs.Wait() // all of them, in call order
	fmt.Fprintf(stdout, "\ncompletion order: %s\n", strings.Join(order, ", "))

	fmt.Fprintf(stdout, "\n--- results (what the model sees, in call order; run took %v) ---\n", time.Since(start).Round(time.Millisecond))
	for _, r := range results {
		fmt.Fprintf(stdout, "\n[%s] %s -> %s\n", r.Call.ID, r.Call.Name, r.State)
		fmt.Fprintln(stdout, indent(clip(r.Text(), 12), "    "))
	}
	return nil
}

// scriptedTurn is what a model might ask for in one turn: three parallel
// read-only calls, and one with a typo to show the error the model gets.
func scriptedTurn() []toolkit.Call {
	mk := func(id, name string, args any) toolkit.Call {
		b, _ := json.Marshal(args)
		return toolkit.Call{ID: id, Name: name, Args: b}
	}
	return []toolkit.Call{
		mk("call_1", "count_lines", map[string]any{"dir": "."}),
		mk("call_2", "hash_files", map[string]any{"dir": ".", "limit": 8}),
		mk("call_3", "search_text", map[string]any{"dir": ".", "query": "TODO", "max_matches": 5}),
		mk("call_4", "count_line", map[string]any{"dir": "."}),
		mk("call_5", "search_text", map[string]any{"dir": ".", "max_matches": "many"}),
	}
}

// printer is the demo's observer: it prints starts and progress, at most
// one progress line per call per 25%.
type printer struct {
	mu   sync.Mutex
	w    io.Writer
	last map[string]int
}

func (p *printer) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format, args...)
}

func (p *printer) Observe(ev *events.Event) {
	switch ev.Type {
	case events.TypeStart:
		p.printf("  %-7s %-8s %s\n", "start", ev.Call, ev.Tool)
	case events.TypeResult:
		p.printf("  %-7s %-8s %s in %.1fms\n", ev.Result.State, ev.Call, ev.Tool, ev.Result.DurationMS)
	case events.TypeProgress:
		if ev.Progress.Fraction == nil {
			p.printf("  ...     %-8s %s\n", ev.Call, ev.Progress.Message)
			return
		}
		pct := int(*ev.Progress.Fraction * 100)
		p.mu.Lock()
		step := pct / 25
		show := step > p.last[ev.Call] || pct == 100 && p.last[ev.Call] < 4
		if show {
			p.last[ev.Call] = step
		}
		p.mu.Unlock()
		if show {
			p.printf("  %3d%%    %-8s %s\n", pct, ev.Call, ev.Progress.Message)
		}
	}
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
