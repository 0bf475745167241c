package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/toolkit"
)

// workerTools are the folder tools that -workers moves to worker processes:
// read-only and concurrency-safe, so that a call can run on any worker.
// folder_stats stays in the agent: it fails twice per call on purpose, and
// counts its attempts in the memory of the process that runs it.
var workerTools = []string{"count_lines", "hash_files", "search_text", "file_inventory"}

// checkWorkers checks -workers with the other flags.
func (c *config) checkWorkers() error {
	if c.workers < 0 || c.workers > 16 {
		return usagef("-workers %d: from 0 to 16", c.workers)
	}
	if c.workers > 0 && c.natsURL == "" && c.natsListen == "" {
		return usagef("-workers needs NATS over TCP for its worker processes: set -nats-listen or -nats")
	}
	return nil
}

// runWorker is the demo started again as a tool worker (-worker-of URL):
// it serves the folder tools on that NATS server until its standard input
// closes (the demo ended) or a signal stops it, and says "worker <id>"
// when it serves.
func runWorker(ctx context.Context, cfg *config, root string, stdin io.Reader, stdout io.Writer) error {
	auth, err := cfg.auth.options()
	if err != nil {
		return err
	}
	// What the server refuses this worker (a subject its user may not use)
	// goes to stderr, the demo's: silently dropped, it would look like a
	// worker that does not answer.
	refused := nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		fmt.Fprintf(os.Stderr, "worker %d: NATS: %v\n", os.Getpid(), err)
	})
	nc, err := nats.Connect(cfg.workerOf, append(auth, nats.Name("toolstream-demo-worker"), nats.MaxReconnects(-1), refused)...)
	if err != nil {
		return fmt.Errorf("worker: cannot connect to NATS at %s: %w", cfg.workerOf, err)
	}
	defer nc.Close()
	// The tools as the demo builds them; the worker's own toolkit holds
	// them without the agent's groups, skills and interceptors.
	all := toolkit.New()
	defer closeWithin(time.Second, all.Close)
	env := &toolEnv{root: root, notes: filepath.Join(os.TempDir(), "toolstream-demo-notes"), step: cfg.scaled(6 * time.Millisecond)}
	if _, _, err := registerTools(all, env, nil, nil); err != nil {
		return err
	}
	tk := toolkit.New()
	defer closeWithin(5*time.Second, tk.Close)
	for _, name := range workerTools {
		t, _ := all.Tool(name)
		if err := tk.Add(t); err != nil {
			return err
		}
	}
	w, err := remote.Serve(nc, tk, remote.WithMetadata(map[string]string{"pid": strconv.Itoa(os.Getpid())}))
	if err != nil {
		return err
	}
	defer closeWithin(5*time.Second, w.Stop)
	fmt.Fprintf(stdout, "worker %s\n", w.ID())
	closed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		close(closed)
	}()
	select {
	case <-ctx.Done():
	case <-closed:
		// The demo ended, or died: nobody is left to answer. Closing the
		// connection now also stops it reconnecting, which could attach
		// this worker to the next demo's server on the same port while
		// it shuts down.
		nc.Close()
	}
	return nil
}

// useWorkers starts n worker processes (this binary with -worker-of) and
// puts their folder tools in tk in place of the local ones: same names,
// so groups and skills keep them, and the agent's interceptors run around
// them. stop ends the workers.
func useWorkers(ctx context.Context, cfg *config, tk *toolkit.Toolkit, bus *natsbus.Bus, root string, view *termView, loss *workerLoss) (stop func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	url := bus.ClientURL()
	var procs []*exec.Cmd
	var pipes []io.Closer
	stop = func() {
		for _, p := range pipes {
			_ = p.Close() // the worker's cue to stop
		}
		for _, p := range procs {
			done := make(chan struct{})
			go func() { _ = p.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = p.Process.Kill()
				<-done
			}
		}
	}
	var ids []string
	for range cfg.workers {
		args := []string{"-worker-of", url, "-dir", root, "-speed", strconv.FormatFloat(cfg.speed, 'g', -1, 64)}
		cmd := exec.Command(self, append(args, cfg.auth.workerArgs()...)...)
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			stop()
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			stop()
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("starting a tool worker: %w", err)
		}
		procs, pipes = append(procs, cmd), append(pipes, in)
		line, err := bufio.NewReader(out).ReadString('\n')
		if !strings.HasPrefix(line, "worker ") {
			stop()
			return nil, fmt.Errorf("tool worker %d did not start: %q %v", cmd.Process.Pid, line, err)
		}
		id := strings.TrimSpace(strings.TrimPrefix(line, "worker "))
		loss.started(id, cmd.Process.Pid)
		ids = append(ids, fmt.Sprintf("%s (pid %d)", id, cmd.Process.Pid))
	}
	c := remote.NewClient(bus.Conn())
	for _, name := range workerTools {
		t, err := c.Tool(ctx, name)
		if err != nil {
			stop()
			return nil, err
		}
		if err := tk.Replace(t); err != nil {
			stop()
			return nil, err
		}
	}
	view.printf("tool workers: %s serve %s (result meta \"worker\" says which ran a call)\n", strings.Join(ids, ", "), strings.Join(workerTools, ", "))
	if !cfg.auth.secured() {
		view.printf("  nats micro ls --server %s\n", url)
	}
	stopWorkers := stop
	return func() { _ = c.Close(); stopWorkers() }, nil
}
