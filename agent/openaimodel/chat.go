package openaimodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/shared"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/agent/internal/jsonpiece"
)

// Chat is an [agent.Model] on the Chat Completions API
// (POST /chat/completions), the API that OpenAI-compatible servers speak.
// It is safe for concurrent use.
type Chat struct {
	client openai.Client
	model  string
	cfg    config
}

// NewChat returns a model that asks client's Chat Completions API for
// model's turns. The SDK's own retries are off (the agent loop retries
// *agent.APIError values it finds retryable); options change the rest.
//
//	client := openai.NewClient(option.WithBaseURL("http://localhost:11434/v1"), option.WithAPIKey("ollama"))
//	model := openaimodel.NewChat(client, "qwen3")
func NewChat(client openai.Client, model string, opts ...Option) *Chat {
	return &Chat{client: client, model: model, cfg: newConfig(opts)}
}

// Name returns the model id the model was made with.
func (m *Chat) Name() string { return m.model }

// Generate asks for the next turn of req's conversation. Streaming (the
// default), it hands the reply's pieces to req.Send as they arrive.
func (m *Chat) Generate(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
	params, err := m.params(req)
	if err != nil {
		return nil, err
	}
	var res *http.Response
	if !m.cfg.stream {
		resp, err := m.client.Chat.Completions.New(ctx, params, m.cfg.requestOptions(option.WithResponseInto(&res))...)
		if err != nil {
			return nil, failure(ctx, err, res)
		}
		if err := errorBody200([]byte(resp.RawJSON())); err != nil {
			return nil, err
		}
		return chatReply(resp, nil)
	}
	params.StreamOptions.IncludeUsage = openai.Bool(true)
	stream := m.client.Chat.Completions.NewStreaming(ctx, params, m.cfg.requestOptions(option.WithResponseInto(&res))...)
	defer stream.Close()
	if stream.Err() == nil && isJSON(res) {
		// The server ignored "stream": one JSON answer instead of events.
		var resp openai.ChatCompletion
		if err := readJSON(res, &resp); err != nil {
			return nil, failure(ctx, err, res)
		}
		return chatReply(&resp, req.Send)
	}

	cs := newChatStream(req.Send)
	for stream.Next() {
		if err := cs.chunk(stream.Current()); err != nil {
			return nil, err
		}
	}
	if err := stream.Err(); err != nil {
		return nil, streamFailure(ctx, err, res)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("openai: %w", ctx.Err())
	}
	if cs.finish == "" {
		return nil, cutShort("no finish_reason")
	}
	return cs.result()
}

// chatStream assembles a streamed reply from its chunks.
type chatStream struct {
	send    func(agent.Chunk)
	text    strings.Builder
	join    jsonpiece.Joiner // a character cut between two pieces of text
	refused bool
	finish  string
	reply   agent.Reply
	calls   chatCalls
}

func newChatStream(send func(agent.Chunk)) *chatStream {
	if send == nil {
		send = func(agent.Chunk) {}
	}
	return &chatStream{send: send, calls: chatCalls{set: newCallSet(send), byIndex: map[int64]*callSlot{}}}
}

// chunk takes one streamed chunk.
func (cs *chatStream) chunk(chunk openai.ChatCompletionChunk) error {
	if chunk.Model != "" {
		cs.reply.Model = chunk.Model
	}
	if chunk.JSON.Usage.Valid() {
		cs.reply.Usage = agent.Usage{InputTokens: chunk.Usage.PromptTokens, OutputTokens: chunk.Usage.CompletionTokens}
	}
	for _, ch := range chunk.Choices {
		if ch.Index != 0 {
			continue // only one choice is asked for
		}
		cs.addText(piece(&cs.join, ch.Delta.JSON.Content, ch.Delta.Content))
		if ch.Delta.Refusal != "" {
			cs.refused = true
		}
		cs.addText(piece(&cs.join, ch.Delta.JSON.Refusal, ch.Delta.Refusal))
		for _, tc := range ch.Delta.ToolCalls {
			if err := cs.calls.add(tc); err != nil {
				return err
			}
		}
		if ch.FinishReason != "" {
			cs.finish = ch.FinishReason
		}
	}
	return nil
}

func (cs *chatStream) addText(s string) {
	if s != "" {
		cs.text.WriteString(s)
		cs.send(agent.Chunk{Kind: agent.ChunkText, Text: s})
	}
}

// result returns the reply once the stream has ended with a finish_reason.
func (cs *chatStream) result() (*agent.Reply, error) {
	cs.addText(cs.join.Flush())
	reply := cs.reply
	reply.Text = cs.text.String()
	var err error
	if reply.Calls, err = cs.calls.set.result(cs.finish == "length"); err != nil {
		return nil, err
	}
	reply.Finish = chatFinish(cs.finish, len(reply.Calls), cs.refused)
	return &reply, nil
}

// chatCalls keys the calls of a streamed reply by the index the server
// gives them. Some servers send no index, or the same one for every call,
// each call whole in one delta; a delta that names another id or function
// than the call of its index (or, without index, any name once the last
// call has one) starts a new call, and so does one that names the same
// function again with arguments of its own after the call's arguments
// are a whole JSON object (two calls of one tool at one index: nothing
// can continue a whole object). The reply lists the calls by the server's
// index, the model's order, whatever order they began in.
type chatCalls struct {
	set     *callSet
	byIndex map[int64]*callSlot
	last    *callSlot
}

func (a *chatCalls) add(tc openai.ChatCompletionChunkChoiceDeltaToolCall) error {
	if tc.Type != "" && tc.Type != "function" {
		return malformed("tool call of type %q; only function tools are offered", tc.Type)
	}
	hasIndex := tc.JSON.Index.Valid()
	c := a.last
	if hasIndex {
		c = a.byIndex[tc.Index]
	}
	name := tc.Function.Name
	if c != nil {
		switch {
		case tc.ID != "" && c.wireID != "" && tc.ID != c.wireID,
			name != "" && c.name != "" && name != c.name,
			!hasIndex && name != "" && c.name != "",
			name != "" && c.name != "" && strings.TrimSpace(tc.Function.Arguments) != "" && c.wholeArgs():
			c = nil
		}
	}
	if c == nil {
		prev := a.last
		c = a.set.open()
		switch {
		case hasIndex:
			a.byIndex[tc.Index] = c
			c.order = tc.Index
		case prev != nil:
			c.order = prev.order // no index: it follows the call before it
		}
	}
	a.last = c
	if tc.ID != "" {
		a.set.setWireID(c, tc.ID)
	}
	a.set.setName(c, name)
	a.set.addRaw(c, tc.Function.JSON.Arguments.Raw(), tc.Function.Arguments)
	return nil
}

// piece returns the text of a streamed string field, through j: a
// character cut between two pieces comes whole. A field that is absent or
// null adds nothing and does not end the text.
func piece(j *jsonpiece.Joiner, f respjson.Field, text string) string {
	if raw := f.Raw(); raw != "" && raw != "null" {
		return j.Piece(raw, text)
	}
	return text
}

// chatReply reads the first choice of a whole completion, handing its
// pieces to send (when a streamed request got one JSON answer).
func chatReply(resp *openai.ChatCompletion, send func(agent.Chunk)) (*agent.Reply, error) {
	if resp == nil {
		return nil, malformed("empty response")
	}
	var choice *openai.ChatCompletionChoice
	for i := range resp.Choices {
		if resp.Choices[i].Index == 0 {
			choice = &resp.Choices[i]
			break
		}
	}
	if choice == nil {
		return nil, malformed("the response has no choices: %s", snippet(resp.RawJSON()))
	}
	reply := &agent.Reply{Model: resp.Model, Text: choice.Message.Content}
	if resp.JSON.Usage.Valid() {
		reply.Usage = agent.Usage{InputTokens: resp.Usage.PromptTokens, OutputTokens: resp.Usage.CompletionTokens}
	}
	refused := choice.Message.Refusal != ""
	if refused {
		reply.Text += choice.Message.Refusal
	}
	if send != nil && reply.Text != "" {
		send(agent.Chunk{Kind: agent.ChunkText, Text: reply.Text})
	}
	set := newCallSet(send)
	for _, tc := range choice.Message.ToolCalls {
		// Some compatible servers omit "type"; anything but a function
		// call is a kind of tool this model never offered.
		if tc.Type != "" && tc.Type != "function" {
			return nil, malformed("tool call %q has type %q; only function tools are offered", tc.ID, tc.Type)
		}
		c := set.open()
		set.setWireID(c, tc.ID)
		set.addArgs(c, tc.Function.Arguments)
		set.setName(c, tc.Function.Name)
	}
	var err error
	if reply.Calls, err = set.result(choice.FinishReason == "length"); err != nil {
		return nil, err
	}
	reply.Finish = chatFinish(choice.FinishReason, len(reply.Calls), refused)
	return reply, nil
}

// chatFinish maps a finish_reason. Compatible servers often say "stop"
// (or nothing) when the reply has tool calls: the calls decide.
func chatFinish(reason string, calls int, refused bool) agent.Finish {
	switch reason {
	case "stop", "", "tool_calls", "function_call":
		switch {
		case calls > 0:
			return agent.FinishToolCalls
		case refused:
			return agent.FinishFiltered
		}
		return agent.FinishStop
	case "length":
		return agent.FinishLength
	case "content_filter":
		return agent.FinishFiltered
	}
	return agent.Finish(reason)
}

// params builds the request: the system prompt first, then the messages.
func (m *Chat) params(req *agent.Request) (openai.ChatCompletionNewParams, error) {
	var p openai.ChatCompletionNewParams
	if req == nil {
		return p, errors.New("openaimodel: nil request")
	}
	if strings.TrimSpace(m.model) == "" {
		return p, errors.New("openaimodel: no model id given")
	}
	msgs, err := chatMessages(req)
	if err != nil {
		return p, err
	}
	p.Model = shared.ChatModel(m.model)
	p.Messages = msgs
	for _, d := range req.Tools {
		raw, err := functionJSON(d, false)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(param.Override[shared.FunctionDefinitionParam](raw)))
	}
	if len(p.Tools) > 0 && m.cfg.parallel != nil {
		p.ParallelToolCalls = openai.Bool(*m.cfg.parallel)
	}
	if m.cfg.temperature != nil {
		p.Temperature = openai.Float(*m.cfg.temperature)
	}
	if m.cfg.maxTokens > 0 {
		p.MaxCompletionTokens = openai.Int(m.cfg.maxTokens)
	}
	return p, nil
}

// chatMessages maps the conversation onto chat messages. A tool message
// takes only text, so the images of tool results travel in one user
// message after the tool messages of the turn (the API wants the tool
// messages right after the assistant message that made the calls), and
// each tool message says where its images went.
func chatMessages(req *agent.Request) ([]openai.ChatCompletionMessageParamUnion, error) {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(req.Messages)+2)
	if req.System != "" {
		out = append(out, openai.SystemMessage(req.System))
	}
	var images []openai.ChatCompletionContentPartUnionParam // of the tool messages so far
	flush := func() {
		if len(images) > 0 {
			parts := append([]openai.ChatCompletionContentPartUnionParam{openai.TextContentPart(
				"The images of the tool results above (a tool message cannot hold images):")}, images...)
			out = append(out, openai.UserMessage(parts))
			images = nil
		}
	}
	for i, msg := range req.Messages {
		switch msg.Role {
		case agent.RoleUser:
			flush()
			segs := segments(msg.Content)
			if !hasImage(segs) {
				out = append(out, openai.UserMessage(joinText(segs, nil)))
				continue
			}
			parts := make([]openai.ChatCompletionContentPartUnionParam, 0, len(segs))
			for _, s := range segs {
				if s.image != "" {
					parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: s.image}))
				} else {
					parts = append(parts, openai.TextContentPart(s.text))
				}
			}
			out = append(out, openai.UserMessage(parts))
		case agent.RoleAssistant:
			flush()
			var a openai.ChatCompletionAssistantMessageParam
			if text := msg.Text(); text != "" || len(msg.Calls) == 0 {
				a.Content.OfString = openai.String(text)
			}
			for _, c := range msg.Calls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID: wireID(c.ID, chatIDLimit),
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
							Name:      c.Name,
							Arguments: string(orEmptyObject(c.Args)),
						},
					},
				})
			}
			out = append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case agent.RoleTool:
			if msg.CallID == "" {
				return nil, fmt.Errorf("openaimodel: message %d: tool result without a call id", i)
			}
			segs := toolSegments(msg)
			if hasImage(segs) {
				images = append(images, openai.TextContentPart(fmt.Sprintf("Result of call %s (%s):", wireID(msg.CallID, chatIDLimit), msg.Tool)))
				for _, s := range segs {
					if s.image != "" {
						images = append(images, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: s.image}))
					}
				}
			}
			text := joinText(segs, func(n int) string {
				return fmt.Sprintf("[image %d: in the user message after the tool results]", n)
			})
			out = append(out, openai.ToolMessage(text, wireID(msg.CallID, chatIDLimit)))
		default:
			return nil, fmt.Errorf("openaimodel: message %d: unknown role %q", i, msg.Role)
		}
	}
	flush()
	return out, nil
}

// isJSON reports whether a successful response is one JSON document
// rather than an event stream.
func isJSON(res *http.Response) bool {
	if res == nil || res.StatusCode >= 400 {
		return false
	}
	mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	return mt == "application/json"
}

// errorBody200 returns the error a 2xx body holds instead of an answer
// ({"error":{...}}, as some servers send), or nil.
func errorBody200(b []byte) error {
	var failed struct {
		Error  json.RawMessage `json:"error"`
		Status string          `json:"status"`
	}
	if json.Unmarshal(b, &failed) == nil && len(failed.Error) > 0 && string(failed.Error) != "null" && failed.Status == "" {
		// A failed Response has a status: its error is read with it.
		return eventError(b, errors.New("error body: "+snippet(string(b))))
	}
	return nil
}

// maxJSONBody bounds a whole JSON answer read in place of a stream.
const maxJSONBody = 64 << 20

func readJSON(res *http.Response, v any) error {
	b, err := io.ReadAll(io.LimitReader(res.Body, maxJSONBody))
	if err != nil {
		return err
	}
	if err := errorBody200(b); err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return malformed("the server answered a streamed request with JSON that is not a response: %v", err)
	}
	return nil
}
