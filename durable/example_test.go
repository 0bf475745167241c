package durable_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/durable"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/toolkit"
)

// Two lives of an agent's process: the second runs a call the first
// finished (it resumed a conversation saved before the result), and gets the
// stored result; the tool does not run again.
func Example() {
	ctx := context.Background()
	bus, err := natsbus.Open(ctx) // an embedded NATS server, JetStream on
	if err != nil {
		panic(err)
	}
	defer bus.Close(ctx)
	js, _ := jetstream.New(bus.Conn())

	runs := 0
	call := []toolkit.Call{{ID: "c1", Name: "charge", Args: json.RawMessage(`{"cents":500}`)}}
	for life := 1; life <= 2; life++ {
		st, err := durable.New(ctx, js, "") // the bucket toolstream_calls
		if err != nil {
			panic(err)
		}
		tk := toolkit.New()
		tk.Use(st.Interceptor()) // before any other interceptor
		tk.Add(toolkit.MustTool(toolkit.Spec{Name: "charge", Description: "Charge the card."},
			func(ctx context.Context, in struct {
				Cents int `json:"cents"`
			}) (string, error) {
				runs++
				return fmt.Sprintf("charged %d cents", in.Cents), nil
			}))
		sess, _ := tk.Session("order-42")
		r := sess.Run(ctx, call)[0]
		fmt.Printf("life %d: %s (replayed: %v), runs: %d\n", life, r.Text(), r.Meta[durable.MetaReplayed] == true, runs)
		tk.Close(ctx)
	}
	// Output:
	// life 1: charged 500 cents (replayed: false), runs: 1
	// life 2: charged 500 cents (replayed: true), runs: 1
}

// An external tool's call waits for an answer; the process stops before it
// comes. The call is pending in the bucket, the answer is given while no
// process runs it, and the next process that runs the call gets it at once.
func ExampleStore_Answer() {
	ctx := context.Background()
	bus, err := natsbus.Open(ctx)
	if err != nil {
		panic(err)
	}
	defer bus.Close(ctx)
	js, _ := jetstream.New(bus.Conn())
	st, err := durable.New(ctx, js, "")
	if err != nil {
		panic(err)
	}
	ask, _ := toolkit.NewExternalTool(toolkit.Spec{Name: "ask_user", Description: "Ask the user."},
		json.RawMessage(`{"type":"object","properties":{"question":{"type":"string"}}}`))
	call := []toolkit.Call{{ID: "q1", Name: "ask_user", Args: json.RawMessage(`{"question":"Which color?"}`)}}
	start := func() *toolkit.Toolkit { // one life of the agent's process
		tk := toolkit.New()
		tk.Use(st.Interceptor())
		tk.Add(ask)
		return tk
	}

	tk := start()
	sess, _ := tk.Session("s")
	run := sess.Start(ctx, call)
	for r := range run.Results() {
		fmt.Println("first process:", r.State) // recorded in the bucket before it shows
		break
	}
	tk.Close(ctx) // the process stops before anyone answers
	fmt.Println("first process:", run.Wait()[0].State)

	pending, _ := st.Pending(ctx, "s")
	fmt.Println("pending:", pending[0].Call.ID, pending[0].Reason)
	if err := st.Answer(ctx, "s", "q1", []events.Part{events.Text("blue")}, ""); err != nil {
		panic(err)
	}

	tk = start()
	defer tk.Close(ctx)
	sess, _ = tk.Session("s")
	fmt.Println("next process:", sess.Run(ctx, call)[0].Text())
	// Output:
	// first process: suspended
	// first process: interrupted
	// pending: q1 external
	// next process: blue
}
