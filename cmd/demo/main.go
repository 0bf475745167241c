// Command demo is a tour of toolstream: an agent loop (a scripted model, or
// a real one through the OpenAI or Anthropic adapters) calls tools that do
// real work on a folder, while a web page and the terminal show every call
// live from the events published to NATS.
//
// It is built the way a user would build an application, one concern a file:
// agent.go runs the loop (package agent) and stands for the person who
// presses stop; context.go bounds what the model is sent and runhooks.go
// holds the loop's run hooks; scripted.go plays the deterministic model and providers.go
// builds the real ones; tools.go holds the folder tools, intercept.go the
// interceptors and the approval desk where the page, the terminal and the
// scripted agent answer approvals; term.go and safe.go are the terminal view,
// web.go the page and its SSE feed, uiprotocols.go the AG-UI and AI SDK
// routes, mcpservers.go the -mcp servers; workers.go, workerloss.go and
// natsauth.go run the folder tools in worker processes (-workers) on a NATS
// server with a user per party; resume.go keeps a run in -store's folder.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"golang.org/x/term"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/toolkit"
)

func main() {
	ctx, stop := withSignals(context.Background())
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(ctx, err, os.Stderr))
}

// A signal (Ctrl-C, or SIGTERM from a supervisor) is a normal way to stop
// the demo: the first one cancels the run, which then stops its calls and
// closes the page and NATS (removing the embedded server's files); a second
// one quits at once.

// signalStop is the cause of the context a signal cancelled.
type signalStop struct{ sig os.Signal }

func (s *signalStop) Error() string { return "stopped by " + signalName(s.sig) }

// withSignals returns a context that the first SIGINT or SIGTERM cancels
// with a *signalStop cause; stop releases the signals.
func withSignals(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			cancel(&signalStop{s})
		case <-done:
			return
		}
		select {
		case s := <-sigs:
			fmt.Fprintf(os.Stderr, "\ndemo: %s again: quitting without cleaning up\n", signalName(s))
			os.Exit(signalStatus(s))
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
	}
}

func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "Ctrl-C (SIGINT)"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// signalStatus is the exit status shells give a program a signal ended:
// 128 plus the signal's number (130 for SIGINT, 143 for SIGTERM). The demo
// uses it only when a second signal makes it quit without cleaning up.
func signalStatus(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 1
}

// exitCode reports how run ended, on stderr, and returns the exit status:
// 0 when it ran to the end, quit on -help or was stopped by a signal (a
// normal way to end it: the line on stderr says what was stopped), 2 for
// bad flags (like the flag package), 1 for any other failure. Not 130 for
// Ctrl-C: under `go run ./cmd/demo`, the README's command, that would read
// "exit status 130" and make go run itself fail.
func exitCode(ctx context.Context, err error, stderr io.Writer) int {
	var stop *signalStop
	errors.As(context.Cause(ctx), &stop)
	var usage *usageError
	var cut *stopError
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "demo: %s\n", safeLine(err.Error()))
		return 2
	case stop != nil && errors.As(err, &cut):
		fmt.Fprintf(stderr, "demo: stopped by %s in turn %d (%s); the page and NATS are closed\n", signalName(stop.sig), cut.turn, cut.where)
		return 0
	case stop != nil:
		fmt.Fprintf(stderr, "demo: stopped by %s before the run began; nothing is left running\n", signalName(stop.sig))
		return 0
	}
	fmt.Fprintf(stderr, "demo: %s\n", safeText(err.Error()))
	return 1
}

// config is everything the flags set.
type config struct {
	dir, session, task          string
	natsURL, natsListen, listen string
	durable, once, verbose      bool
	store                       string // -store: the embedded server's JetStream folder, kept (resume.go)
	plain                       bool
	speed                       float64
	approve                     string
	approveBatches              bool
	provider, api               string
	model, baseURL, apiKey      string
	maxTurns                    int
	largeMiB                    int
	mcp                         []string // command lines of MCP servers whose tools join the toolkit
	otel                        string   // -otel: none, stderr, file or otlp (otel.go)
	otelFile                    string   // -otel file:PATH
	workers                     int      // tool worker processes (workers.go)
	workerOf                    string   // run as a tool worker on this NATS URL
	auth                        natsAuth // -nats-nkey, -nats-ca, ...: the user and TLS for -nats (natsauth.go)
}

// usageError is a flag the demo cannot work with: reported in one line
// before anything starts, exit status 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() + " (see -help)" }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

func parseFlags(args []string, stdin io.Reader, stdout io.Writer) (*config, error) {
	c := &config{}
	interactive := isTerminal(stdout)
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned as one line; -help prints to stdout
	fs.StringVar(&c.dir, "dir", ".", "folder the demo's tools work on")
	fs.StringVar(&c.session, "session", "demo", "session id of the conversation")
	fs.StringVar(&c.task, "task", defaultTask, "what the user asks the agent (a real model reads it; the scripted one follows its script)")
	fs.StringVar(&c.natsURL, "nats", os.Getenv(natsbus.EnvURL), "NATS server URL, such as nats://127.0.0.1:4222; empty: an embedded server (default $"+natsbus.EnvURL+")")
	fs.StringVar(&c.natsListen, "nats-listen", "127.0.0.1:4222", "embedded server: host:port for outside NATS clients such as the nats CLI (empty: none; taken: any free port)")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:7070", "host:port of the live web page (empty: no page; taken: any free port)")
	fs.StringVar(&c.store, "store", "", "keep the embedded NATS server's JetStream files (events, calls, the conversation) in this folder: the demo run again with the same -store and -session resumes an unfinished run without repeating a finished call")
	fs.BoolVar(&c.durable, "durable", true, "keep events in a JetStream stream (the web page replays the history from it; -durable=false needs -listen '')")
	// -once's default depends on stdout (set after parsing): the flag's own
	// default is false, so that -help says it once, in the text.
	fs.BoolVar(&c.once, "once", false, "exit after the run instead of keeping the page up until Ctrl-C (default: on when stdout is not a terminal, off on a terminal)")
	fs.Float64Var(&c.speed, "speed", 1, "pace of the scripted run: 1 is easy to watch, 4 is faster, 0 runs flat out (0, or 0.01 and more)")
	fs.StringVar(&c.approve, "approve", "auto", "who answers approval requests: auto (the scripted agent, after a pause in which the page can answer first), page (only the web page), terminal (you, here; needs a terminal on stdin)")
	fs.BoolVar(&c.approveBatches, "approve-batches", false, "ask once per batch: a batch with calls that need approval waits, before any of its calls runs, for one decision on the whole batch")
	fs.BoolVar(&c.plain, "plain", false, "print plain lines even on a terminal (no live progress bars)")
	fs.BoolVar(&c.verbose, "v", false, "log every call (zerolog, to stderr)")
	fs.StringVar(&c.provider, "provider", "", "the model's provider: scripted, openai (any OpenAI-compatible server) or anthropic (default: openai when a model and a key are set, else scripted)")
	fs.StringVar(&c.model, "model", "", "the provider's model id (default $OPENAI_MODEL or $ANTHROPIC_MODEL); without an API key the scripted model runs")
	fs.StringVar(&c.baseURL, "base-url", "", "the provider's API base URL, such as http://localhost:11434/v1 for Ollama (default $OPENAI_BASE_URL or $ANTHROPIC_BASE_URL, else the provider's)")
	fs.StringVar(&c.apiKey, "api-key", "", "API key (default $OPENAI_API_KEY or $ANTHROPIC_API_KEY)")
	fs.StringVar(&c.api, "api", "chat", "with -provider openai: chat (Chat Completions, which compatible servers speak) or responses (the Responses API)")
	fs.IntVar(&c.maxTurns, "max-turns", 12, "stop the loop after this many model turns (the scripted model takes 6)")
	fs.Func("mcp", "register the tools of an MCP server started by this command line, in a tool group named after it (repeatable), such as -mcp 'npx -y @modelcontextprotocol/server-everything'", func(v string) error {
		if strings.TrimSpace(v) == "" {
			return errors.New("empty command line")
		}
		c.mcp = append(c.mcp, v)
		return nil
	})
	otelFlag(fs, c)
	fs.IntVar(&c.largeMiB, "large-result", 0, "add export_table, a tool whose result (this many MiB of text, and JSON) is larger than one NATS message, and a scripted turn that calls it (0: none)")
	fs.IntVar(&c.workers, "workers", 0, "run the folder tools in this many worker processes (this binary started again with -worker-of), over NATS")
	fs.StringVar(&c.workerOf, "worker-of", "", "run as a tool worker serving the folder tools on this NATS URL (what -workers starts)")
	natsAuthFlags(fs, &c.auth)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(fs, stdout)
			return nil, err
		}
		return nil, &usageError{err}
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q (flags start with -)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["once"] {
		c.once = !interactive
	}
	if err := c.check(set, stdin); err != nil {
		return nil, err
	}
	return c, nil
}

func printUsage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprint(w, `Usage: go run ./cmd/demo [flags]

An agent loop calls tools that do real work on a folder: parallel and serial
calls, tool groups switched by reset_tools, a skill loaded, a flaky tool
retried, a large result stored away, an approval, an external tool and a
cancelled call. Every event goes to NATS; a web page and this terminal show
them live.

Ctrl-C (or SIGTERM) stops the demo cleanly, at any time: the running calls
are interrupted, the page and NATS closed, and the exit status is 0 (a
second Ctrl-C quits at once, with 130). Bad flags exit with 2, other
failures with 1.

Flags:
`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// check refuses flag values the demo cannot work with, each in one line.
func (c *config) check(set map[string]bool, stdin io.Reader) error {
	switch c.approve {
	case "auto", "page":
	case "terminal":
		if !isTerminalReader(stdin) {
			return usagef("-approve terminal asks you on the terminal, but stdin is not one: use -approve auto or -approve page")
		}
	default:
		return usagef("-approve %q: want auto, page or terminal", c.approve)
	}
	if c.approve == "page" && c.listen == "" {
		return usagef("-approve page needs the web page: set -listen")
	}
	if c.speed != 0 && !(c.speed >= 0.01 && c.speed <= 1e6) { // NaN fails both
		return usagef("-speed %v: must be 0 (flat out) or from 0.01 up", c.speed)
	}
	if err := c.checkWorkers(); err != nil {
		return err
	}
	if err := c.checkNATSAuth(); err != nil {
		return err
	}
	if c.maxTurns < 1 {
		return usagef("-max-turns %d: must be 1 or more", c.maxTurns)
	}
	switch c.provider {
	case "", providerScripted, providerOpenAI, providerAnthropic:
	default:
		return usagef("-provider %q: want scripted, openai or anthropic", c.provider)
	}
	switch {
	case c.api != "chat" && c.api != "responses":
		return usagef("-api %q: want chat or responses", c.api)
	case set["api"] && c.provider == providerAnthropic:
		return usagef("-api chooses between OpenAI's APIs: it does not apply to -provider anthropic")
	}
	if c.largeMiB < 0 || c.largeMiB > 256 {
		return usagef("-large-result %d: from 0 to 256 (MiB)", c.largeMiB)
	}
	if c.store != "" && (c.natsURL != "" || !c.durable) {
		return usagef("-store keeps the embedded server's JetStream files: it needs -durable and no -nats")
	}
	if c.listen != "" && !c.durable {
		return usagef("the web page replays events from the durable stream: use -durable, or -listen '' for no page")
	}
	if err := events.CheckSessionID(c.session); err != nil {
		return usagef("-session: %w", err)
	}
	if strings.TrimSpace(c.task) == "" {
		return usagef("-task is empty: say what the agent should do")
	}
	if st, err := os.Stat(c.dir); err != nil || !st.IsDir() {
		return usagef("-dir %s: not a folder", safeLine(c.dir))
	}
	if c.listen != "" {
		if err := checkListen(c.listen); err != nil {
			return usagef("-listen %q: %v", c.listen, err)
		}
	}
	if c.natsURL != "" {
		if err := checkNATSURL(c.natsURL); err != nil {
			return usagef("-nats %q: %v", c.natsURL, err)
		}
		if set["nats-listen"] && c.natsListen != "" {
			return usagef("-nats-listen is for the embedded server, and -nats names another one: drop one of them")
		}
	} else if c.natsListen != "" {
		if err := checkListen(c.natsListen); err != nil {
			return usagef("-nats-listen %q: %v", c.natsListen, err)
		}
	}
	if c.baseURL != "" {
		if u, err := url.Parse(c.baseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef("-base-url %q: want an http:// or https:// URL, such as http://localhost:11434/v1", c.baseURL)
		}
	}
	return nil
}

// checkListen checks a host:port to listen on (port 0: any free one).
func checkListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want host:port, such as 127.0.0.1:7070")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q: want a number from 0 to 65535", port)
	}
	return nil
}

// checkNATSURL checks a NATS server URL, or a comma-separated list of them
// (a cluster), the way the NATS client reads them: the scheme may be left
// out (nats://), the port too (4222).
func checkNATSURL(list string) error {
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if !strings.Contains(s, "://") {
			s = "nats://" + s
		}
		u, err := url.Parse(s)
		if err != nil {
			return errors.New("not a URL")
		}
		switch u.Scheme {
		case "nats", "tls", "ws", "wss":
		default:
			return fmt.Errorf("scheme %q: want nats://, tls://, ws:// or wss://", u.Scheme)
		}
		if u.Hostname() == "" {
			return errors.New("no host")
		}
		if p := u.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				return fmt.Errorf("port %q: want a number from 1 to 65535", p)
			}
		}
	}
	return nil
}

const defaultTask = "Give me an overview of this folder: languages and line counts, file hashes, TODOs, sizes and a full inventory. Save a short note with the summary, check with me before anything else, then watch the folder for changes."

// scaled is base divided by the speed (0 for speed 0: flat out).
func (c *config) scaled(base time.Duration) time.Duration {
	if c.speed == 0 {
		return 0
	}
	return time.Duration(float64(base) / c.speed)
}

// run runs the demo with the process's stdin (for -approve terminal).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runWith(ctx, args, os.Stdin, stdout, stderr)
}

func runWith(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stdin, stdout)
	if err != nil {
		return err
	}
	root, err := filepath.Abs(cfg.dir)
	if err != nil {
		return err
	}
	if cfg.workerOf != "" {
		return runWorker(ctx, cfg, root, stdin, stdout)
	}
	stderr = &lockedWriter{w: stderr} // the log (-v) and the spans (-otel stderr) write it from several goroutines
	logger := zerolog.Nop()
	if cfg.verbose {
		// The log quotes tool names, arguments and errors: escaped like the
		// terminal view, and so without colours.
		logger = zerolog.New(zerolog.ConsoleWriter{Out: safeWriter{stderr}, NoColor: true}).With().Timestamp().Logger()
	}

	bus, natsTaken, err := openBus(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer closeWithin(5*time.Second, bus.Close)

	view := newTermView(stdout, !cfg.plain && isTerminal(stdout))
	defer view.stop()
	ot, err := startOtel(ctx, cfg.otel, cfg.otelFile, stderr)
	if err != nil {
		return err
	}
	defer ot.shutdown()
	tk := toolkit.New(append(ot.options(), toolkit.WithObserver(view), toolkit.WithInlineObserver(bus.Publisher()), toolkit.WithLogger(logger))...)
	defer closeWithin(5*time.Second, tk.Close)
	ot.watch(tk, bus)

	stores, err := openStores(ctx, cfg, bus)
	if err != nil {
		return err
	}
	env := &toolEnv{root: root, notes: filepath.Join(os.TempDir(), "toolstream-demo-notes"), step: cfg.scaled(6 * time.Millisecond)}
	gm, ld, err := registerTools(tk, env, stores.groupOptions(), stores.skillOptions())
	if err != nil {
		return err
	}
	if cfg.largeMiB > 0 {
		if err := tk.Add(largeTool(cfg.largeMiB)); err != nil {
			return err
		}
	}
	loss := newWorkerLoss(view)
	if cfg.workers > 0 {
		stopWorkers, err := useWorkers(ctx, cfg, tk, bus, root, view, loss)
		if err != nil {
			return err
		}
		defer stopWorkers()
	}
	elicit := mcpbridge.NewElicitations(5 * time.Minute)
	disconnect, mcpPicks, err := connectMCPServers(ctx, tk, gm, elicit, cfg.mcp, view)
	if err != nil {
		return err
	}
	defer disconnect()
	stopStore, err := useStore(ctx, stores.calls, tk) // before the other interceptors: outermost
	if err != nil {
		return err
	}
	defer stopStore()
	perms, err := useInterceptors(tk, stores.permissionOptions()...)
	if err != nil {
		return err
	}
	if cfg.workers > 0 {
		// After Retry: it sees each attempt, and says when a worker was lost.
		if err := tk.Use(loss.interceptor(workerTools)); err != nil {
			return err
		}
	}
	if cfg.approveBatches {
		if err := tk.Use(perms.BatchApproval()); err != nil {
			return err
		}
	}
	sess, err := tk.Session(cfg.session)
	if err != nil {
		return err
	}
	view.setTour(sess.ID()) // other sessions' calls (/agui, /api/chat, /mcp) are labelled
	stopAnswering, err := answerQuestions(bus, tk)
	if err != nil {
		return err
	}
	defer stopAnswering()

	model, why, err := chooseModel(cfg)
	if err != nil {
		return err
	}
	if c, ok := model.(io.Closer); ok {
		defer c.Close()
	}
	if s, ok := model.(*scriptedModel); ok {
		s.mcp = mcpPicks // the tour keeps the servers' groups and calls a tool of each
	}
	desk := newApprovalDesk(perms, cfg, view, stdin)

	var page string
	if cfg.listen != "" {
		// The toolkit over MCP at /mcp: an MCP client (the Inspector, a
		// desktop app) lists and calls the tour's tools; its calls show on
		// the page under sessions named mcp-..., and a call that needs
		// approval becomes a question to that client. No token, like the
		// page: it listens on loopback by default, where the SDK refuses
		// foreign Host names, and mcpbridge refuses browser pages on other
		// origins (403).
		mcpSrv, err := mcpbridge.NewServer(tk, mcpbridge.WithImplementation("toolstream-demo", "dev"), mcpbridge.WithPermissions(perms))
		if err != nil {
			return err
		}
		uiProtos := newUIProtocols(tk, bus, perms, model, cfg.maxTurns)
		defer uiProtos.Close()
		srv, err := serveWeb(cfg.listen, &webApp{bus: bus, tk: tk, desk: desk, session: sess.ID(), model: modelName(model), mcp: mcpSrv.Handler(nil), elicit: elicit, ui: uiProtos})
		if err != nil {
			mcpSrv.Close()
			return err
		}
		defer closeWithin(2*time.Second, srv.Shutdown)
		defer mcpSrv.Close() // first: its open streams would hold Shutdown up
		page = srv.URL
		if srv.taken != "" {
			view.printf("web page: %s is taken; the page listens on %s instead\n", srv.taken, strings.TrimPrefix(srv.URL, "http://"))
		}
	}
	if natsTaken != "" {
		view.printf("NATS: %s is taken; the embedded server listens on %s instead\n", natsTaken, strings.TrimPrefix(bus.ClientURL(), "nats://"))
	}

	view.printf("toolstream demo: %d tools in %d groups, %d skills, working on %s\n", len(tk.Tools()), len(gm.Groups()), len(ld.Skills(sess.ID())), root)
	view.printf("model: %s%s\n", modelName(model), why)
	if page != "" {
		view.printf("live page: %s\n", pageURL(page, sess.ID()))
	}
	printWatch(view, bus, sess.ID(), cfg.auth.secured())

	a := &runner{sess: sess, model: model, view: view, desk: desk, maxTurns: cfg.maxTurns, loader: ld, groups: gm, store: stores.calls}
	tourCtx, endTour := ot.tour(ctx, sess.ID(), modelName(model))
	sum, err := a.run(tourCtx, cfg.task)
	endTour()
	if err != nil {
		return err
	}
	// Every event of the run handed to NATS before the summary counts them.
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_ = bus.Publisher().Flush(fctx)
	cancel()
	view.summary(sum, bus.Publisher().Stats())

	if !cfg.once && page != "" && ctx.Err() == nil {
		view.printf("\nThe page stays up at %s — press Ctrl-C to quit.\n", pageURL(page, sess.ID()))
		<-ctx.Done()
	}
	return nil
}

// pageURL is the address of the page showing session.
func pageURL(base, session string) string {
	return base + "/?session=" + url.QueryEscape(session)
}

// chooseModel picks the model -provider names. Without -provider, the
// OpenAI-compatible model runs when a model and a key are configured, and
// the scripted one otherwise, saying why; a provider named outright must
// be configured.
func chooseModel(cfg *config) (agent.Model, string, error) {
	provider := cfg.provider
	if provider == "" || provider == providerOpenAI || provider == providerAnthropic {
		name := provider
		if name == "" {
			name = providerOpenAI
		}
		mc, ok, why := modelFromEnv(name, cfg.model, cfg.baseURL, cfg.apiKey)
		mc.API = cfg.api
		if ok {
			m, err := newProviderModel(mc)
			if err == nil {
				return m, " (" + name + ", a real model through its HTTP API)", nil
			}
			why = err.Error()
		}
		if provider != "" {
			return nil, "", fmt.Errorf("-provider %s: %s", provider, why)
		}
		if cfg.model != "" || os.Getenv("OPENAI_MODEL") != "" {
			return scripted(cfg), " (not the real model: " + why + ")", nil
		}
	}
	return scripted(cfg), " (deterministic; -provider openai|anthropic with -model and an API key drive a real one)", nil
}

func scripted(cfg *config) *scriptedModel {
	s := newScriptedModel(cfg.scaled(500 * time.Millisecond))
	if cfg.largeMiB > 0 {
		s.extra = append(s.extra, largeTurn())
	}
	return s
}

// openBus opens the NATS side: the given server, or an embedded one that
// outside clients reach on the listen address (any free port if that one
// is taken: taken is then the address asked for, for the run to say so).
func openBus(ctx context.Context, cfg *config, log zerolog.Logger) (bus *natsbus.Bus, taken string, err error) {
	opts := []natsbus.Option{natsbus.WithLogger(log)}
	if cfg.natsURL != "" {
		opts = append(opts, natsbus.WithURL(cfg.natsURL))
	}
	if cfg.durable {
		opts = append(opts, natsbus.WithDurable(natsbus.Durable{}))
	}
	if cfg.store != "" {
		opts = append(opts, natsbus.WithStoreDir(cfg.store))
	}
	if cfg.natsURL != "" {
		auth, err := cfg.auth.options()
		if err != nil {
			return nil, "", err
		}
		// A server that does not answer is an error now, not a wait for it.
		bus, err := natsbus.Open(ctx, append(opts, natsbus.WithNATSOptions(append(auth, nats.RetryOnFailedConnect(false))...))...)
		if err != nil && ctx.Err() == nil {
			return nil, "", fmt.Errorf("%w (is a NATS server running there? without -nats the demo runs its own)", err)
		}
		return bus, "", err
	}
	if cfg.natsListen == "" {
		bus, err := natsbus.Open(ctx, opts...)
		return bus, "", err
	}
	listen := cfg.natsListen
	host, _, _ := net.SplitHostPort(listen)
	anyPort := net.JoinHostPort(host, "0")
	// The embedded server tells a taken port only by not starting (after
	// 10 s): find out first, the way the web page does.
	if l, err := net.Listen("tcp", listen); err != nil {
		if addrInUse(err) {
			listen = anyPort
		}
	} else {
		l.Close()
	}
	bus, err = natsbus.Open(ctx, append(opts, natsbus.WithListen(listen))...)
	if err != nil && addrInUse(err) && listen != anyPort {
		listen = anyPort
		bus, err = natsbus.Open(ctx, append(opts, natsbus.WithListen(anyPort))...)
	}
	if err == nil && listen == anyPort && cfg.natsListen != anyPort {
		taken = cfg.natsListen
	}
	return bus, taken, err
}

// addrInUse reports whether err says that an address is taken.
func addrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

// printWatch tells how to watch the events with the nats CLI.
func printWatch(v *termView, bus *natsbus.Bus, session string, secured bool) {
	url := bus.ClientURL()
	if url == "" {
		return
	}
	subj := bus.Subjects()
	v.printf("NATS: %s — watch with the nats CLI (go install github.com/nats-io/natscli/nats@v0.5.0):\n", url)
	if secured {
		v.printf("  (the server asks for a user: add --nkey or --creds, and --tlsca, for one that may read these subjects)\n")
	}
	v.printf("  nats sub '%s' --server %s            # this session, everything\n", subj.Session(session), url)
	v.printf("  nats sub '%s' --server %s      # final results, all sessions\n", subj.AllOfType(events.TypeResult), url)
	if bus.Stream() != "" {
		v.printf("  nats stream view %s --server %s          # replay what was kept\n", bus.Stream(), url)
	}
}

// lockedWriter serializes the writes of several goroutines to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func closeWithin(d time.Duration, f func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_ = f(ctx)
}

// isTerminalReader reports whether r is a terminal (for reading answers).
func isTerminalReader(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// isTerminal reports whether w is an interactive terminal (not merely a
// character device: /dev/null is one too).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb"
}
