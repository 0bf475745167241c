package remote_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/toolkit"
)

// text is the upper tool's input.
type text struct {
	Text string `json:"text"`
}

// A worker serves a tool of its own toolkit; the agent discovers it and
// calls it as if it were local. Here both connect to the bus's embedded
// NATS server; in production they are processes anywhere on one NATS.
func Example() {
	ctx := context.Background()
	bus, _ := natsbus.Open(ctx) // no URL: an embedded server, in process
	defer bus.Close(ctx)

	// The worker's side: its toolkit, served on its own connection.
	wtk := toolkit.New()
	defer wtk.Close(ctx)
	wtk.Add(toolkit.MustTool(toolkit.Spec{Name: "upper", Description: "Upper-cases text."},
		func(ctx context.Context, in text) (string, error) { return strings.ToUpper(in.Text), nil }))
	wnc, _ := nats.Connect("", nats.InProcessServer(bus.Server()))
	defer wnc.Close()
	w, _ := remote.Serve(wnc, wtk)
	defer w.Stop(ctx)

	// The agent's side: the workers' tools become tools of its toolkit.
	anc, _ := nats.Connect("", nats.InProcessServer(bus.Server()))
	defer anc.Close()
	client := remote.NewClient(anc)
	defer client.Close()
	tools, _ := client.Discover(ctx)
	tk := toolkit.New(toolkit.WithInlineObserver(bus.Publisher())) // the calls' events go out here, once
	defer tk.Close(ctx)
	tk.Add(tools...)
	sess, _ := tk.Session("conversation-1")
	r := sess.Run(ctx, []toolkit.Call{{ID: "c1", Name: "upper", Args: []byte(`{"text":"hello"}`)}})[0]
	fmt.Println(r.Text(), "from worker", r.Meta[remote.MetaWorker] == w.ID())
	// Output: HELLO from worker true
}
