package natstest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Cluster is a NATS cluster of servers in the test process: routes between
// all of them, JetStream on each (its own store), for tests of what
// survives the loss of a server.
type Cluster struct {
	Servers []*server.Server
}

// NewCluster starts a cluster of n servers and waits until JetStream has a
// meta leader; the servers are shut down at the end of the test.
func NewCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	ports := freePorts(t, 2*n) // a client and a cluster port each, all different
	routes := make([]string, n)
	for i := range n {
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", ports[2*i+1])
	}
	c := &Cluster{}
	for i := range n {
		o := &server.Options{
			ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: ports[2*i],
			NoSigs: true, NoLog: true,
			JetStream: true, StoreDir: t.TempDir(),
			JetStreamMaxMemory: 64 << 20, JetStreamMaxStore: 1 << 30,
			Cluster: server.ClusterOpts{Name: "toolstream-test", Host: "127.0.0.1", Port: ports[2*i+1]},
			Routes:  server.RoutesFromStr(strings.Join(routes, ",")),
		}
		s, err := server.NewServer(o)
		if err != nil {
			t.Fatal(err)
		}
		s.Start()
		c.Servers = append(c.Servers, s)
		t.Cleanup(func() {
			s.Shutdown()
			s.WaitForShutdown()
		})
	}
	for _, s := range c.Servers {
		if !s.ReadyForConnections(10 * time.Second) {
			t.Fatalf("server %s did not start", s.Name())
		}
	}
	// JetStream answers once the servers have elected a meta leader.
	waitJetStream(t, c.URLs(0))
	return c
}

// URL returns server i's client URL.
func (c *Cluster) URL(i int) string { return c.Servers[i].ClientURL() }

// URLs returns every server's client URL, server first's first: a client
// given them with nats.DontRandomize connects to that server and fails
// over to the others.
func (c *Cluster) URLs(first int) string {
	urls := make([]string, len(c.Servers))
	for i := range c.Servers {
		urls[i] = c.URL(i)
	}
	return orderURLs(urls, first)
}

// JetStream connects to the cluster, server first first (see URLs), and
// returns its JetStream; the connection closes at the end of the test.
func (c *Cluster) JetStream(t testing.TB, first int) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(c.URLs(first))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// Kill shuts server i down, as a crash would for its clients: their
// connections drop.
func (c *Cluster) Kill(i int) {
	c.Servers[i].Shutdown()
	c.Servers[i].WaitForShutdown()
}
