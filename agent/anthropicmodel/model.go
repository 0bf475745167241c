// Package anthropicmodel adapts the official Anthropic Go SDK
// (github.com/anthropics/anthropic-sdk-go/v2) to [agent.Model]: one turn of
// a conversation is one call of the Messages API, streamed by default.
//
//	client := anthropic.NewClient() // ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
//	model := anthropicmodel.New(client, "claude-sonnet-5-5")
//
// What the adapter maps, and what the Messages API cannot express, is in
// docs/llm-sdk-anthropic.md.
//
// The SDK's own retries are off by default (the agent loop retries a
// Retryable [agent.APIError] itself, honouring Retry-After); pass
// option.WithMaxRetries through [WithRequestOptions] to turn them back on.
package anthropicmodel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolstream/toolstream/agent"
)

// defaultMaxTokens is the output token limit a request carries unless
// [WithMaxTokens] says otherwise. The Messages API requires one. 8192 is
// accepted by every current Claude model, is enough for a turn of an agent
// (a few paragraphs and several tool calls), and keeps a non-streaming
// request under the SDK's ten-minute limit (the SDK refuses to send a
// non-streaming request above about 21,000 tokens).
const defaultMaxTokens = 8192

// provider names the provider in [agent.APIError].
const provider = "anthropic"

// Model is an [agent.Model] on the Anthropic Messages API. It is safe for
// concurrent use: each Generate builds its own request.
type Model struct {
	client anthropic.Client
	model  string
	cfg    config
}

type config struct {
	stream        bool
	maxTokens     int64
	noParallel    bool
	requestOpts   []option.RequestOption
	paramsEditors []func(*anthropic.MessageNewParams)
}

// Option configures a [Model].
type Option func(*config)

// WithStreaming says whether Generate streams the reply (the default) and
// hands its pieces to [agent.Request.Send], or asks for the whole message at
// once.
func WithStreaming(on bool) Option { return func(c *config) { c.stream = on } }

// WithMaxTokens sets the request's max_tokens, the most tokens the model may
// write in one turn (default 8192). A turn cut short by it
// ends with [agent.FinishLength]. Values below 1 keep the default.
func WithMaxTokens(n int64) Option {
	return func(c *config) {
		if n > 0 {
			c.maxTokens = n
		}
	}
}

// WithParallelToolUse says whether the model may ask for several tools in
// one turn (the default). With false the request carries tool_choice
// {"type":"auto","disable_parallel_tool_use":true}: at most one tool call
// per turn.
func WithParallelToolUse(on bool) Option { return func(c *config) { c.noParallel = !on } }

// WithRequestOptions adds SDK request options to every request, after the
// adapter's own (option.WithMaxRetries(0)), so they can override it: for
// example option.WithMaxRetries(2), option.WithHeader, or
// option.WithJSONSet for a field the adapter does not set.
func WithRequestOptions(opts ...option.RequestOption) Option {
	return func(c *config) { c.requestOpts = append(c.requestOpts, opts...) }
}

// WithParams registers a function that edits each request's parameters
// after the adapter filled them (model, max_tokens, system, messages,
// tools, tool_choice), just before they are sent: for thinking,
// output_config, stop sequences, metadata or cache control. It must not
// keep the params.
func WithParams(edit func(*anthropic.MessageNewParams)) Option {
	return func(c *config) {
		if edit != nil {
			c.paramsEditors = append(c.paramsEditors, edit)
		}
	}
}

// New returns a model that asks client's Messages API for model (for
// example "claude-sonnet-5-5"). The client carries the key and the base URL
// (anthropic.NewClient reads ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL).
// Requests go out with option.WithMaxRetries(0): the agent loop owns
// retries; [WithRequestOptions] can give the SDK its retries back. A
// request to Anthropic's own API without a credential fails at the first
// Generate, before it leaves, with a non-retryable [*agent.APIError] that
// says to set ANTHROPIC_API_KEY or pass option.WithAPIKey; a client pointed
// at another server (option.WithBaseURL) is never stopped.
func New(client anthropic.Client, model string, opts ...Option) *Model {
	m := &Model{client: client, model: model, cfg: config{stream: true, maxTokens: defaultMaxTokens}}
	for _, o := range opts {
		if o != nil {
			o(&m.cfg)
		}
	}
	return m
}

// Name returns the model id the requests ask for ([agent.Namer]).
func (m *Model) Name() string { return m.model }

// Generate asks the model for one turn. Streaming, it hands text, each tool
// call's start and its argument pieces to req.Send as they arrive. A
// provider failure is an *[agent.APIError]; a cancelled ctx gives an error
// that wraps ctx.Err().
func (m *Model) Generate(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
	if req == nil {
		req = &agent.Request{}
	}
	params, err := m.params(req)
	if err != nil {
		return nil, err
	}
	// answered notes that the server answered 2xx: a failure after that
	// (a body cut short, garbled JSON) is worth a retry, one before it
	// without an HTTP status (a request the SDK refused to build) is not.
	var answered atomic.Bool
	// whole is the body of a 2xx JSON answer to a streamed request (a
	// proxy that ignored "stream", or an error sent with status 200): the
	// SDK would read it as an event stream without events.
	var whole atomic.Pointer[[]byte]
	opts := make([]option.RequestOption, 0, 3+len(m.cfg.requestOpts))
	opts = append(opts, option.WithMaxRetries(0), option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(r)
		if err == nil && res.StatusCode >= 200 && res.StatusCode < 300 {
			answered.Store(true)
			if m.cfg.stream && isJSON(res) {
				b, rerr := io.ReadAll(io.LimitReader(res.Body, maxJSONBody))
				res.Body.Close()
				if rerr != nil {
					return nil, rerr
				}
				whole.Store(&b)
				res.Body = io.NopCloser(bytes.NewReader(nil))
			}
		}
		return res, err
	}))
	opts = append(opts, m.cfg.requestOpts...)
	opts = append(opts, option.WithMiddleware(requireKey)) // innermost: the others may set the key
	if !m.cfg.stream {
		msg, err := m.client.Messages.New(ctx, params, opts...)
		if err != nil {
			return nil, toError(ctx, err, answered.Load())
		}
		if err := notAMessage([]byte(msg.RawJSON())); err != nil {
			return nil, toError(ctx, err, true)
		}
		return replyFromMessage(msg), nil
	}
	stream := m.client.Messages.NewStreaming(ctx, params, opts...)
	defer stream.Close()
	acc := newAccumulator(req.Send)
	for stream.Next() {
		if ctx.Err() != nil {
			// Events already read stay unsent once the caller gave up.
			break
		}
		if err := acc.event(stream.Current()); err != nil {
			return nil, toError(ctx, err, true)
		}
	}
	if b := whole.Load(); b != nil {
		if err := ctx.Err(); err != nil {
			return nil, toError(ctx, err, true)
		}
		reply, err := wholeReply(*b, req.Send)
		if err != nil {
			return nil, toError(ctx, err, true)
		}
		return reply, nil
	}
	if err := stream.Err(); err != nil {
		return nil, toError(ctx, err, answered.Load())
	}
	if err := ctx.Err(); err != nil {
		return nil, toError(ctx, err, true)
	}
	reply, err := acc.reply()
	if err != nil {
		return nil, toError(ctx, err, true)
	}
	return reply, nil
}

// maxJSONBody bounds a whole JSON answer read in place of a stream.
const maxJSONBody = 64 << 20

// isJSON reports whether a response is one JSON document rather than an
// event stream.
func isJSON(res *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	return mt == "application/json"
}

// wholeReply reads the JSON a server sent instead of the stream that was
// asked for: a whole message, whose pieces go to send as one would have
// streamed them, or an error.
func wholeReply(body []byte, send func(agent.Chunk)) (*agent.Reply, error) {
	if err := notAMessage(body); err != nil {
		return nil, err
	}
	var msg anthropic.Message
	if err := json.Unmarshal(body, &msg); err != nil {
		return nil, &streamError{"anthropic: the server answered a streamed request with JSON that is not a message: " + err.Error()}
	}
	reply := replyFromMessage(&msg)
	if send != nil {
		if reply.Text != "" {
			send(agent.Chunk{Kind: agent.ChunkText, Text: reply.Text})
		}
		for i, c := range reply.Calls {
			send(agent.Chunk{Kind: agent.ChunkCall, Index: i, CallID: c.ID, Name: c.Name})
			send(agent.Chunk{Kind: agent.ChunkArgs, Index: i, Text: string(c.Args)})
		}
	}
	return reply, nil
}

// notAMessage returns the error a 2xx JSON body stands for when it is not
// a message: the API's error object sent with status 200 (as some proxies
// do), or something else altogether. Without it such a body reads as a
// message with no content: an empty answer, silently.
func notAMessage(body []byte) error {
	var m struct {
		Type  string `json:"type"`
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		Content    json.RawMessage `json:"content"`
		StopReason json.RawMessage `json:"stop_reason"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return &streamError{"anthropic: the response is not JSON: " + snippet(body)}
	}
	if m.Error != nil || m.Type == "error" {
		e := &agent.APIError{Provider: provider, Err: errors.New("error body with a 2xx status: " + snippet(body))}
		if m.Error != nil {
			e.Type, e.Message = m.Error.Type, m.Error.Message
		}
		if e.Message == "" {
			e.Message = snippet(body)
		}
		e.Retryable = retryableEventTypes[e.Type]
		return e
	}
	if m.Type != "message" && len(m.Content) == 0 && len(m.StopReason) == 0 {
		return &streamError{"anthropic: the response is not a message: " + snippet(body)}
	}
	return nil
}

// snippet is the start of a body on one line, for an error message.
func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 300 {
		s = strings.ToValidUTF8(s[:300], "") + "..."
	}
	return s
}
