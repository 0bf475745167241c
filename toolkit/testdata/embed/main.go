// Command embed is the smallest useful program that embeds the toolkit: one
// typed tool and one run. TestFootprint builds it to check what the engine
// costs a program that uses nothing else of the project.
package main

import (
	"context"
	"fmt"

	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

type greetIn struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

func main() {
	tk := toolkit.New()
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "greet", Description: "Greets someone."},
		func(ctx context.Context, in greetIn) (string, error) {
			stream.From(ctx).Progress("greeting", 0.5)
			return "hello " + in.Name, nil
		}))
	sess, _ := tk.Session("s")
	for _, r := range sess.Run(context.Background(), []toolkit.Call{{ID: "1", Name: "greet", Args: []byte(`{"name":"Ada"}`)}}) {
		fmt.Println(r.Text())
	}
	tk.Close(context.Background())
}
