package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// dialError is a failed connection attempt: a message that says what
// happened and what to do, over the cause (errors.Is(err,
// context.DeadlineExceeded) holds for a server that took too long).
type dialError struct {
	msg   string
	cause error
}

func (e *dialError) Error() string { return e.msg }
func (e *dialError) Unwrap() error { return e.cause }

// dialFailed words a connection attempt, begun at start, that failed: which server
// (its command, or its URL), why, and when time ran out, whose time it was
// and how to give more: a cold `npx -y` downloads its package before it
// speaks MCP, which takes a minute, and a bare "context deadline exceeded"
// said none of this. parent is the context the attempt ran under (the one
// passed to Connect, or the client's own for a reconnection); dctx is
// parent bounded by the dial timeout.
func (c *Client) dialFailed(parent, dctx context.Context, tr mcp.Transport, err error, start time.Time) error {
	took := time.Since(start)
	var b strings.Builder
	fmt.Fprintf(&b, "mcpbridge: connecting to MCP server %q%s: ", c.name, describeTransport(tr))
	cause := err
	switch {
	case parent.Err() != nil && parent == c.ctx:
		fmt.Fprintf(&b, "its client was closed after %s, before the server answered", took.Round(time.Millisecond))
		cause = parent.Err()
	case parent.Err() != nil:
		after := took // to the end of the attempt: the process had time to exit
		if dl, ok := parent.Deadline(); ok && errors.Is(parent.Err(), context.DeadlineExceeded) {
			after = dl.Sub(start)
		}
		fmt.Fprintf(&b, "the context passed to Connect ended (%v) %s after the attempt began, before the server answered; "+
			"give Connect a context with a later deadline (a server run by a cold `npx -y` downloads its package first, which can take a minute)",
			parent.Err(), after.Round(time.Millisecond))
		cause = parent.Err()
	case dctx.Err() != nil:
		fmt.Fprintf(&b, "it did not answer within %s, the dial timeout; "+
			"give it more with the option mcpbridge.WithDialTimeout (for example 2*time.Minute: a server run by a cold `npx -y` downloads its package first, which can take a minute)",
			c.o.dialTimeout)
		cause = dctx.Err()
	default:
		if note := sseGuardOf(tr).dialNote(); note != "" {
			b.WriteString(note) // says more than the SDK's "failed to connect"
		} else {
			b.WriteString(err.Error())
		}
	}
	if note := sseGuardOf(tr).dialNote(); dctx.Err() != nil && parent.Err() == nil && note != "" {
		b.WriteString("; " + note)
	}
	if tail := stderrOf(tr); tail != "" {
		b.WriteString("; its standard error ends with:\n" + tail)
	}
	b.WriteString(unauthorizedHint(tr))
	b.WriteString(sseHint(tr))
	return &dialError{msg: b.String(), cause: errors.Join(cause, err)}
}

// maxCommandQuote bounds the command line an error quotes.
const maxCommandQuote = 300

// describeTransport names what a transport reaches, for errors: " (command:
// npx -y server)" for a stdio server (not its environment, where secrets
// go), " at https://host/path" for HTTP (without the query or user
// information), "" otherwise.
func describeTransport(tr mcp.Transport) string {
	switch t := tr.(type) {
	case *mcp.CommandTransport:
		if t.Command == nil {
			return ""
		}
		words := make([]string, len(t.Command.Args))
		for i, a := range t.Command.Args {
			if a == "" || strings.ContainsAny(a, " \t\n\"'") {
				a = fmt.Sprintf("%q", a)
			}
			words[i] = a
		}
		return " (command: " + trimQuote(strings.Join(words, " "), maxCommandQuote) + ")"
	case *mcp.StreamableClientTransport:
		if u := redactURL(t.Endpoint); u != "" {
			return " at " + u
		}
	case *sseTransport:
		if u := redactURL(t.inner.Endpoint); u != "" {
			return " at " + u + " (HTTP+SSE)"
		}
	}
	return ""
}

// redactURL is s without its query or user information, for errors; "" if
// it does not parse.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return trimQuote(u.String(), maxCommandQuote)
}
