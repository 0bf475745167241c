package readme

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolstream/toolstream/internal/testutil"
)

// run runs a program with a private TMPDIR (beside its server, if it has
// one) and returns what went wrong.
func (p *program) run(t *testing.T, bin string) (problems []string) {
	t.Helper()
	env := os.Environ()
	if p.beside != nil {
		url, err := freeURL()
		if err != nil {
			return []string{fmt.Sprintf("%s: no free port for NATS_URL: %v", p, err)}
		}
		env = append(env, "NATS_URL="+url)
		srv, err := startServer(t, p.beside, bin, env)
		if err != nil {
			return []string{err.Error()}
		}
		defer func() { problems = append(problems, srv.stop()...) }()
	}
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, p.bin))
	cmd.Env = append(env, "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		problems = append(problems, fmt.Sprintf("%s: running it: %v\n%s", p, err, out))
	}
	problems = append(problems, leftBehind(p, tmp)...)
	return problems
}

// leftBehind reports the folders of embedded NATS servers a program left
// in its TMPDIR: it did not close its bus.
func leftBehind(p *program, tmp string) []string {
	if left, _ := filepath.Glob(filepath.Join(tmp, "toolstream-nats-*")); len(left) > 0 {
		return []string{fmt.Sprintf("%s: the program left %v behind: it does not close its bus", p, left)}
	}
	return nil
}

// freeURL is a NATS URL on a local port free just now.
func freeURL() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return "nats://" + l.Addr().String(), nil
}

// server is a program started for another to run beside it.
type server struct {
	p    *program
	cmd  *exec.Cmd
	tmp  string
	out  *testutil.SyncBuffer
	done chan error
}

// startServer starts p and waits for the first line of its standard
// output, which says that it is ready.
func startServer(t *testing.T, p *program, bin string, env []string) (*server, error) {
	s := &server{p: p, tmp: t.TempDir(), out: &testutil.SyncBuffer{}, done: make(chan error, 1)}
	s.cmd = exec.Command(filepath.Join(bin, p.bin))
	s.cmd.Env = append(env, "TMPDIR="+s.tmp)
	s.cmd.Stderr = s.out
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: starting it: %v", p, err)
	}
	ready := make(chan struct{})
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		r := bufio.NewReader(stdout)
		first, err := r.ReadString('\n')
		s.out.Write([]byte(first))
		if err == nil {
			close(ready)
			io.Copy(s.out, r)
		}
	}()
	go func() {
		<-copied // Wait closes the pipe: read it all first
		s.done <- s.cmd.Wait()
	}()
	select {
	case <-ready:
		return s, nil
	case err := <-s.done:
		return nil, fmt.Errorf("%s: it ended before it printed a line to say it is ready: %v\n%s", p, err, s.out)
	case <-time.After(runTimeout):
		s.cmd.Process.Kill()
		<-s.done
		return nil, fmt.Errorf("%s: it printed no line to say it is ready within %v\n%s", p, runTimeout, s.out)
	}
}

// stop interrupts the server (Ctrl-C) and checks that it ends well.
func (s *server) stop() []string {
	var problems []string
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-s.done:
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: stopped with an interrupt (Ctrl-C): %v\n%s", s.p, err, s.out))
		}
	case <-time.After(runTimeout):
		s.cmd.Process.Kill()
		<-s.done
		problems = append(problems, fmt.Sprintf("%s: still running %v after an interrupt (Ctrl-C)\n%s", s.p, runTimeout, s.out))
	}
	return append(problems, leftBehind(s.p, s.tmp)...)
}
