package openaimodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/agent/internal/jsonpiece"
)

// Responses is an [agent.Model] on the Responses API (POST /responses).
// It is safe for concurrent use.
// Every request carries the whole conversation (previous_response_id is
// not used), so a conversation can be stored and continued anywhere.
//
// Reasoning models return reasoning items with their tool calls, which
// the API wants back in the next request; the reply keeps its output items
// in Reply.Extra when it has any, and they are sent back as they came with
// the assistant message (unless its calls were changed since). The API
// stores responses by default (store: true), which lets it find the
// reasoning items again by id; with store false, also ask for their
// encrypted content:
//
//	openaimodel.WithRequestOptions(
//		option.WithJSONSet("store", false),
//		option.WithJSONSet("include", []string{"reasoning.encrypted_content"}))
type Responses struct {
	client openai.Client
	model  string
	cfg    config
}

// NewResponses returns a model that asks client's Responses API for
// model's turns. The SDK's own retries are off (the agent loop retries
// *agent.APIError values it finds retryable); options change the rest.
func NewResponses(client openai.Client, model string, opts ...Option) *Responses {
	return &Responses{client: client, model: model, cfg: newConfig(opts)}
}

// Name returns the model id the model was made with.
func (m *Responses) Name() string { return m.model }

// Generate asks for the next turn of req's conversation. Streaming (the
// default), it hands the reply's pieces to req.Send as they arrive.
func (m *Responses) Generate(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
	params, err := m.params(req)
	if err != nil {
		return nil, err
	}
	var res *http.Response
	if !m.cfg.stream {
		resp, err := m.client.Responses.New(ctx, params, m.cfg.requestOptions(option.WithResponseInto(&res))...)
		if err != nil {
			return nil, failure(ctx, err, res)
		}
		if err := errorBody200([]byte(resp.RawJSON())); err != nil {
			return nil, err
		}
		return wholeResponse(resp, nil)
	}
	stream := m.client.Responses.NewStreaming(ctx, params, m.cfg.requestOptions(option.WithResponseInto(&res))...)
	defer stream.Close()
	if stream.Err() == nil && isJSON(res) {
		// The server ignored "stream": one JSON answer instead of events.
		var resp responses.Response
		if err := readJSON(res, &resp); err != nil {
			return nil, failure(ctx, err, res)
		}
		return wholeResponse(&resp, req.Send)
	}
	st := newRespState(req.Send)
	for !st.ended && stream.Next() {
		if err := st.event(stream.Current()); err != nil {
			return nil, err
		}
	}
	if err := stream.Err(); err != nil {
		return nil, streamFailure(ctx, err, res)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("openai: %w", ctx.Err())
	}
	if st.final == nil {
		return nil, cutShort("no response.completed event")
	}
	return st.reply()
}

// wholeResponse reads a response that came whole.
func wholeResponse(resp *responses.Response, send func(agent.Chunk)) (*agent.Reply, error) {
	if resp == nil {
		return nil, malformed("empty response")
	}
	if resp.Status == "" && !resp.JSON.Output.Valid() {
		// Neither a status nor output items: not a response at all, and
		// not an empty answer either.
		return nil, malformed("the server's answer is not a response: %s", snippet(resp.RawJSON()))
	}
	st := newRespState(send)
	if err := st.end(*resp); err != nil {
		return nil, err
	}
	return st.reply()
}

// respState assembles a reply from the Responses API's events.
type respState struct {
	send     func(agent.Chunk)
	text     strings.Builder
	join     jsonpiece.Joiner // a character cut between two text deltas
	refused  bool
	calls    *callSet
	byItem   map[string]*callSlot // function calls by item id
	byOutput map[int64]*callSlot  // and by output index
	textSeen map[string]bool      // message items (by id, and by "#" output index) whose text came as deltas
	items    map[int64]json.RawMessage
	sawItems bool
	model    string
	final    *responses.Response
	ended    bool
}

func newRespState(send func(agent.Chunk)) *respState {
	if send == nil {
		send = func(agent.Chunk) {}
	}
	return &respState{
		send: send, calls: newCallSet(send),
		byItem: map[string]*callSlot{}, byOutput: map[int64]*callSlot{},
		textSeen: map[string]bool{}, items: map[int64]json.RawMessage{},
	}
}

// event takes one streamed event. Unknown events are ignored: the API adds
// kinds over time.
func (st *respState) event(ev responses.ResponseStreamEventUnion) error {
	switch ev.Type {
	case "response.created", "response.in_progress":
		if ev.Response.Model != "" {
			st.model = ev.Response.Model
		}
	case "response.output_item.added":
		st.sawItems = true
		st.item(ev.OutputIndex, ev.JSON.OutputIndex.Valid(), ev.Item, false)
	case "response.output_item.done":
		st.sawItems = true
		st.item(ev.OutputIndex, ev.JSON.OutputIndex.Valid(), ev.Item, true)
	case "response.output_text.delta", "response.refusal.delta":
		st.sawItems = true
		if ev.ItemID != "" {
			st.textSeen[ev.ItemID] = true
		}
		if ev.JSON.OutputIndex.Valid() {
			st.textSeen[indexKey(ev.OutputIndex)] = true
		}
		if ev.Type == "response.refusal.delta" {
			st.refused = true
		}
		st.addText(piece(&st.join, ev.JSON.Delta, ev.Delta))
	case "response.function_call_arguments.delta":
		st.sawItems = true
		c := st.slot(ev.ItemID, ev.OutputIndex, ev.JSON.OutputIndex.Valid())
		st.calls.addRaw(c, ev.JSON.Delta.Raw(), ev.Delta)
	case "response.function_call_arguments.done":
		st.sawItems = true
		c := st.slot(ev.ItemID, ev.OutputIndex, ev.JSON.OutputIndex.Valid())
		if ev.JSON.Arguments.Valid() {
			st.calls.finalArgs(c, ev.Arguments)
		}
	case "response.completed", "response.incomplete", "response.failed":
		resp := ev.Response
		if ev.Type == "response.failed" {
			resp.Status = responses.ResponseStatusFailed
		}
		return st.end(resp)
	case "error":
		st.ended = true
		raw := []byte(ev.RawJSON())
		return eventError(raw, errors.New("error event: "+snippet(string(raw))))
	}
	return nil
}

// slot finds the function call an event is about by its item id, else its
// output index, and opens one when the server skipped output_item.added.
func (st *respState) slot(itemID string, outIdx int64, hasIdx bool) *callSlot {
	if c := st.byItem[itemID]; itemID != "" && c != nil {
		return c
	}
	if c := st.byOutput[outIdx]; hasIdx && c != nil {
		if itemID != "" {
			st.byItem[itemID] = c
		}
		return c
	}
	c := st.calls.open()
	if itemID != "" {
		st.byItem[itemID] = c
	}
	if hasIdx {
		st.byOutput[outIdx] = c
	}
	return c
}

// item takes an output item as announced (done false) or finished.
func (st *respState) item(outIdx int64, hasIdx bool, it responses.ResponseOutputItemUnion, done bool) {
	if done && hasIdx {
		st.items[outIdx] = json.RawMessage(it.RawJSON())
	}
	switch it.Type {
	case "function_call":
		c := st.slot(it.ID, outIdx, hasIdx)
		if it.CallID != "" {
			st.calls.setWireID(c, it.CallID)
		}
		args := it.Arguments.OfString
		if done {
			st.calls.setName(c, it.Name)
			if it.JSON.Arguments.Valid() {
				st.calls.finalArgs(c, args)
			}
		} else {
			st.calls.addArgs(c, args)
			st.calls.setName(c, it.Name)
		}
	case "message":
		if !done || (it.ID != "" && st.textSeen[it.ID]) || (hasIdx && st.textSeen[indexKey(outIdx)]) {
			return // its text came as deltas
		}
		for _, part := range it.Content {
			switch part.Type {
			case "output_text":
				st.addText(st.join.Flush() + part.Text)
			case "refusal":
				st.refused = true
				st.addText(st.join.Flush() + part.Refusal)
			}
		}
	}
}

// indexKey keys the text seen by output index, for servers that send
// deltas without item ids.
func indexKey(outIdx int64) string { return "#" + strconv.FormatInt(outIdx, 10) }

func (st *respState) addText(s string) {
	if s != "" {
		st.text.WriteString(s)
		st.send(agent.Chunk{Kind: agent.ChunkText, Text: s})
	}
}

// end takes the final response: from response.completed (or .incomplete,
// .failed) when streaming, the whole answer otherwise. Its output items
// count only when no event brought any.
func (st *respState) end(resp responses.Response) error {
	st.ended = true
	if resp.Status == responses.ResponseStatusFailed {
		e := &agent.APIError{Provider: provider, Type: string(resp.Error.Code), Message: resp.Error.Message}
		if e.Message == "" {
			e.Message = "the response failed"
		}
		e.Err = errors.New("response.failed: " + e.Message)
		e.Retryable = retryableCode(e.Type)
		return e
	}
	st.final = &resp
	if resp.Model != "" {
		st.model = resp.Model
	}
	if !st.sawItems {
		for i, it := range resp.Output {
			st.item(int64(i), true, it, true)
		}
	}
	return nil
}

// replyExtra is what a reply keeps in Reply.Extra: the response's output
// items, when they hold reasoning the API wants back.
type replyExtra struct {
	Output []json.RawMessage `json:"openai_responses_output"`
}

func (st *respState) reply() (*agent.Reply, error) {
	resp := st.final
	cut := resp.Status == responses.ResponseStatusIncomplete && resp.IncompleteDetails.Reason == "max_output_tokens"
	calls, err := st.calls.result(cut)
	if err != nil {
		return nil, err
	}
	st.addText(st.join.Flush())
	reply := &agent.Reply{Text: st.text.String(), Calls: calls, Model: st.model}
	if resp.JSON.Usage.Valid() {
		reply.Usage = agent.Usage{InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens}
	}
	switch resp.Status {
	case responses.ResponseStatusIncomplete:
		switch r := resp.IncompleteDetails.Reason; r {
		case "max_output_tokens":
			reply.Finish = agent.FinishLength
		case "content_filter":
			reply.Finish = agent.FinishFiltered
		case "":
			reply.Finish = "incomplete"
		default:
			reply.Finish = agent.Finish(r)
		}
	case responses.ResponseStatusCompleted, "":
		switch {
		case len(calls) > 0:
			reply.Finish = agent.FinishToolCalls
		case st.refused:
			reply.Finish = agent.FinishFiltered
		default:
			reply.Finish = agent.FinishStop
		}
	default:
		reply.Finish = agent.Finish(resp.Status)
	}
	reply.Extra = st.extra()
	return reply, nil
}

// extra keeps the output items when one of them is reasoning, in output
// order: the final response's list when it has one, else the items the
// events finished.
func (st *respState) extra() json.RawMessage {
	var items []json.RawMessage
	if st.final != nil && len(st.final.Output) > 0 {
		for _, it := range st.final.Output {
			items = append(items, json.RawMessage(it.RawJSON()))
		}
	} else {
		keys := make([]int64, 0, len(st.items))
		for k := range st.items {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			items = append(items, st.items[k])
		}
	}
	reasoning := false
	for _, raw := range items {
		var it struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(raw, &it) == nil && it.Type == "reasoning" {
			reasoning = true
		}
	}
	if !reasoning {
		return nil
	}
	b, err := json.Marshal(replyExtra{Output: items})
	if err != nil {
		return nil
	}
	return b
}

// params builds the request: the system prompt as instructions, the
// conversation as input items.
func (m *Responses) params(req *agent.Request) (responses.ResponseNewParams, error) {
	var p responses.ResponseNewParams
	if req == nil {
		return p, errors.New("openaimodel: nil request")
	}
	if strings.TrimSpace(m.model) == "" {
		return p, errors.New("openaimodel: no model id given")
	}
	input, err := responsesInput(req)
	if err != nil {
		return p, err
	}
	p.Model = shared.ResponsesModel(m.model)
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
	if req.System != "" {
		p.Instructions = openai.String(req.System)
	}
	for _, d := range req.Tools {
		raw, err := functionJSON(d, true)
		if err != nil {
			return p, err
		}
		fn := param.Override[responses.FunctionToolParam](raw)
		p.Tools = append(p.Tools, responses.ToolUnionParam{OfFunction: &fn})
	}
	if len(p.Tools) > 0 && m.cfg.parallel != nil {
		p.ParallelToolCalls = openai.Bool(*m.cfg.parallel)
	}
	if m.cfg.temperature != nil {
		p.Temperature = openai.Float(*m.cfg.temperature)
	}
	if m.cfg.maxTokens > 0 {
		p.MaxOutputTokens = openai.Int(m.cfg.maxTokens)
	}
	return p, nil
}

// responsesInput maps the conversation onto input items: messages,
// function_call items for an assistant's calls, function_call_output
// items for tool results (which may hold images).
func responsesInput(req *agent.Request) (responses.ResponseInputParam, error) {
	out := make(responses.ResponseInputParam, 0, len(req.Messages)+4)
	for i, msg := range req.Messages {
		switch msg.Role {
		case agent.RoleUser:
			segs := segments(msg.Content)
			um := responses.EasyInputMessageParam{Role: responses.EasyInputMessageRoleUser, Type: responses.EasyInputMessageTypeMessage}
			if !hasImage(segs) {
				um.Content.OfString = openai.String(joinText(segs, nil))
			} else {
				for _, s := range segs {
					if s.image != "" {
						um.Content.OfInputItemContentList = append(um.Content.OfInputItemContentList, responses.ResponseInputContentUnionParam{
							OfInputImage: &responses.ResponseInputImageParam{ImageURL: openai.String(s.image), Detail: responses.ResponseInputImageDetailAuto}})
					} else {
						um.Content.OfInputItemContentList = append(um.Content.OfInputItemContentList, responses.ResponseInputContentUnionParam{
							OfInputText: &responses.ResponseInputTextParam{Text: s.text}})
					}
				}
			}
			out = append(out, responses.ResponseInputItemUnionParam{OfMessage: &um})
		case agent.RoleAssistant:
			if items, ok := replayItems(msg); ok {
				out = append(out, items...)
				continue
			}
			if text := msg.Text(); text != "" {
				out = append(out, responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
					Role: responses.EasyInputMessageRoleAssistant, Type: responses.EasyInputMessageTypeMessage,
					Content: responses.EasyInputMessageContentUnionParam{OfString: openai.String(text)},
				}})
			}
			for _, c := range msg.Calls {
				out = append(out, responses.ResponseInputItemUnionParam{OfFunctionCall: &responses.ResponseFunctionToolCallParam{
					CallID: wireID(c.ID, responsesIDLimit), Name: c.Name, Arguments: string(orEmptyObject(c.Args)),
				}})
			}
		case agent.RoleTool:
			if msg.CallID == "" {
				return nil, fmt.Errorf("openaimodel: message %d: tool result without a call id", i)
			}
			item := &responses.ResponseInputItemFunctionCallOutputParam{CallID: openai.String(wireID(msg.CallID, responsesIDLimit))}
			segs := toolSegments(msg)
			if !hasImage(segs) {
				item.Output.OfString = openai.String(joinText(segs, nil))
			} else {
				for _, s := range segs {
					if s.image != "" {
						item.Output.OfResponseFunctionCallOutputItemArray = append(item.Output.OfResponseFunctionCallOutputItemArray,
							responses.ResponseFunctionCallOutputItemUnionParam{OfInputImage: &responses.ResponseInputImageContentParam{
								ImageURL: openai.String(s.image), Detail: responses.ResponseInputImageContentDetailAuto}})
					} else {
						item.Output.OfResponseFunctionCallOutputItemArray = append(item.Output.OfResponseFunctionCallOutputItemArray,
							responses.ResponseFunctionCallOutputItemUnionParam{OfInputText: &responses.ResponseInputTextContentParam{Text: s.text}})
					}
				}
			}
			out = append(out, responses.ResponseInputItemUnionParam{OfFunctionCallOutput: item})
		default:
			return nil, fmt.Errorf("openaimodel: message %d: unknown role %q", i, msg.Role)
		}
	}
	return out, nil
}

// replayItems returns an assistant message's output items as the API sent
// them (reasoning included), when its Extra holds them and its calls are
// still the items' function calls, in order, by id and name. Otherwise the
// message is rebuilt from its text and calls, without reasoning: a
// reasoning item sent without the items that followed it is refused.
func replayItems(msg agent.Message) (responses.ResponseInputParam, bool) {
	if len(msg.Extra) == 0 {
		return nil, false
	}
	var extra replyExtra
	if json.Unmarshal(msg.Extra, &extra) != nil || len(extra.Output) == 0 {
		return nil, false
	}
	out := make(responses.ResponseInputParam, 0, len(extra.Output))
	n := 0
	for _, raw := range extra.Output {
		var it struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
			Name   string `json:"name"`
		}
		if json.Unmarshal(raw, &it) != nil {
			return nil, false
		}
		switch it.Type {
		case "reasoning":
			r := param.Override[responses.ResponseReasoningItemParam](raw)
			out = append(out, responses.ResponseInputItemUnionParam{OfReasoning: &r})
		case "message":
			m := param.Override[responses.ResponseOutputMessageParam](raw)
			out = append(out, responses.ResponseInputItemUnionParam{OfOutputMessage: &m})
		case "function_call":
			if n >= len(msg.Calls) || msg.Calls[n].ID != it.CallID || msg.Calls[n].Name != it.Name {
				return nil, false
			}
			n++
			f := param.Override[responses.ResponseFunctionToolCallParam](raw)
			out = append(out, responses.ResponseInputItemUnionParam{OfFunctionCall: &f})
		default:
			return nil, false
		}
	}
	if n != len(msg.Calls) {
		return nil, false
	}
	return out, true
}
