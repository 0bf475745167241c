package openaimodel

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/openai/openai-go/v3/option"
)

// Option configures a model made by [NewChat] or [NewResponses].
type Option func(*config)

type config struct {
	stream      bool
	temperature *float64
	maxTokens   int64
	parallel    *bool
	reqOpts     []option.RequestOption
}

func newConfig(opts []Option) config {
	c := config{stream: true}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// requestOptions are the options of every request: the SDK's retries off
// (the loop retries), then the caller's, which may bring them back, and
// last the check that a request to OpenAI's own API has a key (the
// innermost middleware: the others may set it).
func (c *config) requestOptions(extra ...option.RequestOption) []option.RequestOption {
	out := make([]option.RequestOption, 0, 2+len(c.reqOpts)+len(extra))
	out = append(out, option.WithMaxRetries(0))
	out = append(out, c.reqOpts...)
	out = append(out, extra...)
	return append(out, option.WithMiddleware(requireKey))
}

// WithStreaming turns streaming on (the default) or off. Without it the
// model asks for the whole reply at once and never calls
// [agent.Request.Send].
func WithStreaming(on bool) Option { return func(c *config) { c.stream = on } }

// WithTemperature sets the sampling temperature. Unset, the server's
// default applies (some reasoning models accept no other value).
func WithTemperature(t float64) Option { return func(c *config) { c.temperature = &t } }

// WithMaxTokens bounds the tokens of a reply: max_completion_tokens for
// Chat Completions, max_output_tokens for Responses. A reply cut short ends
// with [agent.FinishLength]. Servers that know only the older max_tokens
// field can be given it with
// WithRequestOptions(option.WithJSONSet("max_tokens", n)).
func WithMaxTokens(n int64) Option { return func(c *config) { c.maxTokens = n } }

// WithParallelToolCalls allows (the API's default) or forbids several tool
// calls in one reply. It is sent only in requests that offer tools: the API
// refuses it otherwise.
func WithParallelToolCalls(on bool) Option { return func(c *config) { c.parallel = &on } }

// WithRequestOptions adds SDK request options to every request, after the
// adapter's own: headers, option.WithJSONSet for fields the adapter does not
// set, option.WithMaxRetries to let the SDK retry too.
func WithRequestOptions(opts ...option.RequestOption) Option {
	return func(c *config) { c.reqOpts = append(c.reqOpts, opts...) }
}

// newCallID makes up a call id for a tool call the server sent without one
// (or with one an earlier call of the reply already has): the id must be
// the same in the assistant message and in the tool result.
func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}
