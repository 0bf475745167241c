package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// sseServer answers each POST to path with the next of its event streams
// (Server-Sent Events, as the provider sends them) and keeps the request
// bodies.
type sseServer struct {
	srv     *httptest.Server
	path    string
	mu      sync.Mutex
	bodies  [][]byte
	streams []string
}

func newSSEServer(t *testing.T, path string, streams ...string) *sseServer {
	t.Helper()
	s := &sseServer{path: path, streams: streams}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		n := len(s.bodies)
		s.bodies = append(s.bodies, body)
		s.mu.Unlock()
		if r.Method != http.MethodPost || r.URL.Path != s.path || n >= len(s.streams) {
			http.Error(w, `{"error":{"type":"invalid_request_error","message":"unexpected `+r.Method+" "+r.URL.Path+`"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, frame := range strings.Split(strings.TrimSpace(s.streams[n]), "\n\n") {
			io.WriteString(w, frame+"\n\n")
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sseServer) requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.bodies...)
}

// Chat Completions chunks: a call whose arguments arrive in two pieces,
// then an answer in two pieces.
const openAIToolStream = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"count_lines","arguments":""}}]},"finish_reason":null}]}

data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"dir\":"}}]},"finish_reason":null}]}

data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"cmd\"}"}}]},"finish_reason":null}]}

data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: [DONE]`

const openAIAnswerStream = `data: {"id":"c2","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"The cmd folder "},"finish_reason":null}]}

data: {"id":"c2","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"is mostly Go."},"finish_reason":"stop"}]}

data: [DONE]`

// Messages API events: the same two turns.
const anthropicToolStream = `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_a","name":"count_lines","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"dir\":"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"cmd\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":5}}

event: message_stop
data: {"type":"message_stop"}`

const anthropicAnswerStream = `event: message_start
data: {"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":30,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"The cmd folder "}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"is mostly Go."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":6}}

event: message_stop
data: {"type":"message_stop"}`

// TestDemoWithProviders runs the demo on each provider's adapter against
// a local server that streams the provider's wire format: the model asks
// for a tool, the result goes back under the call's id in the provider's
// shape, and the streamed answer ends the run.
func TestDemoWithProviders(t *testing.T) {
	for _, tc := range []struct {
		provider, api, path string
		streams             []string
		base                func(url string) string
		resultSent          func(t *testing.T, body []byte) string // the tool result the second request carries
	}{
		{"openai", "chat", "/v1/chat/completions", []string{openAIToolStream, openAIAnswerStream}, func(u string) string { return u + "/v1" }, openAIToolResult},
		{"anthropic", "", "/v1/messages", []string{anthropicToolStream, anthropicAnswerStream}, func(u string) string { return u }, anthropicToolResult},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			srv := newSSEServer(t, tc.path, tc.streams...)
			var out, errOut bytes.Buffer
			args := []string{"-dir", "../..", "-listen", "", "-nats-listen", "", "-speed", "0", "-once",
				"-provider", tc.provider, "-model", "m", "-base-url", tc.base(srv.srv.URL), "-api-key", "k"}
			if err := run(context.Background(), args, &out, &errOut); err != nil {
				t.Fatalf("demo failed: %v\n%s\n%s", err, out.String(), errOut.String())
			}
			s := out.String()
			id := map[string]string{"openai": "call_a", "anthropic": "toolu_a"}[tc.provider]
			for _, want := range []string{"model: m at 127.0.0.1", "(" + tc.provider + ", a real model", "[" + id + "] count_lines -> success",
				"model: The cmd folder is mostly Go.", "=== Summary: 2 turns, 1 calls"} {
				if !strings.Contains(s, want) {
					t.Errorf("output lacks %q:\n%s", want, s)
				}
			}
			reqs := srv.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			var first struct {
				Stream bool `json:"stream"`
			}
			if err := json.Unmarshal(reqs[0], &first); err != nil || !first.Stream {
				t.Errorf("the first request did not ask for a stream: %s", reqs[0])
			}
			if got := tc.resultSent(t, reqs[1]); !strings.HasPrefix(got, id+`: [{"language":"Go"`) {
				t.Errorf("tool result sent back: %q", got)
			}
		})
	}
}

func openAIToolResult(t *testing.T, body []byte) string {
	var req struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    any    `json:"content"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	for _, m := range req.Messages {
		if m.Role == "tool" {
			s, _ := m.Content.(string)
			return m.ToolCallID + ": " + s
		}
	}
	return ""
}

func anthropicToolResult(t *testing.T, body []byte) string {
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string `json:"type"`
				ToolUseID string `json:"tool_use_id"`
				Content   []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	for _, m := range req.Messages {
		for _, b := range m.Content {
			if b.Type == "tool_result" && len(b.Content) > 0 {
				return b.ToolUseID + ": " + b.Content[0].Text
			}
		}
	}
	return ""
}

// TestModelFromEnv: flags win over the environment, each provider reads
// its own variables, and a missing model or key is explained.
func TestModelFromEnv(t *testing.T) {
	t.Setenv("OPENAI_MODEL", "o-model")
	t.Setenv("OPENAI_BASE_URL", "http://o.example/v1")
	t.Setenv("OPENAI_API_KEY", "o-key")
	t.Setenv("ANTHROPIC_MODEL", "a-model")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	t.Setenv("ANTHROPIC_API_KEY", "a-key")

	cfg, ok, why := modelFromEnv("openai", "", "", "")
	if want := (modelConfig{Provider: "openai", Model: "o-model", BaseURL: "http://o.example/v1", APIKey: "o-key"}); !ok || why != "" || cfg != want {
		t.Errorf("openai from env: %+v, %v, %q", cfg, ok, why)
	}
	cfg, ok, _ = modelFromEnv("anthropic", "", "", "")
	if want := (modelConfig{Provider: "anthropic", Model: "a-model", APIKey: "a-key"}); !ok || cfg != want {
		t.Errorf("anthropic from env: %+v, %v", cfg, ok)
	}
	cfg, ok, _ = modelFromEnv("anthropic", "f-model", "http://f.example", "f-key")
	if want := (modelConfig{Provider: "anthropic", Model: "f-model", BaseURL: "http://f.example", APIKey: "f-key"}); !ok || cfg != want {
		t.Errorf("flags: %+v, %v", cfg, ok)
	}
	t.Setenv("ANTHROPIC_API_KEY", "")
	if _, ok, why := modelFromEnv("anthropic", "", "", ""); ok || !strings.Contains(why, "no API key (set -api-key or ANTHROPIC_API_KEY)") {
		t.Errorf("no key: %v, %q", ok, why)
	}
	t.Setenv("OPENAI_MODEL", "")
	if _, ok, why := modelFromEnv("openai", "", "", "k"); ok || !strings.Contains(why, "no model (set -model or OPENAI_MODEL)") {
		t.Errorf("no model: %v, %q", ok, why)
	}
}

// TestDemoProviderFlags: a provider named outright must be configured,
// and -provider and -api take known values only.
func TestDemoProviderFlags(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_MODEL", "")
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"-provider", "anthropic", "-listen", "", "-nats-listen", "", "-once"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "-provider anthropic: no API key and no model (set -api-key or ANTHROPIC_API_KEY") {
		t.Errorf("anthropic without a key: %v", err)
	}
	for _, args := range [][]string{{"-provider", "gemini"}, {"-api", "assistants"}, {"-provider", "anthropic", "-api", "responses"}} {
		if _, err := parseFlags(args, nil, io.Discard); err == nil {
			t.Errorf("%q: no error", args)
		} else if _, usage := err.(*usageError); !usage {
			t.Errorf("%q: %v is not a usage error", args, err)
		}
	}
	cfg, err := parseFlags([]string{"-provider", "scripted", "-model", "x"}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if m, _, err := chooseModel(cfg); err != nil || modelName(m) != "scripted" {
		t.Errorf("-provider scripted: %v, %v", m, err)
	}
}
