//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolstream/toolstream/internal/testutil"
)

// natsDirs lists the embedded NATS server's store folders in dir.
func natsDirs(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "toolstream-nats-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestDemoStopsOnSignal: Ctrl-C (SIGINT) or SIGTERM in the middle of a run
// is a normal end. The demo says in one line what it stopped, exits with
// status 0 (not 130: `go run`, the README's command, would report that as
// its own failure), and leaves no folder of its embedded NATS server in
// the temporary folder.
func TestDemoStopsOnSignal(t *testing.T) {
	testutil.Long(t)
	if testing.Short() {
		t.Skip("builds and runs the demo binary")
	}
	bin, err := buildDemo()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sig  syscall.Signal
		name string
	}{
		{syscall.SIGINT, "Ctrl-C (SIGINT)"},
		{syscall.SIGTERM, "SIGTERM"},
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			cmd := exec.Command(bin, "-dir", "../..", "-listen", freeAddr(t), "-nats-listen", "127.0.0.1:0", "-speed", "1", "-once", "-session", "stopped")
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr syncBuffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			out := &lineWatcher{}
			read := make(chan struct{})
			go func() { out.read(stdout); close(read) }()
			select {
			case <-out.when("=== Turn 3"):
			case <-time.After(time.Minute):
				_ = cmd.Process.Kill()
				t.Fatalf("turn 3 never came:\n%s", out)
			}
			if n := len(natsDirs(t, tmp)); n != 1 {
				t.Fatalf("%d NATS store folders while running, want 1 (does the test look in the right place?)", n)
			}
			time.Sleep(200 * time.Millisecond) // the calls are running
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { <-read; exited <- cmd.Wait() }()
			var werr error
			select {
			case werr = <-exited:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("the demo did not stop within 30s of %s:\n%s", tc.sig, out)
			}
			if werr != nil {
				t.Errorf("exit: %v, want status 0", werr)
			}
			errs := strings.TrimRight(stderr.String(), "\n")
			if strings.Contains(errs, "\n") || !strings.HasPrefix(errs, "demo: stopped by "+tc.name+" in turn 3 (") {
				t.Errorf("stderr: %q, want one line saying what was stopped", errs)
			}
			if strings.Contains(errs, "context canceled") {
				t.Errorf("stderr reads like a failure: %q", errs)
			}
			if !strings.Contains(out.String(), "interrupted call_") {
				t.Errorf("no call was reported interrupted:\n%s", out)
			}
			if left := natsDirs(t, tmp); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

// TestDemoRefusesNonsenseFlags: flag values the demo cannot work with are
// refused before anything starts, in one line, with exit status 2.
func TestDemoRefusesNonsenseFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the demo binary")
	}
	bin, err := buildDemo()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-max-turns", "-1"}, "-max-turns -1: must be 1 or more"},
		{[]string{"-max-turns", "0"}, "-max-turns 0: must be 1 or more"},
		{[]string{"-approve", "terminal"}, "-approve terminal asks you on the terminal, but stdin is not one"},
		{[]string{"-approve", "maybe"}, `-approve "maybe": want auto, page or terminal`},
		{[]string{"-speed", "-2"}, "-speed -2: must be 0"},
		{[]string{"-speed", "NaN"}, "-speed NaN: must be 0"},
		{[]string{"-speed", "+Inf"}, "-speed +Inf: must be 0"},
		{[]string{"-listen", "7070"}, `-listen "7070": want host:port`},
		{[]string{"-listen", "127.0.0.1:70000"}, `-listen "127.0.0.1:70000": port "70000"`},
		{[]string{"-nats-listen", "localhost"}, `-nats-listen "localhost": want host:port`},
		{[]string{"-nats", "http://127.0.0.1:4222"}, `-nats "http://127.0.0.1:4222": scheme "http"`},
		{[]string{"-nats", "nats://:4222"}, "no host"},
		{[]string{"-nats", "nats://127.0.0.1:4222", "-nats-listen", "127.0.0.1:5222"}, "-nats-listen is for the embedded server"},
		{[]string{"-base-url", "localhost:11434/v1"}, "-base-url"},
		{[]string{"-task", "  "}, "-task is empty"},
		{[]string{"-dir", "/no/such/folder"}, "-dir /no/such/folder: not a folder"},
		{[]string{"-session", "a\x1bb"}, "-session: "},
		{[]string{"-nope"}, "flag provided but not defined: -nope"},
		{[]string{"stray"}, `unexpected argument "stray"`},
	} {
		cmd := exec.Command(bin, tc.args...)
		cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Errorf("%q: %v, want exit status 2", tc.args, err)
		}
		errs := strings.TrimSuffix(stderr.String(), "\n")
		if strings.Contains(errs, "\n") || !strings.HasPrefix(errs, "demo: ") || !strings.Contains(errs, tc.want) {
			t.Errorf("%q: stderr %q, want one line with %q", tc.args, errs, tc.want)
		}
		if stdout.Len() > 0 || time.Since(start) > 5*time.Second {
			t.Errorf("%q: the demo started (%v, stdout %q)", tc.args, time.Since(start), stdout.String())
		}
	}
}
