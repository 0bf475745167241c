// Command stdioserver serves a small toolkit over MCP on standard input and
// output, for mcpbridge's stdio test: `echo` answers its text, `sleep` waits
// until it is cancelled.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

type echoIn struct {
	Text string `json:"text"`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	tk := toolkit.New()
	tk.Add(
		toolkit.MustTool(toolkit.Spec{Name: "echo", Description: "Answers its text."},
			func(ctx context.Context, in echoIn) (string, error) {
				stream.From(ctx).Progress("echoing", 0.5)
				return in.Text, nil
			}),
	)

	s, err := mcpbridge.NewServer(tk, mcpbridge.WithImplementation("stdioserver", "1"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	err = s.Serve(ctx, &mcp.StdioTransport{})
	s.Close()
	tk.Close(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
}
