package agent

import (
	"context"
	"errors"
	"fmt"
)

// ContextPolicy bounds what the model is sent each turn, so that a long
// run (many turns, large tool results) does not outgrow the model's
// context window or its price. It is applied before every model call to a
// copy of the conversation: the stored Conversation stays whole (a durable
// store, a UI, a later summary still have every message) unless Store is
// set.
//
// In order, while the messages sent are over the budget:
//
//  1. turns older than the last KeepTurns are dropped;
//  2. old tool results are cleared (their content becomes a short note
//     saying how large they were), oldest first: the newest stay whole;
//  3. then whole old turns are dropped, oldest first;
//  4. last, the results of the newest turn are cleared too.
//
// A turn is a user message, or an assistant message with the tool results
// that answer its calls: a call is never sent without its result, nor a
// result without its call. The conversation's first message, when it is a
// user's (the task), is always sent and never counted as a turn: a model
// that lost its task goes astray, and some providers want the history to
// begin with a user message. When the budget cannot be met (the first
// message or the newest assistant message alone is larger), the smallest
// history the rules allow is sent and the context_cut event says so.
//
// What was dropped can be summarized (Summarize); the summary is sent as a
// user message right after the first one. Each turn something is cut, the
// loop sends a context_cut event (EventContextCut).
//
// The policy cuts once per turn, where the request is assembled: the
// BeforeModel hooks (WithHooks) get what it sends and may cut further, and
// a request assembled again after a failure (RetryReassemble) gets the
// same cut, unless a hook replaced the conversation (RunInfo.Replace).
//
// The system prompt is always sent whole and is not counted: it is the
// caller's to keep short.
type ContextPolicy struct {
	// KeepTurns sends only the last KeepTurns turns (and the first user
	// message); 0 keeps every turn the budget allows.
	KeepTurns int
	// MaxBytes bounds the messages sent (see MessageBytes: the system
	// prompt and the tool definitions are not counted); 0 means no bound.
	MaxBytes int
	// MaxTokens bounds the messages sent by an estimate of their tokens,
	// EstimateTokens (bytes/4): cheap, and close enough for English text
	// and JSON to keep a request under a context window with room to
	// spare. 0 means no bound; with MaxBytes too, the tighter one holds.
	MaxTokens int
	// Summarize, when set, is asked for a summary of the messages dropped
	// (whole, in order; it must not modify them), usually with a model
	// call. Its text is sent as a user message after the first one. It is
	// asked again only when what is dropped changes. An error (or an empty
	// summary) does not fail the run: the messages are dropped without a
	// summary, and the context_cut event carries the error. The summary
	// counts against the budget; when it does not fit, more turns are
	// dropped, which it does not cover.
	Summarize func(ctx context.Context, cut []Message) (string, error)
	// Store applies the cut to the stored conversation too (Run's conv):
	// it then holds what the model was last sent, summary included. For
	// a caller that keeps the conversation only to send it again and
	// wants its memory bounded; without it the conversation keeps
	// growing, whole. The calls cut from it no longer count as used ids:
	// with durable, whose store keys results by call id, and a server that
	// numbers calls per reply (call_0 every turn), leave Store off.
	Store bool
}

// WithContextPolicy bounds what the model is sent each turn (see
// ContextPolicy). Run refuses to start with a policy whose numbers are
// negative.
func WithContextPolicy(p ContextPolicy) Option {
	return func(l *Loop) { l.policy = &p }
}

// check reports a policy that cannot mean anything.
func (p *ContextPolicy) check() error {
	if p == nil {
		return nil
	}
	var errs []error
	for _, f := range []struct {
		name string
		n    int
	}{{"KeepTurns", p.KeepTurns}, {"MaxBytes", p.MaxBytes}, {"MaxTokens", p.MaxTokens}} {
		if f.n < 0 {
			errs = append(errs, fmt.Errorf("agent: ContextPolicy.%s is %d: give 0 for no bound, or a positive number", f.name, f.n))
		}
	}
	return errors.Join(errs...)
}

// budget is the most bytes the messages sent may hold, 0 for no bound.
func (p *ContextPolicy) budget() int {
	b := p.MaxBytes
	if p.MaxTokens > 0 {
		t := p.MaxTokens * bytesPerToken
		if t/bytesPerToken != p.MaxTokens { // overflow: no real bound
			t = int(^uint(0) >> 1)
		}
		if b == 0 || t < b {
			b = t
		}
	}
	return b
}

// bytesPerToken is EstimateTokens' ratio.
const bytesPerToken = 4

// MessageBytes is the size a ContextPolicy counts for messages: the bytes
// of their content (text, JSON, binary data as bytes, not base64), their
// calls' ids, names and arguments, a tool message's call id and tool
// name, an assistant message's Extra, and 16 bytes a message for its role
// and framing (the 3 or 4 tokens a message costs beyond its content in
// the providers' counts). What a provider's wire format adds (JSON keys,
// escapes, base64) is more: about 50-100 bytes a message as JSON
// (docs/benchmarks.md); leave room for it in MaxBytes.
func MessageBytes(msgs ...Message) int {
	n := 0
	for i := range msgs {
		n += messageBytes(&msgs[i])
	}
	return n
}

func messageBytes(m *Message) int {
	n := messageFraming + len(m.CallID) + len(m.Tool) + len(m.Extra)
	for _, p := range m.Content {
		n += len(p.Text) + len(p.JSON) + len(p.Data) + len(p.MediaType)
	}
	for _, c := range m.Calls {
		n += len(c.ID) + len(c.Name) + len(c.Args)
	}
	return n
}

// messageFraming is what MessageBytes counts for a message beyond its
// content.
const messageFraming = 16

// EstimateTokens estimates the tokens of msgs as MessageBytes/4, rounded
// up: the estimate ContextPolicy.MaxTokens is held to.
func EstimateTokens(msgs ...Message) int {
	return (MessageBytes(msgs...) + bytesPerToken - 1) / bytesPerToken
}
