package anthropicmodel_test

import (
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/agent/anthropicmodel"
)

// HTTP failures, streaming or not: the status, the API's type and message,
// the wait the headers ask for, whether to retry, the SDK's error kept; and
// the SDK never retries on its own (one request).
func TestHTTPErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    int
		typ       string
		header    map[string]string
		retryable bool
		after     time.Duration
	}{
		{"429 retry-after", 429, "rate_limit_error", map[string]string{"Retry-After": "7"}, true, 7 * time.Second},
		{"429 retry-after-ms", 429, "rate_limit_error", map[string]string{"Retry-After": "7", "Retry-After-Ms": "1500"}, true, 1500 * time.Millisecond},
		{"500", 500, "api_error", nil, true, 0},
		{"529 overloaded", 529, "overloaded_error", nil, true, 0},
		{"400", 400, "invalid_request_error", nil, false, 0},
		{"401", 401, "authentication_error", nil, false, 0},
	} {
		for _, stream := range []bool{true, false} {
			name := tc.name + "/stream"
			if !stream {
				name = tc.name + "/whole"
			}
			t.Run(name, func(t *testing.T) {
				s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
					for k, v := range tc.header {
						w.Header().Set(k, v)
					}
					writeError(w, tc.status, tc.typ, "Message from the API: "+tc.typ)
				})
				var c collect
				_, err := s.model(anthropicmodel.WithStreaming(stream)).Generate(ctx(t), request(&c, agent.UserText("go")))
				var api *agent.APIError
				if !errors.As(err, &api) {
					t.Fatalf("err = %v (%T), want *agent.APIError", err, err)
				}
				if api.Provider != "anthropic" || api.StatusCode != tc.status || api.Type != tc.typ ||
					api.Message != "Message from the API: "+tc.typ || api.Retryable != tc.retryable || api.RetryAfter != tc.after {
					t.Errorf("APIError = %+v", api)
				}
				var sdk *anthropic.Error
				if !errors.As(err, &sdk) || sdk.StatusCode != tc.status {
					t.Errorf("the SDK's error is not kept: %v", api.Err)
				}
				if s.requests() != 1 {
					t.Errorf("%d requests: the SDK retried on its own", s.requests())
				}
				if len(c.all()) != 0 {
					t.Errorf("chunks: %+v", c.all())
				}
			})
		}
	}
}

// WithRequestOptions comes after the adapter's own options: it gives the
// SDK its retries back.
func TestRequestOptionsOverride(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 0 {
			w.Header().Set("Retry-After-Ms", "1")
			writeError(w, 529, "overloaded_error", "Overloaded")
			return
		}
		if r.Header.Get("X-Test") != "yes" {
			writeError(w, 400, "invalid_request_error", "header missing")
			return
		}
		writeSSE(w, msgStart("claude-test-1", 1), textStart(0), textDelta(0, "ok"), blockStop(0), msgDelta("end_turn", 1), msgStop())
	})
	m := s.model(anthropicmodel.WithRequestOptions(option.WithMaxRetries(1), option.WithHeader("X-Test", "yes")))
	reply, err := m.Generate(ctx(t), request(nil, agent.UserText("go")))
	if err != nil || reply.Text != "ok" {
		t.Fatalf("reply %+v, err %v", reply, err)
	}
	if s.requests() != 2 {
		t.Errorf("%d requests, want 2 (one retry)", s.requests())
	}
}

// A server nobody listens on: a retryable APIError without a status.
func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	client := anthropic.NewClient(option.WithAPIKey("k"), option.WithBaseURL("http://"+addr))
	for _, stream := range []bool{true, false} {
		_, err := anthropicmodel.New(client, "m", anthropicmodel.WithStreaming(stream)).Generate(ctx(t), request(nil, agent.UserText("go")))
		var api *agent.APIError
		if !errors.As(err, &api) || !api.Retryable || api.StatusCode != 0 {
			t.Errorf("stream %v: err = %#v", stream, err)
		}
	}
}

// A request the SDK refuses before sending (a non-streaming request whose
// max_tokens it thinks too long) is an APIError that is not retried.
func TestRefusedBeforeSending(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) { t.Error("a request was sent") })
	_, err := s.model(anthropicmodel.WithStreaming(false), anthropicmodel.WithMaxTokens(64000)).Generate(ctx(t), request(nil, agent.UserText("go")))
	var api *agent.APIError
	if !errors.As(err, &api) || api.Retryable {
		t.Errorf("err = %#v", err)
	}
}
