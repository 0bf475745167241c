package agent

import (
	"context"
	"encoding/json"

	"github.com/toolstream/toolstream/toolkit"
)

// Model is a language model that produces one turn of a conversation. An
// adapter (packages agent/openaimodel and agent/anthropicmodel) or any
// other SDK implements it; the loop calls it once per turn.
//
// Generate returns the model's whole reply. A model that streams also
// hands each piece to req.Send as it arrives, before it returns; one that
// does not simply never calls it. Generate must honour ctx, must not keep
// req after it returns, and reports a provider failure as an *APIError so
// that the loop knows whether to retry it.
type Model interface {
	Generate(ctx context.Context, req *Request) (*Reply, error)
}

// Namer is implemented by a model that can say which model it is (for
// events and logs), for example "gpt-4.1-mini" or "claude-sonnet-4-5".
type Namer interface {
	Name() string
}

// Request is what a model is asked for one turn.
type Request struct {
	// System is the system prompt; empty for none.
	System string
	// Messages are the conversation so far, oldest first, or what the
	// loop's ContextPolicy sends of it. They follow the rules of
	// Conversation.Check. The model must not modify them; a hook or an
	// interceptor that rewrites them assigns a new slice (its elements are
	// the stored conversation's).
	Messages []Message
	// Tools are the tools on offer this turn, as the session defines them
	// now (tool groups and skills change them between turns).
	Tools []toolkit.Definition
	// Stream, when set, receives the reply's pieces as they are generated,
	// on the goroutine that calls Generate. Adapters call Send, which
	// does nothing when Stream is nil. The returned Reply is what counts:
	// where the pieces and the reply disagree (a server whose final
	// arguments differ from what it streamed), the reply wins, and the
	// pieces of an attempt that fails are void (the loop's model_retry
	// event tells UIs to drop them before it asks again).
	Stream func(Chunk)
}

// Send hands c to r.Stream, if there is one.
func (r *Request) Send(c Chunk) {
	if r != nil && r.Stream != nil {
		r.Stream(c)
	}
}

// ChunkKind says what a Chunk carries.
type ChunkKind uint8

// The kinds of chunk a streaming model sends.
const (
	// ChunkText is a piece of the model's words (Chunk.Text).
	ChunkText ChunkKind = iota + 1
	// ChunkCall says that the reply's call number Chunk.Index begins: its
	// Chunk.CallID (final: an adapter makes one up when the provider sends
	// none) and Chunk.Name. It comes before the call's ChunkArgs.
	ChunkCall
	// ChunkArgs is a piece of the arguments of call Chunk.Index, as JSON
	// text (Chunk.Text); the pieces of one call add up to its arguments.
	ChunkArgs
)

// Chunk is one piece of a streamed reply.
type Chunk struct {
	Kind ChunkKind
	// Text is the piece of words (ChunkText) or arguments (ChunkArgs).
	Text string
	// Index is the call's position in the reply, from 0 (ChunkCall and
	// ChunkArgs). A server that begins a call before one the model put
	// first can make it the position in the order calls began instead; the
	// reply has them in the model's order.
	Index int
	// CallID and Name identify the call (ChunkCall).
	CallID string
	Name   string
}

// Reply is a model's turn: words, tool calls, or both.
type Reply struct {
	// Text is what the model said.
	Text string
	// Calls are the tools the model asks to run, in its order. An adapter
	// passes arguments on as the model wrote them, even when they are not
	// valid JSON (the toolkit tells the model what is wrong), and makes
	// empty arguments {}, except for the last call of a reply cut at the
	// token limit (FinishLength): that one the model may have been cut in
	// before its arguments began, and the loop does not run a call it was
	// cut in (ErrTruncatedCall). Every call needs a name: the loop takes a
	// reply with a nameless call for a malformed one and asks again.
	Calls []toolkit.Call
	// Finish is why the model stopped.
	Finish Finish
	// Usage is the tokens the turn used, as the provider counted them.
	Usage Usage
	// Model is the model that answered, as the provider names it; empty if
	// the provider does not say.
	Model string
	// Extra is data an adapter needs back with this reply in the next
	// request (for example reasoning items a provider wants returned with
	// its tool calls). The loop stores it in the assistant message
	// unchanged; other adapters ignore it.
	Extra json.RawMessage
}

// Finish is why a model ended its turn, in provider-neutral words.
type Finish string

// The reasons a turn ends. Adapters map their provider's reasons onto
// these; a reason without an equivalent is passed on as the provider
// writes it.
const (
	FinishStop      Finish = "stop"       // the model answered
	FinishToolCalls Finish = "tool_calls" // the model asks for tools
	FinishLength    Finish = "length"     // the output token limit cut it short
	FinishFiltered  Finish = "filtered"   // a content filter or a refusal
)

// Usage counts tokens.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// Add returns u plus v.
func (u Usage) Add(v Usage) Usage {
	return Usage{InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens}
}

// ModelFunc adapts a function to Model: a test's or an example's
// scripted model, or a thin wrapper around an SDK call.
type ModelFunc func(ctx context.Context, req *Request) (*Reply, error)

// Generate calls f.
func (f ModelFunc) Generate(ctx context.Context, req *Request) (*Reply, error) { return f(ctx, req) }
