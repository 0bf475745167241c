package natstest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/internal/testutil"
)

// childEnv carries a child server's settings (JSON) to the test binary run
// again as that server.
const childEnv = "TOOLSTREAM_NATSTEST_SERVER"

type childSpec struct {
	Name        string `json:"name"`
	Port        int    `json:"port"`
	ClusterPort int    `json:"cluster_port"`
	HTTPPort    int    `json:"http_port"`
	Routes      string `json:"routes"`
	StoreDir    string `json:"store_dir"`
}

// ServeIfChild makes the test binary a NATS server when a ProcCluster
// started it as one: it serves until its standard input closes (the test
// ended, or died) and exits. Otherwise it returns at once. Call it first in
// TestMain of a package that uses NewProcCluster.
func ServeIfChild() {
	raw := os.Getenv(childEnv)
	if raw == "" {
		return
	}
	var spec childSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "natstest child: %s: %v\n", childEnv, err)
		os.Exit(2)
	}
	s, err := server.NewServer(&server.Options{
		ServerName: spec.Name, Host: "127.0.0.1", Port: spec.Port,
		HTTPHost: "127.0.0.1", HTTPPort: spec.HTTPPort, // for MetaLeader
		NoSigs: true, Logtime: true, // its log goes to standard error, which a test that fails shows
		JetStream: true, StoreDir: spec.StoreDir,
		JetStreamMaxMemory: 64 << 20, JetStreamMaxStore: 1 << 30,
		Cluster: server.ClusterOpts{Name: "toolstream-test", Host: "127.0.0.1", Port: spec.ClusterPort},
		Routes:  server.RoutesFromStr(spec.Routes),
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "natstest child %s: %v\n", spec.Name, err)
		os.Exit(2)
	}
	s.ConfigureLogger()
	s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		fmt.Fprintf(os.Stderr, "natstest child %s: not ready\n", spec.Name)
		os.Exit(2)
	}
	fmt.Printf("ready %s http://%s\n", s.ClientURL(), s.MonitorAddr())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the test closes it, or dies
	s.Shutdown()
	s.WaitForShutdown()
	os.Exit(0)
}

// ProcCluster is a NATS cluster whose servers run in child processes (the
// test binary run again, see ServeIfChild), so that a test can kill one as
// a crash does: SIGKILL, no step-down of the raft groups it leads, its
// peers find out by missed heartbeats. (Server.Shutdown in the test process
// hands its leaderships over first: an election in milliseconds, not the
// seconds a crash costs.)
type ProcCluster struct {
	names    []string
	urls     []string
	monitors []string // the servers' monitoring URLs
	procs    []*exec.Cmd
	stdin    []io.WriteCloser
	errs     []*testutil.SyncBuffer
}

// NewProcCluster starts n servers in child processes and waits until
// JetStream has a meta leader; the servers stop at the end of the test.
// The package's TestMain must call ServeIfChild first.
func NewProcCluster(t testing.TB, n int) *ProcCluster {
	t.Helper()
	// Every port at once, each from a listener still open while the others
	// are taken: no server is given a port another one was given.
	ports := freePorts(t, 3*n)
	routes := make([]string, n)
	for i := range n {
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", ports[3*i+1])
	}
	c := &ProcCluster{}
	ready := make([]chan string, n)
	for i := range n {
		spec, _ := json.Marshal(childSpec{Name: fmt.Sprintf("n%d", i), Port: ports[3*i], ClusterPort: ports[3*i+1], HTTPPort: ports[3*i+2],
			Routes: strings.Join(routes, ","), StoreDir: t.TempDir()})
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		errs := &testutil.SyncBuffer{}
		cmd.Stderr = errs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c.names = append(c.names, fmt.Sprintf("n%d", i))
		c.procs, c.stdin, c.errs = append(c.procs, cmd), append(c.stdin, stdin), append(c.errs, errs)
		ready[i] = make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if urls, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
					ready[i] <- urls
				}
			}
			close(ready[i])
		}()
		t.Cleanup(func() { c.stop(i) })
	}
	for i := range n {
		select {
		case urls, ok := <-ready[i]:
			if !ok {
				t.Fatalf("server %s did not start: %s", c.names[i], c.errs[i])
			}
			client, monitor, _ := strings.Cut(urls, " ")
			c.urls, c.monitors = append(c.urls, client), append(c.monitors, monitor)
		case <-time.After(60 * time.Second):
			t.Fatalf("server %s did not start within a minute: %s", c.names[i], c.errs[i])
		}
	}
	waitJetStream(t, c.URLs(0))
	waitPeers(t, c.URLs(0), n)
	return c
}

// waitPeers waits until a stream can be kept on all n servers: every
// server has joined JetStream's meta group.
func waitPeers(t testing.TB, urls string, n int) {
	t.Helper()
	nc, err := nats.Connect(urls)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := jetstream.StreamConfig{Name: "natstest_peers", Subjects: []string{"natstest.peers"}, Replicas: n, Storage: jetstream.MemoryStorage}
	for {
		_, err := js.CreateStream(ctx, cfg)
		if err == nil {
			_ = js.DeleteStream(ctx, cfg.Name)
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("not all %d servers joined JetStream: %v", n, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop ends server i's process: closing its input stops it cleanly; one
// that does not stop is killed.
func (c *ProcCluster) stop(i int) {
	_ = c.stdin[i].Close()
	done := make(chan struct{})
	go func() { _ = c.procs[i].Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = c.procs[i].Process.Kill()
		<-done
	}
}

// Name returns server i's name (as JetStream's cluster info names it).
func (c *ProcCluster) Name(i int) string { return c.names[i] }

// Index returns the index of the server named name, or -1.
func (c *ProcCluster) Index(name string) int {
	for i, n := range c.names {
		if n == name {
			return i
		}
	}
	return -1
}

// URL returns server i's client URL.
func (c *ProcCluster) URL(i int) string { return c.urls[i] }

// URLs returns every server's client URL, server first's first (see
// Cluster.URLs).
func (c *ProcCluster) URLs(first int) string { return orderURLs(c.urls, first) }

// Connect connects to the cluster, server first first, failing over to
// the others at once; the connection closes at the end of the test.
func (c *ProcCluster) Connect(t testing.TB, first int) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(c.URLs(first), nats.DontRandomize(), nats.MaxReconnects(-1),
		nats.ReconnectWait(50*time.Millisecond), nats.ReconnectJitter(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// JetStream returns JetStream on a connection of Connect.
func (c *ProcCluster) JetStream(t testing.TB, first int) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(c.Connect(t, first))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// Kill kills server i's process (SIGKILL) and waits for it to be gone.
func (c *ProcCluster) Kill(i int) {
	_ = c.procs[i].Process.Kill()
	_ = c.procs[i].Wait()
}

// MetaLeader returns the name of the server that leads JetStream's meta
// group (which answers the API requests that create and change streams),
// as server i knows it ("" while it knows none).
func (c *ProcCluster) MetaLeader(ctx context.Context, i int) (string, error) {
	var jsz struct {
		Meta *struct {
			Leader string `json:"leader"`
		} `json:"meta_cluster"`
	}
	if err := c.jsz(ctx, i, "", &jsz); err != nil || jsz.Meta == nil {
		return "", err
	}
	return jsz.Meta.Leader, nil
}

// jsz decodes server i's /jsz monitoring endpoint (query: its options).
func (c *ProcCluster) jsz(ctx context.Context, i int, query string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.monitors[i]+"/jsz"+query, nil)
	if err != nil {
		return err
	}
	tr := &http.Transport{DisableKeepAlives: true} // no connection outlives the call (leak checks)
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		return fmt.Errorf("%s/jsz: %w", c.monitors[i], err)
	}
	return nil
}

// StreamLeader returns the name of the server that leads the stream, as
// the stream's info tells it ("" while it has none).
func StreamLeader(ctx context.Context, js jetstream.JetStream, stream string) (string, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return "", err
	}
	info := s.CachedInfo()
	if info.Cluster == nil {
		return "", nil
	}
	return info.Cluster.Leader, nil
}

// MoveLeader asks the stream's leader to step down in favour of the server
// named to, until that server leads it. Each question gets a second: one
// asked during the election that follows a step-down gets no answer.
func MoveLeader(ctx context.Context, js jetstream.JetStream, stream, to string) error {
	prefix := js.Options().APIPrefix
	if prefix == "" {
		prefix = jetstream.DefaultAPIPrefix
	}
	req, _ := json.Marshal(map[string]any{"placement": map[string]any{"preferred": to}})
	for {
		ask, cancel := context.WithTimeout(ctx, time.Second)
		leader, err := StreamLeader(ask, js, stream)
		if err == nil && leader == to {
			cancel()
			return nil
		}
		if err == nil && leader != "" {
			_, _ = js.Conn().RequestWithContext(ask, prefix+"STREAM.LEADER.STEPDOWN."+stream, req)
		}
		cancel()
		select {
		case <-ctx.Done():
			return fmt.Errorf("stream %s: leader %q, not %s (%v): %w", stream, leader, to, err, context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitJetStream waits until the cluster's JetStream answers (it has a
// meta leader).
func waitJetStream(t testing.TB, urls string) {
	t.Helper()
	nc, err := nats.Connect(urls)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster's JetStream is not ready: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePorts returns n ports free on 127.0.0.1, all different.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports
}

func orderURLs(all []string, first int) string {
	urls := []string{all[first]}
	for i, u := range all {
		if i != first {
			urls = append(urls, u)
		}
	}
	return strings.Join(urls, ",")
}
