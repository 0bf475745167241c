package natsdeploy_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/deploy/nats/deploytest"
	"github.com/toolstream/toolstream/durable"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/toolkit"
)

// Each party connects with a user of its own on toolstream.conf, its nkey
// seed and the certificate authority as nats.Options: the agent (its bus,
// the durable store and the remote client on its connection), a worker on
// a connection of its own, and the SSE bridge on a bus bound to the
// agent's stream. The agent calls the worker's tool. (docs/security.md
// shows the middle of it.)
func Example_parties() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "deploy")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	srv, err := deploytest.New("toolstream.conf", dir)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Stop()
	url := srv.URL()
	party := func(p deploytest.Party) []nats.Option {
		seed, err := nats.NkeyOptionFromSeed(srv.Seed(p))
		if err != nil {
			log.Fatal(err)
		}
		return []nats.Option{seed, nats.RootCAs(srv.CA())}
	}
	workerOpts, bridgeOpts := party(deploytest.Worker), party(deploytest.Bridge)
	tk := toolkit.New() // the worker's
	defer tk.Close(ctx)
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "count_lines"}, func(ctx context.Context, in struct { // a tool toolstream.conf's worker may serve
		Text string `json:"text"`
	}) (string, error) {
		return fmt.Sprint(strings.Count(in.Text, "\n"), " lines"), nil
	}))

	seed, _ := nats.NkeyOptionFromSeed(srv.Seed(deploytest.Agent)) // or nats.UserCredentials("agent.creds") with nsc
	opts := []nats.Option{seed, nats.RootCAs(srv.CA())}            // nats.ClientCert(cert, key) for mutual TLS

	// the agent: the bus, and on its connection and JetStream the rest
	bus, _ := natsbus.Open(ctx, natsbus.WithURL(url), natsbus.WithNATSOptions(opts...), natsbus.WithDurable(natsbus.Durable{}))
	defer bus.Close(ctx)
	store, _ := durable.New(ctx, bus.JetStream(), "")
	client := remote.NewClient(bus.Conn())
	defer client.Close()

	// a worker: a connection of its own
	nc, _ := nats.Connect(url, workerOpts...)
	defer nc.Close()
	w, _ := remote.Serve(nc, tk)
	defer w.Stop(ctx)

	// the bridge: reads the stream the agent made
	bridge, _ := natsbus.Open(ctx, natsbus.WithURL(url),
		natsbus.WithNATSOptions(append(bridgeOpts, nats.CustomInboxPrefix("_INBOX_bridge"))...),
		natsbus.WithDurable(natsbus.Durable{Bind: true}))
	defer bridge.Close(ctx)
	mux := http.NewServeMux()
	mux.Handle("/events", bridge.SSEHandler())

	agent := toolkit.New(toolkit.WithInlineObserver(bus.Publisher()))
	defer agent.Close(ctx)
	agent.Use(store.Interceptor())
	tools, err := client.Discover(ctx)
	if err != nil {
		log.Fatal(err)
	}
	agent.Add(tools...)
	sess, _ := agent.Session("demo")
	r := sess.Run(ctx, []toolkit.Call{{ID: "c1", Name: "count_lines", Args: []byte(`{"text":"a\nb\n"}`)}})[0]
	fmt.Println(r.State, r.Text())
	// Output:
	// success 2 lines
}
