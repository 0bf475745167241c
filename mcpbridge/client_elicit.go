package mcpbridge

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ElicitFunc answers a server's elicitation request (elicitation/create):
// accept with content, decline or cancel. server is the server's name.
type ElicitFunc func(ctx context.Context, server string, req *mcp.ElicitParams) (*mcp.ElicitResult, error)

// WithElicitation answers the server's elicitation requests with f; without
// it the client does not advertise the capability and servers do not ask.
func WithElicitation(f ElicitFunc) ClientOption { return func(o *clientOptions) { o.elicit = f } }

func (c *Client) elicitationHandler() func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	f := c.o.elicit
	if f == nil {
		return nil
	}
	return func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return f(ctx, c.name, req.Params)
	}
}
