// Command demo shows toolstream at work: it registers tools that do real
// work on a folder, runs a model-style batch of tool calls and prints the
// progress people see apart from the results the model sees.
package main

import (
	"bufio"
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
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/skills"
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
	natsURL := fs.String("nats", os.Getenv(events.EnvURL), "NATS server URL; empty: an embedded server (default $"+events.EnvURL+")")
	listen := fs.String("listen", "127.0.0.1:4222", "address of the embedded server's listener for outside clients (port 0: any free port)")
	durable := fs.Bool("durable", false, "keep events in a JetStream stream (replayable)")
	wait := fs.Bool("wait", false, "wait for Enter before the batch runs, so that you can start watching first")
	ask := fs.Bool("ask", false, "answer approval requests on the terminal instead of letting the scripted agent approve them")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: go run ./cmd/demo [flags]\n\nRuns a batch of tool calls against a folder, prints progress apart from results, and publishes every event to NATS.\n\nFlags:\n")
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
	bus, err := openBus(ctx, *natsURL, *listen, *durable, logger)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = bus.Close(cctx)
	}()
	out := &printer{w: stdout, last: map[string]int{}}
	tk := toolkit.New(toolkit.WithObserver(out), toolkit.WithInlineObserver(bus.Publisher()), toolkit.WithLogger(logger))
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tk.Close(cctx)
	}()
	gm, ld, err := registerTools(tk, root)
	if err != nil {
		return err
	}
	perms, err := useInterceptors(tk)
	if err != nil {
		return err
	}
	approver := scriptedApprover
	if *ask {
		approver = terminalApprover(bufio.NewReader(os.Stdin))
	}
	sess, err := tk.Session(*session)
	if err != nil {
		return err
	}

	fmt.Fprintf(stdout, "toolstream demo: %d tools in %d groups, %d skills, on %s, session %q\n", len(tk.Tools()), len(gm.Groups()), len(ld.Skills(*session)), root, sess.ID())
	printWatch(stdout, bus, sess.ID())
	if *wait {
		fmt.Fprint(stdout, "\nPress Enter to start... ")
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil && err != io.EOF {
			return err
		}
	}
	fmt.Fprintf(stdout, "\nThe system prompt gets this fragment about skills:\n%s", indent(strings.TrimSpace(ld.Prompt(sess.ID())), "  | "))
	fmt.Fprintln(stdout)
	if err := printTools(ctx, stdout, sess, "at the start"); err != nil {
		return err
	}
	for i, turn := range scriptedTurns() {
		if err := runTurn(ctx, stdout, out, sess, perms, approver, i+1, turn); err != nil {
			return err
		}
		if name := turn[0].Name; name == groups.MetaTool || name == skills.LoadTool {
			if err := printTools(ctx, stdout, sess, "after "+name); err != nil {
				return err
			}
		}
	}
	st := bus.Publisher().Stats()
	fmt.Fprintf(stdout, "\n%d events published to NATS (%d progress dropped, %d undelivered)\n", st.Published, st.DroppedProgress, st.Undelivered)
	return nil
}

// printTools shows the tools the model is offered now.
func printTools(ctx context.Context, w io.Writer, sess *toolkit.Session, when string) error {
	defs, err := sess.Definitions(ctx)
	if err != nil {
		return err
	}
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	fmt.Fprintf(w, "\nTools the model sees %s: %s\n", when, strings.Join(names, ", "))
	return nil
}

// runTurn runs one model turn's calls and prints progress apart from results.
func runTurn(ctx context.Context, w io.Writer, out *printer, sess *toolkit.Session, perms *interceptors.Permissions, approve approver, n int, calls []toolkit.Call) error {
	fmt.Fprintf(w, "\n=== Turn %d: the model asks for %d call(s) ===\n", n, len(calls))
	for _, c := range calls {
		fmt.Fprintf(w, "  %-8s %s %s\n", c.ID, c.Name, c.Args)
	}
	fmt.Fprintln(w, "\n--- progress (for people; never shown to the model) ---")
	start := time.Now()
	run := sess.Start(ctx, calls)
	var order []string
	for res := range run.Results() { // as each call finishes
		if !res.Final() { // suspended: waiting for a person's approval
			if err := answerApproval(ctx, out, sess.ID(), res.Call.ID, perms, approve); err != nil {
				return err
			}
			continue
		}
		order = append(order, res.Call.ID)
	}
	results := run.Wait() // all of them, in call order
	out.printf("\ncompletion order: %s\n", strings.Join(order, ", "))
	fmt.Fprintf(w, "\n--- results (what the model sees, in call order; the turn took %v) ---\n", time.Since(start).Round(time.Millisecond))
	for _, r := range results {
		fmt.Fprintf(w, "\n[%s] %s -> %s\n", r.Call.ID, r.Call.Name, r.State)
		fmt.Fprintln(w, indent(clip(r.Text(), 30), "    "))
	}
	return nil
}

// openBus opens the NATS side: the given server, or an embedded one that
// outside clients reach on listen (any free port if that one is taken).
func openBus(ctx context.Context, url, listen string, durable bool, log zerolog.Logger) (*events.Bus, error) {
	opts := []events.Option{events.WithLogger(log)}
	if url != "" {
		opts = append(opts, events.WithURL(url))
	}
	if durable {
		opts = append(opts, events.WithDurable(events.Durable{}))
	}
	if url != "" || listen == "" {
		return events.Open(ctx, opts...)
	}
	bus, err := events.Open(ctx, append(opts, events.WithListen(listen))...)
	if err != nil && strings.Contains(err.Error(), "address already in use") {
		bus, err = events.Open(ctx, append(opts, events.WithListen("127.0.0.1:0"))...)
	}
	return bus, err
}

// printWatch tells how to watch the events with the nats CLI.
func printWatch(w io.Writer, bus *events.Bus, session string) {
	url := bus.ClientURL()
	if url == "" {
		fmt.Fprintln(w, "\nEvents go to an embedded NATS server without a listener (-listen to open one).")
		return
	}
	subj := bus.Subjects()
	fmt.Fprintf(w, "\nEvents go to NATS at %s. Watch them with the nats CLI (go install github.com/nats-io/natscli/nats@v0.5.0):\n", url)
	fmt.Fprintf(w, "  nats sub '%s' --server %s            # this session, everything\n", subj.Session(session), url)
	fmt.Fprintf(w, "  nats sub '%s' --server %s      # final results, all sessions\n", subj.AllOfType(events.TypeResult), url)
	fmt.Fprintf(w, "  nats sub '%s' --server %s    # progress only\n", subj.AllOfType(events.TypeProgress), url)
	if bus.Stream() != "" {
		fmt.Fprintf(w, "  nats stream view %s --server %s          # replay what was kept\n", bus.Stream(), url)
	}
}

// scriptedTurns is what a model might ask for, turn by turn: switch on the
// notes group, load the file-analysis skill (which switches on the files
// group), then three parallel read-only calls, one with a typo and one with
// bad arguments to show the errors the model gets, and a note written last
// (a serial call that needs a person's approval, whose result has an
// e-mail address redacted); last a flaky tool that is retried and an
// inventory too large for the conversation, which is evicted.
func scriptedTurns() [][]toolkit.Call {
	mk := func(id, name string, args any) toolkit.Call {
		b, _ := json.Marshal(args)
		return toolkit.Call{ID: id, Name: name, Args: b}
	}
	return [][]toolkit.Call{
		{mk("call_0", groups.MetaTool, map[string]any{"notes": true})},
		{mk("call_s", skills.LoadTool, map[string]any{"skillId": "file-analysis", "path": "SKILL.md"})},
		{
			mk("call_1", "count_lines", map[string]any{"dir": "."}),
			mk("call_2", "hash_files", map[string]any{"dir": ".", "limit": 8}),
			mk("call_3", "search_text", map[string]any{"dir": ".", "query": "TODO", "max_matches": 5}),
			mk("call_4", "count_line", map[string]any{"dir": "."}),
			mk("call_5", "search_text", map[string]any{"dir": ".", "max_matches": "many"}),
			mk("call_6", "write_note", map[string]any{"title": "demo", "text": "Counted lines and hashed files. Questions: ops@example.com"}),
		},
		{
			mk("call_7", "folder_stats", map[string]any{"dir": "."}),
			mk("call_8", "file_inventory", map[string]any{"dir": "."}),
		},
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
