package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/toolstream/toolstream/internal/testutil"
)

// pty is a pseudo-terminal the demo runs on, as it would in a person's
// terminal window: the test reads what the demo writes from the master
// side and can type, press Ctrl-C and resize the window.
type pty struct {
	master *os.File
	slave  *os.File
	mu     sync.Mutex
	out    []byte
	closed chan struct{}
}

func ioctl(fd uintptr, req uintptr, arg unsafe.Pointer) error {
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, req, uintptr(arg)); e != 0 {
		return e
	}
	return nil
}

func openPTY(t *testing.T, cols, rows int) *pty {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	var unlock int32
	if err := ioctl(m.Fd(), syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		m.Close()
		t.Skipf("pseudo-terminal: %v", err)
	}
	var n uint32
	if err := ioctl(m.Fd(), syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		m.Close()
		t.Skipf("pseudo-terminal: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		m.Close()
		t.Skipf("pseudo-terminal: %v", err)
	}
	p := &pty{master: m, slave: s, closed: make(chan struct{})}
	p.resize(t, cols, rows)
	go func() {
		defer close(p.closed)
		buf := make([]byte, 32<<10)
		for {
			n, err := m.Read(buf)
			p.mu.Lock()
			p.out = append(p.out, buf[:n]...)
			p.mu.Unlock()
			if err != nil {
				return // EIO once the demo and the test closed the terminal
			}
		}
	}()
	t.Cleanup(func() {
		s.Close()
		m.Close()
		<-p.closed
	})
	return p
}

func (p *pty) resize(t *testing.T, cols, rows int) {
	t.Helper()
	ws := struct{ rows, cols, x, y uint16 }{uint16(rows), uint16(cols), 0, 0}
	if err := ioctl(p.master.Fd(), syscall.TIOCSWINSZ, unsafe.Pointer(&ws)); err != nil {
		t.Fatal(err)
	}
}

// finish closes the test's side of the terminal once the demo ended and
// returns all it wrote.
func (p *pty) finish() string {
	p.slave.Close()
	<-p.closed
	return p.output()
}

func (p *pty) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return string(p.out)
}

// waitFor waits until the output contains sub.
func (p *pty) waitFor(t *testing.T, sub string, exited <-chan error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(p.output(), sub) {
		select {
		case err := <-exited:
			t.Fatalf("the demo ended (%v) before %q:\n%s", err, sub, p.output())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q within a minute:\n%s", sub, p.output())
		}
	}
}

// start runs the demo binary on the terminal (stdin, stdout and stderr,
// as its controlling terminal, so that Ctrl-C and resizes reach it).
func (p *pty) start(t *testing.T, args ...string) (*exec.Cmd, <-chan error) {
	t.Helper()
	bin, err := buildDemo()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.slave, p.slave, p.slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "TERM=") {
			env = append(env, e)
		}
	}
	cmd.Env = append(env, "TERM=xterm-256color", "TMPDIR="+t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
	})
	return cmd, exited
}

func waitExit(t *testing.T, exited <-chan error, within time.Duration) error {
	t.Helper()
	select {
	case err := <-exited:
		return err
	case <-time.After(within):
		t.Fatalf("the demo did not end within %v", within)
		return nil
	}
}

// TestDemoOnTerminal runs the whole tour on terminals 80 and 40 columns
// wide and replays what it wrote on a screen of that width: no line was
// wide enough for the terminal to wrap it, the live bars were redrawn in
// place (none is left after the run), and nothing but the demo's own
// cursor moves reached the terminal, although the 40-column run works on
// a folder of hostile file names and contents that the bars show.
func TestDemoOnTerminal(t *testing.T) {
	testutil.Long(t)
	if testing.Short() {
		t.Skip("builds and runs the demo binary")
	}
	for _, tc := range []struct {
		cols int
		dir  string
	}{{80, "../.."}, {40, ""}} {
		t.Run(fmt.Sprint(tc.cols), func(t *testing.T) {
			dir := tc.dir
			if dir == "" {
				dir = hostileFolder(t)
			}
			p := openPTY(t, tc.cols, 30)
			_, exited := p.start(t, "-dir", dir, "-listen", "", "-nats-listen", "", "-speed", "4", "-once", "-session", "tty")
			if err := waitExit(t, exited, 2*time.Minute); err != nil {
				t.Fatalf("demo: %v\n%s", err, p.output())
			}
			scr := newScreen(tc.cols)
			scr.write(p.finish())
			if scr.wraps > 0 || scr.widest() >= tc.cols {
				t.Errorf("%d lines wrapped; the widest row takes %d of %d columns:\n%s", scr.wraps, scr.widest(), tc.cols, scr)
			}
			if len(scr.bad) > 0 {
				t.Errorf("reached the terminal: %q", scr.bad)
			}
			if rows := scr.barRows(); len(rows) > 0 {
				t.Errorf("stale bars on the screen:\n%s", strings.Join(rows, "\n"))
			}
			if len(scr.ups) < 10 {
				t.Errorf("the bars were redrawn %d times only", len(scr.ups))
			}
			s := scr.String()
			for _, want := range []string{"=== Turn 5", "=== Turn 6: the model answers", "=== Summary: 6 turns", "states:"} {
				if !strings.Contains(s, want) {
					t.Errorf("screen lacks %q:\n%s", want, s)
				}
			}
		})
	}
}

// TestDemoOnTerminalResize: the demo re-reads the terminal's width when
// the window is resized (SIGWINCH): started at 40 columns and widened to
// 100, it writes wider lines afterwards, never wider than the terminal.
func TestDemoOnTerminalResize(t *testing.T) {
	testutil.Long(t)
	if testing.Short() {
		t.Skip("builds and runs the demo binary")
	}
	p := openPTY(t, 40, 30)
	_, exited := p.start(t, "-dir", "../..", "-listen", "", "-nats-listen", "", "-speed", "4", "-once", "-session", "tty")
	p.waitFor(t, "=== Turn 2", exited)
	before := len(p.output())
	p.resize(t, 100, 30)
	if err := waitExit(t, exited, 2*time.Minute); err != nil {
		t.Fatalf("demo: %v\n%s", err, p.output())
	}
	out := p.finish()
	narrow, wide := newScreen(100), newScreen(100)
	narrow.write(out[:before])
	wide.write(out)
	if narrow.widest() >= 40 {
		t.Errorf("before the resize a row took %d columns of 40:\n%s", narrow.widest(), narrow)
	}
	if wide.widest() < 60 || wide.widest() >= 100 || wide.wraps > 0 || len(wide.bad) > 0 {
		t.Errorf("after widening to 100 columns: widest row %d, %d wraps, %q:\n%s", wide.widest(), wide.wraps, wide.bad, wide)
	}
	if rows := wide.barRows(); len(rows) > 0 {
		t.Errorf("stale bars on the screen:\n%s", strings.Join(rows, "\n"))
	}
}

// TestApproveOnTerminal: with -approve terminal on a terminal, the person
// answers the approval there, the call waiting for it says so in its bar,
// and Ctrl-C while the question waits stops the demo at once (it used to
// wait for a line that never came).
func TestApproveOnTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the demo binary")
	}
	args := []string{"-dir", "../..", "-listen", "", "-nats-listen", "", "-speed", "0", "-once", "-approve", "terminal", "-session", "tty"}
	t.Run("answer", func(t *testing.T) {
		p := openPTY(t, 80, 30)
		_, exited := p.start(t, args...)
		p.waitFor(t, "Approve?", exited)
		if _, err := p.master.WriteString("y\r"); err != nil {
			t.Fatal(err)
		}
		if err := waitExit(t, exited, 2*time.Minute); err != nil {
			t.Fatalf("demo: %v\n%s", err, p.output())
		}
		if out := p.finish(); !strings.Contains(out, "approved call_6   by you") || !strings.Contains(out, "=== Summary: 6 turns") {
			t.Errorf("output:\n%s", out)
		}
	})
	t.Run("ctrl-c", func(t *testing.T) {
		p := openPTY(t, 80, 30)
		_, exited := p.start(t, args...)
		p.waitFor(t, "Approve?", exited)
		if _, err := p.master.WriteString("\x03"); err != nil { // Ctrl-C, as typed
			t.Fatal(err)
		}
		if err := waitExit(t, exited, 15*time.Second); err != nil {
			t.Errorf("exit: %v, want status 0", err)
		}
		if out := p.finish(); !strings.Contains(out, "demo: stopped by Ctrl-C (SIGINT) in turn 3 (while waiting for an approval)") {
			t.Errorf("output:\n%s", out)
		}
	})
}
