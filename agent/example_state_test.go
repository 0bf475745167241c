package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/toolkit"
)

// Tools keep a typed state for the run: "visit" records each city in the
// run's itinerary, "itinerary" reads it. The state lives in the
// conversation, so it is saved with it and the next run goes on from it.
func ExampleState() {
	ctx := context.Background()
	itinerary := agent.NewState[[]string]("itinerary")
	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Add(
		toolkit.MustTool(toolkit.Spec{Name: "visit", ConcurrencySafe: true}, func(ctx context.Context, in struct {
			City string `json:"city"`
		}) (string, error) {
			return "booked " + in.City, itinerary.Update(ctx, func(cities *[]string) { *cities = append(*cities, in.City) })
		}),
		toolkit.MustTool(toolkit.Spec{Name: "itinerary"}, func(ctx context.Context, _ struct{}) (string, error) {
			cities, _ := itinerary.Get(ctx)
			return strings.Join(cities, " → "), nil
		}),
	)
	turn := 0
	model := agent.ModelFunc(func(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
		turn++
		switch turn {
		case 1:
			return &agent.Reply{Calls: []toolkit.Call{{ID: "v1", Name: "visit", Args: json.RawMessage(`{"city":"Oslo"}`)}}}, nil
		case 2:
			return &agent.Reply{Calls: []toolkit.Call{{ID: "v2", Name: "visit", Args: json.RawMessage(`{"city":"Rome"}`)}}}, nil
		case 3:
			return &agent.Reply{Calls: []toolkit.Call{{ID: "i", Name: "itinerary", Args: json.RawMessage(`{}`)}}}, nil
		}
		return &agent.Reply{Text: "Your trip: " + req.Messages[len(req.Messages)-1].Text()}, nil
	})

	sess, _ := tk.Session("trip")
	conv := agent.NewConversation("", "Plan my trip.")
	out, _ := agent.New(model).Run(ctx, sess, conv)
	fmt.Println(out.Answer)
	fmt.Println(string(conv.State["itinerary"]))
	// Output:
	// Your trip: Oslo → Rome
	// ["Oslo","Rome"]
}
