package natskv_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/groups/natskv"
	"github.com/toolstream/toolstream/toolkit"
)

// Two agent processes (here two toolkits over one embedded NATS server) keep
// a session's tool groups in one key-value bucket: what the model switches on
// in one, the other's session shows.
func Example() {
	ctx := context.Background()
	bus, err := natsbus.Open(ctx)
	if err != nil {
		panic(err)
	}
	defer bus.Close(ctx)
	js, _ := jetstream.New(bus.Conn())

	process := func() (*toolkit.Toolkit, *groups.Manager) {
		store, err := natskv.New(ctx, js, "") // the bucket toolstream_groups
		if err != nil {
			panic(err)
		}
		tk := toolkit.New()
		tk.Add(toolkit.MustTool(toolkit.Spec{Name: "web_get", Description: "Fetch a page."},
			func(ctx context.Context, _ struct{}) (string, error) { return "<html>", nil }))
		m, _ := groups.Install(tk, groups.WithStore(store))
		m.Add(groups.Group{Name: "web", Description: "Fetch web pages.", Tools: []string{"web_get"}})
		return tk, m
	}
	a, _ := process()
	defer a.Close(ctx)
	b, mb := process()
	defer b.Close(ctx)

	sa, _ := a.Session("s")
	sa.Run(ctx, []toolkit.Call{{ID: "c1", Name: "reset_tools", Args: json.RawMessage(`{"web": true}`)}})
	active, _ := mb.Active(ctx, "s")
	fmt.Println("active in b:", active)
	sb, _ := b.Session("s")
	fmt.Println(sb.Run(ctx, []toolkit.Call{{ID: "c2", Name: "web_get"}})[0].Text())
	// Output:
	// active in b: [web]
	// <html>
}
