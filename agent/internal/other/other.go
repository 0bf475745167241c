// Package other stands for a model provider's Go SDK that toolstream has
// no adapter for: the example of docs/llm-sdk.md ("Any other SDK",
// agent's ExampleModel) implements agent.Model on it. Its client plays
// scripted replies, so that the example runs without a network.
package other

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"sync"
)

// Client plays its replies in turn, one per Stream.
type Client struct {
	mu      sync.Mutex
	replies []Reply
}

// Reply is one scripted answer: an error, or the events of a stream.
type Reply struct {
	Err    error
	Events []Event
}

// NewClient returns a client that plays replies in turn.
func NewClient(replies ...Reply) *Client { return &Client{replies: replies} }

// Request is what the provider's API takes.
type Request struct {
	System   string
	Messages []string
	Tools    []string
}

// Event is one piece of a streamed reply: Kind "text" (Text),
// "tool_start" (Index, ID, Name) or "tool_args" (Index, Delta).
type Event struct {
	Kind, Text, ID, Name, Delta string
	Index                       int
}

// HTTPError is the provider's error for a refused request.
type HTTPError struct {
	Status int
	Msg    string
	Header http.Header
}

func (e *HTTPError) Error() string { return fmt.Sprintf("other: %d %s", e.Status, e.Msg) }

// Stream is a reply as it streams.
type Stream struct {
	events []Event
	ctx    context.Context
}

// Stream sends a request and returns its reply's stream.
func (c *Client) Stream(ctx context.Context, req Request) (*Stream, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.replies) == 0 {
		return nil, fmt.Errorf("other: no reply left for a request of %d messages", len(req.Messages))
	}
	r := c.replies[0]
	c.replies = c.replies[1:]
	if r.Err != nil {
		return nil, r.Err
	}
	return &Stream{events: r.Events, ctx: ctx}, nil
}

// Events yields the reply's events as they come.
func (s *Stream) Events() iter.Seq[Event] {
	return func(yield func(Event) bool) {
		for _, ev := range s.events {
			if s.ctx.Err() != nil || !yield(ev) {
				return
			}
		}
	}
}

// Err is why the stream ended early, if it did.
func (s *Stream) Err() error { return s.ctx.Err() }
