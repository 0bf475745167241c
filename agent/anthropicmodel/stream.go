package anthropicmodel

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/agent/internal/jsonpiece"
	"github.com/toolstream/toolstream/toolkit"
)

// The kinds of content block the accumulator tells apart.
const (
	blockText = iota + 1
	blockToolUse
	blockThinking
	blockOther // server tools and anything newer: not part of the turn
)

// accumulator builds a reply from a stream's events and hands its pieces
// to send as they arrive. It is the only state a stream has; its methods
// take plain values so that the fuzz test can drive it without HTTP.
type accumulator struct {
	send    func(agent.Chunk)
	stopped bool // message_stop
	reason  string
	model   string
	text    strings.Builder
	blocks  map[int64]*block
	calls   []*callState
	ids     map[string]bool
	think   []*thinkingBlock
	usage   usage
}

type usage struct{ input, cacheWrite, cacheRead, output int64 }

func (u usage) agent() agent.Usage {
	return agent.Usage{InputTokens: u.input + u.cacheWrite + u.cacheRead, OutputTokens: u.output}
}

type block struct {
	kind  int
	call  *callState
	think *thinkingBlock
	join  jsonpiece.Joiner // a character cut between two deltas
	done  bool
}

// callState is a tool_use block being streamed.
type callState struct {
	index   int
	id      string
	name    string
	start   string // the input content_block_start carried, as JSON text
	args    strings.Builder
	pending string // leading blank pieces, held back until something else comes
	sent    bool   // some argument text went out as ChunkArgs
	done    bool   // the arguments are final
}

func newAccumulator(send func(agent.Chunk)) *accumulator {
	return &accumulator{send: send, blocks: map[int64]*block{}, ids: map[string]bool{}}
}

// event dispatches one of the SDK's stream events.
func (a *accumulator) event(ev anthropic.MessageStreamEventUnion) error {
	switch ev.Type {
	case "message_start":
		u := ev.Message.Usage
		a.messageStart(string(ev.Message.Model), usage{u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens})
	case "content_block_start":
		cb := ev.ContentBlock
		switch cb.Type {
		case "text":
			return a.startText(ev.Index, cb.Text)
		case "tool_use":
			return a.startToolUse(ev.Index, cb.ID, cb.Name, cb.JSON.Input.Raw())
		case "thinking":
			return a.startThinking(ev.Index, thinkingBlock{Type: "thinking", Thinking: cb.Thinking, Signature: cb.Signature})
		case "redacted_thinking":
			return a.startThinking(ev.Index, thinkingBlock{Type: "redacted_thinking", Data: cb.Data})
		default:
			return a.startOther(ev.Index)
		}
	case "content_block_delta":
		d := ev.Delta
		switch d.Type {
		case "text_delta":
			return a.delta(ev.Index, d.Type, d.JSON.Text.Raw(), d.Text)
		case "input_json_delta":
			return a.delta(ev.Index, d.Type, d.JSON.PartialJSON.Raw(), d.PartialJSON)
		case "thinking_delta":
			return a.delta(ev.Index, d.Type, d.JSON.Thinking.Raw(), d.Thinking)
		case "signature_delta":
			return a.delta(ev.Index, d.Type, "", d.Signature)
		default: // citations_delta and newer kinds: not part of the turn
			return a.delta(ev.Index, d.Type, "", "")
		}
	case "content_block_stop":
		return a.stop(ev.Index)
	case "message_delta":
		if ev.Delta.StopReason != "" {
			a.reason = string(ev.Delta.StopReason)
		}
		// message_delta's usage is cumulative: each field it carries
		// replaces what message_start said.
		u := ev.Usage
		if u.JSON.InputTokens.Valid() {
			a.usage.input = u.InputTokens
		}
		if u.JSON.CacheCreationInputTokens.Valid() {
			a.usage.cacheWrite = u.CacheCreationInputTokens
		}
		if u.JSON.CacheReadInputTokens.Valid() {
			a.usage.cacheRead = u.CacheReadInputTokens
		}
		if u.JSON.OutputTokens.Valid() {
			a.usage.output = u.OutputTokens
		}
	case "message_stop":
		a.stopped = true
	}
	// ping never reaches here (the SDK skips it); unknown event types are
	// ignored, as the API's versioning policy asks.
	return nil
}

func (a *accumulator) messageStart(model string, u usage) {
	a.model = model
	a.usage = u
}

func (a *accumulator) newBlock(index int64, b *block) error {
	if _, dup := a.blocks[index]; dup {
		return &streamError{fmt.Sprintf("anthropic stream: content_block_start for block %d, which had started already", index)}
	}
	a.blocks[index] = b
	return nil
}

func (a *accumulator) startText(index int64, text string) error {
	if err := a.newBlock(index, &block{kind: blockText}); err != nil {
		return err
	}
	a.addText(text)
	return nil
}

func (a *accumulator) addText(s string) {
	if s == "" {
		return
	}
	a.text.WriteString(s)
	a.send(agent.Chunk{Kind: agent.ChunkText, Text: s})
}

func (a *accumulator) startToolUse(index int64, id, name, input string) error {
	c := &callState{index: len(a.calls), id: id, name: name, start: strings.TrimSpace(input)}
	if err := a.newBlock(index, &block{kind: blockToolUse, call: c}); err != nil {
		return err
	}
	if c.id == "" || a.ids[c.id] {
		// The loop and the toolkit need one distinct id per call.
		c.id = newCallID()
	}
	a.ids[c.id] = true
	a.calls = append(a.calls, c)
	a.send(agent.Chunk{Kind: agent.ChunkCall, Index: c.index, CallID: c.id, Name: c.name})
	return nil
}

func (a *accumulator) startThinking(index int64, t thinkingBlock) error {
	if err := a.newBlock(index, &block{kind: blockThinking, think: &t}); err != nil {
		return err
	}
	a.think = append(a.think, &t)
	return nil
}

func (a *accumulator) startOther(index int64) error {
	return a.newBlock(index, &block{kind: blockOther})
}

// delta takes a piece of a block: raw is the piece as the server wrote it
// (a JSON string; "" when unknown), s as the SDK decoded it.
func (a *accumulator) delta(index int64, typ, raw, s string) error {
	b := a.blocks[index]
	if b == nil {
		return &streamError{fmt.Sprintf("anthropic stream: %s for block %d, which never started", typ, index)}
	}
	if b.done {
		return &streamError{fmt.Sprintf("anthropic stream: %s for block %d, which had stopped", typ, index)}
	}
	switch typ {
	case "text_delta", "input_json_delta", "thinking_delta":
		if raw != "" || b.join.Held() {
			s = b.join.Piece(raw, s)
		}
	}
	switch typ {
	case "text_delta":
		switch b.kind {
		case blockText:
			a.addText(s)
		case blockToolUse, blockThinking:
			return &streamError{fmt.Sprintf("anthropic stream: text_delta for block %d, which is not text", index)}
		}
	case "input_json_delta":
		switch b.kind {
		case blockToolUse:
			a.addArgs(b.call, s)
		case blockText, blockThinking:
			return &streamError{fmt.Sprintf("anthropic stream: input_json_delta for block %d, which is not a tool_use", index)}
		}
	case "thinking_delta":
		if b.kind == blockThinking {
			b.think.Thinking += s
		}
	case "signature_delta":
		if b.kind == blockThinking {
			b.think.Signature += s
		}
	}
	return nil
}

// addArgs adds a piece of a call's arguments. Blank pieces before the
// first other one are held back (the API's first piece is often ""), so
// that arguments that turn out blank go out as "{}" alone and the pieces
// a call's ChunkArgs carry always add up to its final arguments.
func (a *accumulator) addArgs(c *callState, s string) {
	if s == "" {
		return
	}
	if !c.sent {
		c.pending += s
		if strings.TrimSpace(c.pending) == "" {
			return
		}
		s, c.pending = c.pending, ""
		c.sent = true
	}
	c.args.WriteString(s)
	a.send(agent.Chunk{Kind: agent.ChunkArgs, Index: c.index, Text: s})
}

// finish makes a call's arguments final: arguments that never came are
// those of content_block_start when it carried any, else {}; but those of
// the call a reply cut at the token limit was writing (cut) stay blank,
// so that the loop does not take it for a whole call without arguments.
func (a *accumulator) finish(c *callState, cut bool) {
	if c.done {
		return
	}
	c.done = true
	if c.sent {
		return
	}
	args := c.start
	if args == "" || args == "null" || args == "{}" {
		if cut {
			return // the model was cut before it wrote them
		}
		args = "{}"
	}
	c.args.WriteString(args)
	a.send(agent.Chunk{Kind: agent.ChunkArgs, Index: c.index, Text: args})
}

// end ends a block's text: what its last delta held back (half of a
// character) is all there is.
func (a *accumulator) end(b *block) {
	s := b.join.Flush()
	if s == "" {
		return
	}
	switch b.kind {
	case blockText:
		a.addText(s)
	case blockToolUse:
		a.addArgs(b.call, s)
	case blockThinking:
		b.think.Thinking += s
	}
}

func (a *accumulator) stop(index int64) error {
	b := a.blocks[index]
	if b == nil {
		return &streamError{fmt.Sprintf("anthropic stream: content_block_stop for block %d, which never started", index)}
	}
	if b.done {
		return &streamError{fmt.Sprintf("anthropic stream: content_block_stop for block %d, which had stopped", index)}
	}
	b.done = true
	a.end(b)
	return nil
}

// reply returns the turn once the stream has ended without an error. A
// stream that ended before the message said why it stopped (no
// message_stop and no stop_reason) was cut short: a retryable error.
func (a *accumulator) reply() (*agent.Reply, error) {
	if !a.stopped && a.reason == "" {
		return nil, &streamError{"anthropic stream: the stream ended before message_stop"}
	}
	for _, i := range slices.Sorted(maps.Keys(a.blocks)) {
		if b := a.blocks[i]; !b.done {
			a.end(b) // a block the stream never stopped
		}
	}
	r := &agent.Reply{Text: a.text.String(), Model: a.model, Usage: a.usage.agent()}
	r.Finish = finishReason(a.reason, len(a.calls) > 0)
	for i, c := range a.calls {
		a.finish(c, r.Finish == agent.FinishLength && i == len(a.calls)-1)
		r.Calls = append(r.Calls, toolkit.Call{ID: c.id, Name: c.name, Args: json.RawMessage(c.args.String())})
	}
	r.Extra = thinkingExtra(a.think)
	return r, nil
}

// replyFromMessage converts a whole (non-streamed) message.
func replyFromMessage(msg *anthropic.Message) *agent.Reply {
	r := &agent.Reply{Model: string(msg.Model)}
	u := msg.Usage
	r.Usage = usage{u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens}.agent()
	ids := map[string]bool{}
	var think []*thinkingBlock
	var text strings.Builder
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			id := b.ID
			if id == "" || ids[id] {
				id = newCallID()
			}
			ids[id] = true
			args := strings.TrimSpace(string(b.Input))
			if args == "" || args == "null" {
				args = "{}"
			}
			r.Calls = append(r.Calls, toolkit.Call{ID: id, Name: b.Name, Args: json.RawMessage(args)})
		case "thinking":
			think = append(think, &thinkingBlock{Type: b.Type, Thinking: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			think = append(think, &thinkingBlock{Type: b.Type, Data: b.Data})
		}
	}
	r.Text = text.String()
	r.Finish = finishReason(string(msg.StopReason), len(r.Calls) > 0)
	if n := len(msg.Content); r.Finish == agent.FinishLength && n > 0 && msg.Content[n-1].Type == "tool_use" {
		// Cut while the model wrote its last call: an empty input is one
		// it never began (as the stream's finish says), not {}.
		if c := &r.Calls[len(r.Calls)-1]; strings.Join(strings.Fields(string(c.Args)), "") == "{}" {
			c.Args = nil
		}
	}
	r.Extra = thinkingExtra(think)
	return r
}

// finishReason maps the API's stop_reason. An empty one (a proxy that
// does not say) is inferred from the calls.
func finishReason(reason string, calls bool) agent.Finish {
	switch reason {
	case "end_turn", "stop_sequence":
		return agent.FinishStop
	case "tool_use":
		return agent.FinishToolCalls
	case "max_tokens", "model_context_window_exceeded":
		return agent.FinishLength
	case "refusal":
		return agent.FinishFiltered
	case "":
		if calls {
			return agent.FinishToolCalls
		}
		return agent.FinishStop
	}
	return agent.Finish(reason)
}

// newCallID makes up a call id for a tool_use block that came without one
// (or with one used already in the reply).
func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}
