package openaimodel

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/toolstream/toolstream/agent"
)

// apis are the two adapters with and without streaming, for the tests that
// hold for all four.
func apis() []struct {
	name string
	make func(openai.Client, ...Option) agent.Model
} {
	chat := func(c openai.Client, o ...Option) agent.Model { return NewChat(c, "gpt-test", o...) }
	resp := func(c openai.Client, o ...Option) agent.Model { return NewResponses(c, "gpt-test", o...) }
	return []struct {
		name string
		make func(openai.Client, ...Option) agent.Model
	}{
		{"chat/stream", chat},
		{"chat/whole", func(c openai.Client, o ...Option) agent.Model { return chat(c, append(o, WithStreaming(false))...) }},
		{"responses/stream", resp},
		{"responses/whole", func(c openai.Client, o ...Option) agent.Model { return resp(c, append(o, WithStreaming(false))...) }},
	}
}

// TestHTTPErrors checks that every failed request becomes an
// *agent.APIError with the status, the API's type and message, the wait
// the server asked for and whether to retry, after exactly one request
// (the SDK's retries are off: the loop owns them).
func TestHTTPErrors(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		header     map[string]string
		body       string
		typ        string
		message    string
		retryAfter time.Duration
		retryable  bool
	}{
		{"429 Retry-After", 429, map[string]string{"Retry-After": "7"},
			`{"error":{"message":"Rate limit reached for gpt-test.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			"rate_limit_exceeded", "Rate limit reached for gpt-test.", 7 * time.Second, true},
		{"429 retry-after-ms", 429, map[string]string{"Retry-After": "2", "Retry-After-Ms": "1500"},
			`{"error":{"message":"Slow down.","type":"tokens","code":"rate_limit_exceeded"}}`,
			"rate_limit_exceeded", "Slow down.", 1500 * time.Millisecond, true},
		{"429 quota", 429, nil,
			`{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","code":"insufficient_quota"}}`,
			"insufficient_quota", "You exceeded your current quota.", 0, false},
		{"500", 500, nil, `{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`,
			"server_error", "The server had an error while processing your request.", 0, true},
		{"529", 529, nil, `{"error":{"message":"Overloaded","type":"overloaded_error"}}`, "overloaded_error", "Overloaded", 0, true},
		{"400", 400, nil, `{"error":{"message":"Invalid schema for function 'x'.","type":"invalid_request_error","param":"tools[0]","code":null}}`,
			"invalid_request_error", "Invalid schema for function 'x'.", 0, false},
		{"401", 401, nil, `{"error":{"message":"Incorrect API key provided: sk-te**st.","type":"invalid_request_error","code":"invalid_api_key"}}`,
			"invalid_api_key", "Incorrect API key provided: sk-te**st.", 0, false},
		{"502 not JSON", 502, map[string]string{"Content-Type": "text/html"}, "<html>\n<h1>502 Bad Gateway</h1>\n</html>",
			"", "<html> <h1>502 Bad Gateway</h1> </html>", 0, true},
		{"404 Ollama", 404, nil, `{"error":"model \"qwen9\" not found, try pulling it first"}`,
			"", `model "qwen9" not found, try pulling it first`, 0, false},
		{"400 vLLM", 400, nil, `{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}`,
			"BadRequestError", "This model's maximum context length is 4096 tokens.", 0, false},
		{"422 detail", 422, nil, `{"detail":"Field required: messages"}`, "", "Field required: messages", 0, false},
		{"503 empty", 503, map[string]string{"Content-Type": "text/plain"}, "", "", "empty response body", 0, true},
	}
	for _, api := range apis() {
		for _, tt := range tests {
			t.Run(api.name+"/"+tt.name, func(t *testing.T) {
				f := newServer(t, reply(tt.status, tt.header, tt.body))
				got, err := api.make(f.client()).Generate(t.Context(), &agent.Request{Messages: userText("go")})
				var e *agent.APIError
				if !errors.As(err, &e) || got != nil {
					t.Fatalf("reply %+v, err %v (%T)", got, err, err)
				}
				if e.Provider != "openai" || e.StatusCode != tt.status || e.Type != tt.typ || e.Message != tt.message ||
					e.RetryAfter != tt.retryAfter || e.Retryable != tt.retryable {
					t.Errorf("error:\n got %+v\nwant status %d type %q message %q retry after %v retryable %v",
						e, tt.status, tt.typ, tt.message, tt.retryAfter, tt.retryable)
				}
				if tt.typ != "" {
					var sdk *openai.Error
					if !errors.As(err, &sdk) || sdk.StatusCode != tt.status {
						t.Errorf("errors.As(*openai.Error) = %v", sdk)
					}
				}
				if s := err.Error(); !strings.Contains(s, tt.message) || !strings.Contains(s, "HTTP ") {
					t.Errorf("Error() = %q names neither the status nor the message", s)
				}
				if n := len(f.requests()); n != 1 {
					t.Errorf("%d requests, want 1", n)
				}
			})
		}
	}
}

// TestSDKRetriesBack checks that WithRequestOptions comes after the
// adapter's own options: a user who wants the SDK to retry can say so.
func TestSDKRetriesBack(t *testing.T) {
	f := newServer(t, reply(503, map[string]string{"Retry-After-Ms": "1"}, `{"error":{"message":"busy"}}`),
		completion("stop", `{"role":"assistant","content":"ok"}`))
	m := NewChat(f.client(), "m", WithStreaming(false), WithRequestOptions(option.WithMaxRetries(1)))
	got, err := m.Generate(t.Context(), &agent.Request{Messages: userText("go")})
	if err != nil || got.Text != "ok" {
		t.Fatalf("reply %+v, err %v", got, err)
	}
	if n := len(f.requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

// TestUnreachable checks that a server that cannot be reached is a
// retryable *agent.APIError without a status.
func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(nil)
	url := srv.URL
	srv.Close()
	client := openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey("k"))
	for _, api := range apis() {
		_, err := api.make(client).Generate(t.Context(), &agent.Request{Messages: userText("go")})
		var e *agent.APIError
		if !errors.As(err, &e) || e.StatusCode != 0 || !e.Retryable || e.Err == nil {
			t.Errorf("%s: err %v (%+v), want a retryable *agent.APIError", api.name, err, e)
		}
	}
}
