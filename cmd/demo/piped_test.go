package main

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/toolstream/toolstream/internal/testutil"
)

// pipedRun is the demo running in the test's process with its stdout read
// line by line, so that a test waits on the lines it needs (when) rather
// than on time.
type pipedRun struct {
	out    *lineWatcher
	stderr testutil.SyncBuffer
	cancel context.CancelFunc
	exited chan error    // run's result, put back by whoever reads it
	read   chan struct{} // closed when stdout is read to its end
}

// runPiped starts the demo with args; the test's cleanup stops it.
func runPiped(t *testing.T, args ...string) *pipedRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	p := &pipedRun{out: &lineWatcher{}, cancel: cancel, exited: make(chan error, 1), read: make(chan struct{})}
	go func() { p.out.read(pr); close(p.read) }()
	go func() {
		err := run(ctx, args, pw, &p.stderr)
		pw.Close()
		p.exited <- err
	}()
	t.Cleanup(func() {
		if err := p.stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("the demo: %v\n%s", err, p.stderr.String())
		}
	})
	return p
}

// wait waits for a line containing sub, failing the test if the demo ends
// first.
func (p *pipedRun) wait(t *testing.T, sub string) {
	t.Helper()
	select {
	case <-p.out.when(sub):
	case err := <-p.exited:
		p.exited <- err
		<-p.read
		t.Fatalf("the demo ended (%v) before a line with %q:\n%s\n%s", err, sub, p.out, p.stderr.String())
	}
}

// stop ends the demo's context and returns what run returned, once its
// output is read.
func (p *pipedRun) stop() error {
	p.cancel()
	select {
	case err := <-p.exited:
		p.exited <- err
		<-p.read
		return err
	case <-time.After(30 * time.Second):
		return errors.New("the demo did not return within 30 s of its context's end")
	}
}
