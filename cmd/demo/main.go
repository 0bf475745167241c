// Command demo is a tour of toolstream: an agent loop (a scripted model, or
// a real one through an OpenAI-compatible API) calls tools that do real
// work on a folder, while a web page and the terminal show every call live
// from the events published to NATS.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/term"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/toolkit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// config is everything the flags set.
type config struct {
	dir, session, task          string
	natsURL, natsListen, listen string
	durable, once, verbose      bool
	plain                       bool
	speed                       float64
	approve                     string
	model, baseURL, apiKey      string
	maxTurns                    int
	largeMiB                    int
}

func parseFlags(args []string, stdout, stderr io.Writer) (*config, error) {
	c := &config{}
	interactive := isTerminal(stdout)
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.dir, "dir", ".", "folder the demo's tools work on")
	fs.StringVar(&c.session, "session", "demo", "session id of the conversation")
	fs.StringVar(&c.task, "task", defaultTask, "what the user asks the agent (a real model reads it; the scripted one follows its script)")
	fs.StringVar(&c.natsURL, "nats", os.Getenv(natsbus.EnvURL), "NATS server URL; empty: an embedded server (default $"+natsbus.EnvURL+")")
	fs.StringVar(&c.natsListen, "nats-listen", "127.0.0.1:4222", "embedded server: address for outside NATS clients such as the nats CLI (empty: none; taken: any free port)")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:7070", "address of the live web page (empty: no page; taken: any free port)")
	fs.BoolVar(&c.durable, "durable", true, "keep events in a JetStream stream (the web page replays the history from it)")
	fs.BoolVar(&c.once, "once", !interactive, "exit after the run instead of keeping the page up until Ctrl-C (default: true when stdout is not a terminal)")
	fs.Float64Var(&c.speed, "speed", 1, "pace of the scripted run: 1 is easy to watch, 4 is faster, 0 runs flat out")
	fs.StringVar(&c.approve, "approve", "auto", "who answers approval requests: auto (the scripted agent, after a pause in which the page can answer first), page (only the web page), terminal (you, here)")
	fs.BoolVar(&c.plain, "plain", false, "print plain lines even on a terminal (no live progress bars)")
	fs.BoolVar(&c.verbose, "v", false, "log every call (zerolog, to stderr)")
	fs.StringVar(&c.model, "model", "", "drive the loop with this model through an OpenAI-compatible API (default $OPENAI_MODEL); without an API key the scripted model runs")
	fs.StringVar(&c.baseURL, "base-url", "", "OpenAI-compatible API base URL (default $OPENAI_BASE_URL, else OpenAI's)")
	fs.StringVar(&c.apiKey, "api-key", "", "API key (default $OPENAI_API_KEY)")
	fs.IntVar(&c.maxTurns, "max-turns", 12, "stop a real model's loop after this many turns")
	fs.IntVar(&c.largeMiB, "large-result", 0, "add export_table, a tool whose result (this many MiB of text, and JSON) is larger than one NATS message, and a scripted turn that calls it (0: none)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: go run ./cmd/demo [flags]

An agent loop calls tools that do real work on a folder: parallel and serial
calls, tool groups switched by reset_tools, a skill loaded, a flaky tool
retried, a large result stored away, an approval, an external tool and a
cancelled call. Every event goes to NATS; a web page and this terminal show
them live.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags start with -; see -help)", fs.Arg(0))
	}
	switch c.approve {
	case "auto", "page", "terminal":
	default:
		return nil, fmt.Errorf("-approve %q: want auto, page or terminal", c.approve)
	}
	if c.approve == "page" && c.listen == "" {
		return nil, errors.New("-approve page needs the web page: set -listen")
	}
	if c.largeMiB < 0 || c.largeMiB > 256 {
		return nil, fmt.Errorf("-large-result %d: from 0 to 256 (MiB)", c.largeMiB)
	}
	if c.speed < 0 {
		return nil, fmt.Errorf("-speed %v: must be 0 or more", c.speed)
	}
	if c.listen != "" && !c.durable {
		return nil, errors.New("the web page replays events from the durable stream: use -durable, or -listen '' for no page")
	}
	if err := toolkit.ValidateSessionID(c.session); err != nil {
		return nil, fmt.Errorf("-session: %w", err)
	}
	return c, nil
}

const defaultTask = "Give me an overview of this folder: languages and line counts, file hashes, TODOs, sizes and a full inventory. Save a short note with the summary, check with me before anything else, then watch the folder for changes."

// scaled is base divided by the speed (0 for speed 0: flat out).
func (c *config) scaled(base time.Duration) time.Duration {
	if c.speed == 0 {
		return 0
	}
	return time.Duration(float64(base) / c.speed)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stdout, stderr)
	if err != nil {
		return err
	}
	root, err := filepath.Abs(cfg.dir)
	if err != nil {
		return err
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return fmt.Errorf("-dir %s: not a folder", cfg.dir)
	}
	logger := zerolog.Nop()
	if cfg.verbose {
		logger = zerolog.New(zerolog.ConsoleWriter{Out: stderr}).With().Timestamp().Logger()
	}

	bus, err := openBus(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer closeWithin(5*time.Second, bus.Close)

	view := newTermView(stdout, !cfg.plain && isTerminal(stdout))
	defer view.stop()
	tk := toolkit.New(toolkit.WithObserver(view), toolkit.WithInlineObserver(bus.Publisher()), toolkit.WithLogger(logger))
	defer closeWithin(5*time.Second, tk.Close)

	env := &toolEnv{root: root, notes: filepath.Join(os.TempDir(), "toolstream-demo-notes"), step: cfg.scaled(6 * time.Millisecond)}
	gm, ld, err := registerTools(tk, env)
	if err != nil {
		return err
	}
	if cfg.largeMiB > 0 {
		if err := tk.Add(largeTool(cfg.largeMiB)); err != nil {
			return err
		}
	}
	perms, err := useInterceptors(tk)
	if err != nil {
		return err
	}
	sess, err := tk.Session(cfg.session)
	if err != nil {
		return err
	}
	stopAnswering, err := answerQuestions(bus, tk)
	if err != nil {
		return err
	}
	defer stopAnswering()

	model, why := chooseModel(cfg)
	if c, ok := model.(io.Closer); ok {
		defer c.Close()
	}
	desk := newApprovalDesk(perms, cfg, view)

	var page string
	if cfg.listen != "" {
		srv, err := serveWeb(cfg.listen, &webApp{bus: bus, tk: tk, desk: desk, session: sess.ID(), model: model.Name()})
		if err != nil {
			return err
		}
		defer closeWithin(2*time.Second, srv.Shutdown)
		page = srv.URL
	}

	view.printf("toolstream demo: %d tools in %d groups, %d skills, working on %s\n", len(tk.Tools()), len(gm.Groups()), len(ld.Skills(sess.ID())), root)
	view.printf("model: %s%s\n", model.Name(), why)
	if page != "" {
		view.printf("live page: %s/?session=%s\n", page, sess.ID())
	}
	printWatch(view, bus, sess.ID())

	a := &agent{sess: sess, model: model, view: view, desk: desk, maxTurns: cfg.maxTurns, loader: ld}
	sum, err := a.run(ctx, cfg.task)
	if err != nil {
		return err
	}
	// Every event of the run handed to NATS before the summary counts them.
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_ = bus.Publisher().Flush(fctx)
	cancel()
	view.summary(sum, bus.Publisher().Stats())

	if !cfg.once && page != "" && ctx.Err() == nil {
		view.printf("\nThe page stays up at %s/?session=%s — press Ctrl-C to quit.\n", page, sess.ID())
		<-ctx.Done()
	}
	return nil
}

// chooseModel picks the real model when one is configured with a key, and
// says why not otherwise.
func chooseModel(cfg *config) (Model, string) {
	oc, ok, why := openAIFromEnv(cfg.model, cfg.baseURL, cfg.apiKey)
	if ok {
		m, err := newOpenAIModel(oc)
		if err == nil {
			return m, " (a real model through its HTTP API)"
		}
		why = err.Error()
	}
	s := newScriptedModel(cfg.scaled(500 * time.Millisecond))
	if cfg.largeMiB > 0 {
		s.extra = append(s.extra, largeTurn())
	}
	if cfg.model != "" || os.Getenv("OPENAI_MODEL") != "" {
		return s, " (not the real model: " + why + ")"
	}
	return s, " (deterministic; -model and an API key drive a real one)"
}

// openBus opens the NATS side: the given server, or an embedded one that
// outside clients reach on the listen address (any free port if that one
// is taken).
func openBus(ctx context.Context, cfg *config, log zerolog.Logger) (*natsbus.Bus, error) {
	opts := []natsbus.Option{natsbus.WithLogger(log)}
	if cfg.natsURL != "" {
		opts = append(opts, natsbus.WithURL(cfg.natsURL))
	}
	if cfg.durable {
		opts = append(opts, natsbus.WithDurable(natsbus.Durable{}))
	}
	if cfg.natsURL != "" || cfg.natsListen == "" {
		return natsbus.Open(ctx, opts...)
	}
	bus, err := natsbus.Open(ctx, append(opts, natsbus.WithListen(cfg.natsListen))...)
	if err != nil && strings.Contains(err.Error(), "address already in use") {
		bus, err = natsbus.Open(ctx, append(opts, natsbus.WithListen("127.0.0.1:0"))...)
	}
	return bus, err
}

// printWatch tells how to watch the events with the nats CLI.
func printWatch(v *termView, bus *natsbus.Bus, session string) {
	url := bus.ClientURL()
	if url == "" {
		return
	}
	subj := bus.Subjects()
	v.printf("NATS: %s — watch with the nats CLI (go install github.com/nats-io/natscli/nats@v0.5.0):\n", url)
	v.printf("  nats sub '%s' --server %s            # this session, everything\n", subj.Session(session), url)
	v.printf("  nats sub '%s' --server %s      # final results, all sessions\n", subj.AllOfType(events.TypeResult), url)
	if bus.Stream() != "" {
		v.printf("  nats stream view %s --server %s          # replay what was kept\n", bus.Stream(), url)
	}
}

func closeWithin(d time.Duration, f func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_ = f(ctx)
}

// isTerminal reports whether w is an interactive terminal (not merely a
// character device: /dev/null is one too).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb"
}
