package mcpbridge_test

import (
	"context"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/toolkit"
)

type greetIn struct {
	Name string `json:"name"`
}

// A toolkit's tools served to an MCP client (the official Go SDK's, over an
// in-memory transport; Handler serves streamable HTTP, Serve with mcp.StdioTransport stdio):
// the client lists them and calls one, which runs through the toolkit.
func ExampleServer() {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	if err := tk.Add(toolkit.MustTool(toolkit.Spec{Name: "greet", Description: "Greets someone."},
		func(_ context.Context, in greetIn) (string, error) { return "hello, " + in.Name, nil })); err != nil {
		log.Fatal(err)
	}
	srv, err := mcpbridge.NewServer(tk)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	ct, st := mcp.NewInMemoryTransports()
	serving, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(serving, st) }()
	defer func() { stop(); <-done }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(list.Tools[0].Name, "->", res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// greet -> hello, Ada
}
