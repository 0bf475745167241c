package remote_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/toolkit"
)

// proc is a worker process: this test binary in worker mode.
type proc struct {
	cmd *exec.Cmd
	id  string
}

func startWorker(t *testing.T, url string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envWorker+"="+url)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready ") {
		t.Fatalf("worker process: %q %v", line, err)
	}
	return &proc{cmd: cmd, id: strings.TrimSpace(strings.TrimPrefix(line, "ready "))}
}

// pidRecorder records the pid the first progress event of a call names:
// the worker process that runs it.
type pidRecorder struct {
	mu  sync.Mutex
	pid map[string]chan int
}

func (p *pidRecorder) ch(call string) chan int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pid[call] == nil {
		p.pid[call] = make(chan int, 1)
	}
	return p.pid[call]
}

func (p *pidRecorder) Observe(ev *events.Event) {
	if ev.Type != events.TypeProgress || ev.Progress == nil {
		return
	}
	var d struct {
		PID int `json:"pid"`
	}
	if json.Unmarshal(ev.Progress.Data, &d) == nil && d.PID != 0 {
		select {
		case p.ch(ev.Call) <- d.PID:
		default:
		}
	}
}

// TestWorkerDies: a worker process killed in the middle of a call is
// noticed by its missing heartbeats within Heartbeat × MissedHeartbeats
// (300 ms here), not the call's timeout (1 minute), and the call ends with
// a clear error; with the agent's ordinary Retry, a read-only tool's call
// moves to another worker and succeeds there.
func TestWorkerDies(t *testing.T) {
	bus := natstest.Bus(t, natsbus.WithListen("127.0.0.1:0"))
	a := startWorker(t, bus.ClientURL())
	c := remote.NewClient(conn(t, bus), remote.WithHeartbeat(100*time.Millisecond, 3))
	tools := discover(t, c, 1)
	pids := &pidRecorder{pid: map[string]chan int{}}
	agent := testutil.Kit(t, toolkit.WithInlineObserver(pids), toolkit.WithDefaultTimeout(time.Minute))
	testutil.Add(t, agent, tools...)
	sess := testutil.Session(t, agent, "s")

	// Alone: the call fails with *LostError, in bounded time.
	batch := sess.Start(context.Background(), []toolkit.Call{testutil.Call("c1", "slow", `{"steps":1000}`)})
	select {
	case pid := <-pids.ch("c1"):
		if pid != a.cmd.Process.Pid {
			t.Fatalf("progress from pid %d, the worker is %d", pid, a.cmd.Process.Pid)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call never ran")
	}
	killed := time.Now()
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	r := batch.Wait()[0]
	noticed := time.Since(killed)
	if !isLost(r.Err) || !strings.Contains(r.Text(), "worker "+a.id+" stopped answering") {
		t.Fatalf("%s %q (%v)", r.State, r.Text(), r.Err)
	}
	if noticed < 200*time.Millisecond || noticed > remote.LostAfter(c)+700*time.Millisecond {
		t.Errorf("the death was noticed after %v; the bound is %v", noticed, remote.LostAfter(c))
	}
	t.Logf("worker death noticed after %v (bound %v)", noticed, remote.LostAfter(c))

	// Two workers and Retry: the call moves to the survivor.
	b1, b2 := startWorker(t, bus.ClientURL()), startWorker(t, bus.ClientURL())
	if err := agent.Use(interceptors.Retry(interceptors.RetryBackoff(10*time.Millisecond, 50*time.Millisecond))); err != nil {
		t.Fatal(err)
	}
	batch = sess.Start(context.Background(), []toolkit.Call{testutil.Call("c2", "slow", `{"steps":10}`)})
	var victim, survivor *proc
	select {
	case pid := <-pids.ch("c2"):
		victim, survivor = b1, b2
		if pid == b2.cmd.Process.Pid {
			victim, survivor = b2, b1
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call never ran")
	}
	killed = time.Now()
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	r = batch.Wait()[0]
	if r.State != events.StateSuccess || r.Text() != fmt.Sprintf("done by pid %d", survivor.cmd.Process.Pid) ||
		r.Meta[remote.MetaWorker] != survivor.id || r.Meta[interceptors.MetaAttempts] == nil {
		t.Fatalf("%s %q meta %v", r.State, r.Text(), r.Meta)
	}
	t.Logf("moved to the other worker and finished %v after the kill", time.Since(killed))
}
