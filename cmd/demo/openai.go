package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/toolkit"
)

// openAIConfig says which OpenAI-compatible server and model to use.
type openAIConfig struct {
	// Model is the model id, for example "gpt-4.1-mini". Required.
	Model string
	// BaseURL is the API root, for example "http://localhost:11434/v1" for
	// a local server. Empty means the SDK's default (OPENAI_BASE_URL, else
	// https://api.openai.com/v1).
	BaseURL string
	// APIKey is sent as a bearer token. Required: servers that ignore it
	// still need some value.
	APIKey string
	// HTTPClient carries the requests; nil means a client of the model's
	// own, released by Close.
	HTTPClient *http.Client
}

// openAIModel is the demo's [Model] backed by the Chat Completions API,
// through the official SDK. Any server that speaks that API works (OpenAI,
// Azure-style proxies, Ollama, vLLM, llama.cpp).
//
// It does not retry by itself: the SDK already retries connection errors,
// 408, 409, 429 and 5xx twice with backoff (honouring Retry-After), and a
// second layer would multiply the waits. The caller's context bounds all of
// it.
type openAIModel struct {
	client openai.Client
	model  string
	name   string
	http   *http.Client
}

// newOpenAIModel returns a model for cfg. The SDK still reads its other
// environment variables (OPENAI_ORG_ID, OPENAI_PROJECT_ID, ...), as any
// program using it would; the fields of cfg win over them.
func newOpenAIModel(cfg openAIConfig) (*openAIModel, error) {
	switch {
	case strings.TrimSpace(cfg.Model) == "":
		return nil, errors.New("openai: no model given")
	case strings.TrimSpace(cfg.APIKey) == "":
		return nil, errors.New("openai: no API key given")
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = defaultOpenAIHTTPClient()
	}
	opts := []option.RequestOption{option.WithAPIKey(cfg.APIKey), option.WithHTTPClient(hc)}
	name := cfg.Model
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("openai: base URL %q is not an absolute URL", cfg.BaseURL)
		}
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
		name += " at " + u.Host
	}
	return &openAIModel{client: openai.NewClient(opts...), model: cfg.Model, name: name, http: hc}, nil
}

// defaultOpenAIHTTPClient is what the SDK would use (a fresh transport with
// a bound on waiting for response headers), but owned by the model so that
// Close can release its idle connections.
func defaultOpenAIHTTPClient() *http.Client {
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t = t.Clone()
		t.ResponseHeaderTimeout = 10 * time.Minute
		return &http.Client{Transport: t}
	}
	return &http.Client{Transport: http.DefaultTransport}
}

// openAIFromEnv resolves the model, base URL and API key: flags first, then
// OPENAI_MODEL, OPENAI_BASE_URL and OPENAI_API_KEY. Without a model or a key
// it reports ok false and why, in words the demo prints before falling back
// to its scripted model.
func openAIFromEnv(model, baseURL, apiKey string) (cfg openAIConfig, ok bool, why string) {
	pick := func(flag, env string) string {
		if v := strings.TrimSpace(flag); v != "" {
			return v
		}
		return strings.TrimSpace(os.Getenv(env))
	}
	cfg = openAIConfig{
		Model:   pick(model, "OPENAI_MODEL"),
		BaseURL: pick(baseURL, "OPENAI_BASE_URL"),
		APIKey:  pick(apiKey, "OPENAI_API_KEY"),
	}
	switch {
	case cfg.APIKey == "" && cfg.Model == "":
		return cfg, false, "no API key and no model (set --api-key or OPENAI_API_KEY, and --model or OPENAI_MODEL)"
	case cfg.APIKey == "":
		return cfg, false, "no API key (set --api-key or OPENAI_API_KEY)"
	case cfg.Model == "":
		return cfg, false, "no model (set --model or OPENAI_MODEL)"
	}
	return cfg, true, ""
}

// Name returns the model id, with the server's host when it is not the
// default one.
func (m *openAIModel) Name() string { return m.name }

// Close releases the idle connections of the model's HTTP client.
func (m *openAIModel) Close() error {
	m.http.CloseIdleConnections()
	return nil
}

// Next sends the conversation and the tools to the Chat Completions API and
// returns the model's answer: text, tool calls or both.
func (m *openAIModel) Next(ctx context.Context, conv []Message, tools []toolkit.Definition) (Turn, error) {
	msgs, err := openAIMessages(conv)
	if err != nil {
		return Turn{}, err
	}
	defs, err := openAITools(tools)
	if err != nil {
		return Turn{}, err
	}
	params := openai.ChatCompletionNewParams{Model: openai.ChatModel(m.model), Messages: msgs, Tools: defs}
	var res *http.Response // kept even on failure, to describe errors the SDK cannot decode
	resp, err := m.client.Chat.Completions.New(ctx, params, option.WithResponseInto(&res))
	if err != nil {
		return Turn{}, m.failure(ctx, err, res)
	}
	return openAITurn(resp)
}

// failure turns an SDK error into one that names the status and the API's
// own message. The SDK's error text alone gives only the status, on purpose
// (its fields may hold secrets); the message is what tells a person whether
// the key, the model name or the server is wrong.
func (m *openAIModel) failure(ctx context.Context, err error, res *http.Response) error {
	if ctx.Err() != nil {
		return fmt.Errorf("openai %s: %w", m.model, err)
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		msg := apiErr.Message
		if apiErr.Code != "" {
			msg += " (" + apiErr.Code + ")"
		}
		if apiErr.Message == "" {
			msg = bodySnippet(apiErr.Response)
		}
		return fmt.Errorf("openai %s: %w: %s", m.model, err, msg)
	}
	if res != nil && res.StatusCode >= 400 {
		// The error body was not the API's JSON (a proxy's HTML page, say).
		return fmt.Errorf("openai %s: HTTP %s: %s (%w)", m.model, res.Status, bodySnippet(res), err)
	}
	return fmt.Errorf("openai %s: %w", m.model, err)
}

// bodySnippet returns the start of an error response's body, on one line.
// The SDK leaves the body readable after it failed.
func bodySnippet(res *http.Response) string {
	if res == nil || res.Body == nil {
		return "no details"
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 300))
	s := strings.Join(strings.Fields(string(b)), " ")
	if s == "" {
		return "empty response body"
	}
	return s
}

// openAIMessages maps the demo's conversation onto chat messages. An
// assistant message keeps its tool calls and each tool message its call id:
// the API refuses a tool message whose call it cannot find in the assistant
// message before it.
func openAIMessages(conv []Message) ([]openai.ChatCompletionMessageParamUnion, error) {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(conv))
	for i, msg := range conv {
		switch msg.Role {
		case RoleSystem:
			out = append(out, openai.SystemMessage(msg.Text))
		case RoleUser:
			out = append(out, openai.UserMessage(msg.Text))
		case RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if msg.Text != "" || len(msg.Calls) == 0 {
				a.Content.OfString = openai.String(msg.Text)
			}
			for _, c := range msg.Calls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID: c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
							Name:      c.Name,
							Arguments: string(orEmptyObject(c.Args)),
						},
					},
				})
			}
			out = append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case RoleTool:
			if msg.CallID == "" {
				return nil, fmt.Errorf("openai: message %d: tool result without a call id", i)
			}
			out = append(out, openai.ToolMessage(msg.Text, msg.CallID))
		default:
			return nil, fmt.Errorf("openai: message %d: unknown role %q", i, msg.Role)
		}
	}
	return out, nil
}

// openAITools turns tool definitions into function tools. The SDK wants the
// schema as a map; its values stay json.RawMessage, which the SDK writes
// verbatim, so the schema reaches the API byte for byte as the toolkit wrote
// it. (Decoding into any would turn large integers into floats, and the SDK
// writes a json.Number as a string.)
func openAITools(defs []toolkit.Definition) ([]openai.ChatCompletionToolUnionParam, error) {
	if len(defs) == 0 {
		return nil, nil // the API refuses an empty "tools" array
	}
	out := make([]openai.ChatCompletionToolUnionParam, 0, len(defs))
	for _, d := range defs {
		fn := openai.FunctionDefinitionParam{Name: d.Name}
		if d.Description != "" {
			fn.Description = openai.String(d.Description)
		}
		if len(bytes.TrimSpace(d.Parameters)) > 0 {
			var props map[string]json.RawMessage
			if err := json.Unmarshal(d.Parameters, &props); err != nil {
				return nil, fmt.Errorf("openai: tool %q: parameters are not a JSON object: %w", d.Name, err)
			}
			if len(props) > 0 {
				fn.Parameters = make(openai.FunctionParameters, len(props))
				for k, v := range props {
					fn.Parameters[k] = v
				}
			}
		}
		out = append(out, openai.ChatCompletionFunctionTool(fn))
	}
	return out, nil
}

// openAITurn reads the first choice of a completion. Arguments are passed on
// as the model wrote them, even when they are not valid JSON: the toolkit
// checks them and answers the model with what is wrong, which is how it
// learns to fix them. Only empty arguments become {}.
func openAITurn(resp *openai.ChatCompletion) (Turn, error) {
	if resp == nil || len(resp.Choices) == 0 {
		return Turn{}, errors.New("openai: the response has no choices")
	}
	choice := resp.Choices[0]
	msg := choice.Message
	turn := Turn{Text: msg.Content}
	if turn.Text == "" && msg.Refusal != "" {
		turn.Text = msg.Refusal
	}
	switch choice.FinishReason {
	case "length", "content_filter":
		turn.Note = "the model stopped early: " + choice.FinishReason
	}
	for i, tc := range msg.ToolCalls {
		// Some compatible servers omit "type"; anything but a function call
		// is a tool kind this model never offered.
		if tc.Type != "" && tc.Type != "function" {
			return Turn{}, fmt.Errorf("openai: tool call %d (%s) has type %q; only function tools are offered", i, tc.ID, tc.Type)
		}
		id := tc.ID
		if id == "" {
			// The id must be the same in the assistant message and in the
			// tool result; the toolkit would make up a different one.
			id = "call_" + randomID()
		}
		turn.Calls = append(turn.Calls, toolkit.Call{
			ID:   id,
			Name: tc.Function.Name,
			Args: orEmptyObject(json.RawMessage(tc.Function.Arguments)),
		})
	}
	return turn, nil
}

// orEmptyObject returns args, or {} when they are blank: a tool without
// parameters is often called with "" and the API wants a JSON string back.
func orEmptyObject(args json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(args)) == 0 {
		return json.RawMessage("{}")
	}
	return args
}

func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Role is who a message of the conversation is from, as chat APIs name
// them.
type Role string

// The roles of a chat conversation.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one chat message, as openAIMessages maps it.
type Message struct {
	Role   Role
	Text   string
	Calls  []toolkit.Call
	CallID string
}

// Generate implements agent.Model with Next: the loop's conversation as
// chat messages (text only), the reply without streaming.
func (m *openAIModel) Generate(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
	conv := make([]Message, 0, len(req.Messages)+1)
	if req.System != "" {
		conv = append(conv, Message{Role: RoleSystem, Text: req.System})
	}
	for _, msg := range req.Messages {
		conv = append(conv, Message{Role: Role(msg.Role), Text: msg.Text(), Calls: msg.Calls, CallID: msg.CallID})
	}
	t, err := m.Next(ctx, conv, req.Tools)
	if err != nil {
		var api *openai.Error
		if errors.As(err, &api) {
			return nil, &agent.APIError{Provider: "openai", StatusCode: api.StatusCode, Message: err.Error(), Retryable: agent.RetryableStatus(api.StatusCode), Err: err}
		}
		return nil, err
	}
	return &agent.Reply{Text: t.Text, Calls: t.Calls}, nil
}
