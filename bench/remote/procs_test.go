package remotebench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/toolkit"
)

// The benchmark's processes are this test binary in another role, named by
// envRole: a nats-server, a toolstream worker or an instance of the bare
// micro service. Each says "ready" on its standard output once it serves
// and stops when its standard input closes.
const (
	envRole = "TOOLSTREAM_BENCH_ROLE"
	envArgs = "TOOLSTREAM_BENCH_ARGS" // the role's arguments, JSON
	// envProfile names a folder where each process writes a CPU profile.
	envProfile = "TOOLSTREAM_BENCH_PROFILE"
)

// serverArgs start one nats-server.
type serverArgs struct {
	Name        string   `json:"name"`
	Port        int      `json:"port"`
	ClusterPort int      `json:"cluster_port,omitempty"`
	Routes      []string `json:"routes,omitempty"`
}

// runRole runs the process's role, if it has one; ok is false for the test
// binary itself.
func runRole() (code int, ok bool) {
	role := os.Getenv(envRole)
	if role == "" {
		return 0, false
	}
	args := os.Getenv(envArgs)
	if dir := os.Getenv(envProfile); dir != "" {
		// A CPU profile of each process, to see where its time goes.
		f, err := os.CreateTemp(dir, role+"-*.pprof")
		if err == nil {
			_ = pprof.StartCPUProfile(f)
			defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
		}
	}
	var err error
	switch role {
	case "server":
		err = serveNATS(args)
	case "toolstream":
		err = serveToolstream(args)
	case "micro":
		err = serveMicro(args)
	default:
		err = fmt.Errorf("no role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, role+":", err)
		return 1, true
	}
	return 0, true
}

func untilStdinCloses() { _, _ = io.Copy(io.Discard, os.Stdin) }

func serveNATS(args string) error {
	var a serverArgs
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		return err
	}
	o := &server.Options{ServerName: a.Name, Host: "127.0.0.1", Port: a.Port, NoSigs: true, NoLog: true}
	if a.ClusterPort != 0 {
		o.Cluster = server.ClusterOpts{Name: "bench", Host: "127.0.0.1", Port: a.ClusterPort}
		o.Routes = server.RoutesFromStr(strings.Join(a.Routes, ","))
	}
	s, err := server.NewServer(o)
	if err != nil {
		return err
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		return fmt.Errorf("server %s did not start", a.Name)
	}
	fmt.Println("ready")
	untilStdinCloses()
	s.Shutdown()
	s.WaitForShutdown()
	return nil
}

// serveToolstream serves the echo tool as a toolstream worker, with the
// defaults.
func serveToolstream(url string) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	tk := toolkit.New()
	defer func() { _ = tk.Close(context.Background()) }()
	if err := tk.Add(echoTool()); err != nil {
		return err
	}
	w, err := remote.Serve(nc, tk)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	untilStdinCloses()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return w.Stop(ctx)
}

// serveMicro serves the same work as a bare micro service endpoint in a
// queue group: decode the input, encode it back.
func serveMicro(url string) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	svc, err := micro.AddService(nc, micro.Config{Name: "anchor", Version: "1.0.0", QueueGroup: "anchor"})
	if err != nil {
		return err
	}
	err = svc.AddEndpoint("echo", micro.HandlerFunc(func(req micro.Request) {
		var in echoIn
		if err := json.Unmarshal(req.Data(), &in); err != nil {
			_ = req.Error("400", err.Error(), nil)
			return
		}
		out, _ := echo(context.Background(), in)
		_ = req.RespondJSON(out)
	}), micro.WithEndpointSubject(anchorSubject))
	if err != nil {
		return err
	}
	if err := nc.Flush(); err != nil {
		return err
	}
	fmt.Println("ready")
	untilStdinCloses()
	return svc.Stop()
}

// proc is a process of the benchmark.
type proc struct {
	cmd   *exec.Cmd
	stdin io.Closer
}

// start starts this binary in a role and waits until it is ready; it stops
// at the end of the test.
func start(tb testing.TB, role, args string) *proc {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRole+"="+role, envArgs+"="+args)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p := &proc{cmd: cmd, stdin: stdin}
	tb.Cleanup(p.stop)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		tb.Fatalf("%s %s: %q %v", role, args, line, err)
	}
	return p
}

func (p *proc) stop() {
	_ = p.stdin.Close()
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// cpu returns the process's CPU time so far (user and system, all its
// threads), from /proc: clock ticks of 10 ms.
func (p *proc) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// selfCPU returns this process's CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// topology is the servers, and the URL each party connects to.
type topology struct {
	name    string
	servers []*proc
	agent   string   // the agent's server
	workers []string // each worker's server
}

// oneServer is one nats-server: everybody on it.
func oneServer(tb testing.TB) *topology {
	port := freePort(tb)
	a, _ := json.Marshal(serverArgs{Name: "s0", Port: port})
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	return &topology{name: "one server", servers: []*proc{start(tb, "server", string(a))}, agent: url, workers: []string{url, url}}
}

// cluster is three nats-servers with routes between all: the agent on the
// first, a worker on each of the others.
func cluster(tb testing.TB) *topology {
	ports, cports := make([]int, 3), make([]int, 3)
	var routes, urls []string
	for i := range ports {
		ports[i], cports[i] = freePort(tb), freePort(tb)
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", cports[i]))
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
	}
	t := &topology{name: "cluster", agent: urls[0], workers: urls[1:]}
	for i := range ports {
		a, _ := json.Marshal(serverArgs{Name: fmt.Sprint("n", i), Port: ports[i], ClusterPort: cports[i], Routes: routes})
		t.servers = append(t.servers, start(tb, "server", string(a)))
	}
	// The routes are up when a subscription on one server is seen on another.
	waitRoutes(tb, urls)
	return t
}

func waitRoutes(tb testing.TB, urls []string) {
	tb.Helper()
	sub, err := nats.Connect(urls[len(urls)-1])
	if err != nil {
		tb.Fatal(err)
	}
	defer sub.Close()
	s, err := sub.Subscribe("bench.routes", func(m *nats.Msg) { _ = m.Respond(nil) })
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = s.Unsubscribe() }()
	_ = sub.Flush()
	pub, err := nats.Connect(urls[0])
	if err != nil {
		tb.Fatal(err)
	}
	defer pub.Close()
	for deadline := time.Now().Add(20 * time.Second); ; {
		if _, err := pub.Request("bench.routes", nil, 200*time.Millisecond); err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatal("the cluster's routes did not come up")
		}
	}
}

func (t *topology) serversCPU() time.Duration {
	var d time.Duration
	for _, s := range t.servers {
		d += s.cpu()
	}
	return d
}
