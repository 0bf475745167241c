package openaimodel

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/toolstream/toolstream/agent"
)

// offline is a transport that counts the requests that reach it and
// fails them: each would have gone to the network.
type offline struct{ n atomic.Int32 }

func (o *offline) RoundTrip(*http.Request) (*http.Response, error) {
	o.n.Add(1)
	return nil, errors.New("dial tcp: lookup api.openai.com: no such host")
}

// unsetenv unsets an environment variable for the test.
func unsetenv(t *testing.T, key string) {
	t.Setenv(key, "") // restores it after the test
	os.Unsetenv(key)
}

// TestMissingAPIKey: a program without OPENAI_API_KEY made 4 network tries
// (the loop retried what looked like a network failure) and failed with a
// DNS error after 8.2 s. The first call now fails at once, without a
// request, saying that the key is missing and how to give it, and the loop
// does not retry it.
func TestMissingAPIKey(t *testing.T) {
	unsetenv(t, "OPENAI_API_KEY")
	unsetenv(t, "OPENAI_BASE_URL")
	for _, tt := range []struct {
		name  string
		model func(openai.Client) agent.Model
	}{
		{"chat", func(c openai.Client) agent.Model { return NewChat(c, "gpt-test") }},
		{"chat whole", func(c openai.Client) agent.Model { return NewChat(c, "gpt-test", WithStreaming(false)) }},
		{"responses", func(c openai.Client) agent.Model { return NewResponses(c, "gpt-test") }},
		{"responses whole", func(c openai.Client) agent.Model { return NewResponses(c, "gpt-test", WithStreaming(false)) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			net := &offline{}
			model := tt.model(openai.NewClient(option.WithHTTPClient(&http.Client{Transport: net})))
			generates := 0
			loop := agent.New(countGenerates{model, &generates})
			_, err := loop.Run(t.Context(), e2eToolkit(t), agent.NewConversation("", "Hi."))
			if err == nil {
				t.Fatal("the run succeeded")
			}
			t.Log(err)
			for _, want := range []string{"no API key", "OPENAI_API_KEY", "option.WithAPIKey", "option.WithBaseURL"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not say %q: %v", want, err)
				}
			}
			if n := net.n.Load(); n != 0 {
				t.Errorf("%d requests reached the network", n)
			}
			if generates != 1 {
				t.Errorf("the loop asked the model %d times", generates)
			}
			var apiErr *agent.APIError
			if !errors.As(err, &apiErr) || apiErr.Retryable {
				t.Errorf("want a non-retryable *agent.APIError, got %#v", err)
			}
		})
	}
}

// countGenerates counts the calls of a model's Generate.
type countGenerates struct {
	agent.Model
	n *int
}

func (c countGenerates) Generate(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
	*c.n++
	return c.Model.Generate(ctx, req)
}

// TestLocalServerNeedsNoKey: a client pointed at a local OpenAI-compatible
// server (Ollama, vLLM) without a key still works: only OpenAI's own API
// needs one.
func TestLocalServerNeedsNoKey(t *testing.T) {
	unsetenv(t, "OPENAI_API_KEY")
	f := newServer(t, sse(chunk(`{"role":"assistant","content":"Hi."}`, ""), chunk(`{}`, "stop"), "[DONE]"))
	client := openai.NewClient(option.WithBaseURL(f.srv.URL+"/v1"), option.WithHTTPClient(f.srv.Client()))
	reply, err := NewChat(client, "qwen3").Generate(t.Context(), &agent.Request{Messages: agent.NewConversation("", "Hi.").Messages})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != "Hi." {
		t.Errorf("reply %q", reply.Text)
	}
	if len(f.reqs) != 1 || f.reqs[0].header.Get("Authorization") != "" {
		t.Errorf("requests: %d, Authorization %q", len(f.reqs), f.reqs[0].header.Get("Authorization"))
	}
}

// TestKeyGoesThrough: a request to OpenAI's API with a key is sent.
func TestKeyGoesThrough(t *testing.T) {
	unsetenv(t, "OPENAI_API_KEY")
	unsetenv(t, "OPENAI_BASE_URL")
	net := &offline{}
	model := NewChat(openai.NewClient(option.WithAPIKey("sk-test"), option.WithHTTPClient(&http.Client{Transport: net})), "gpt-test")
	_, err := model.Generate(t.Context(), &agent.Request{Messages: agent.NewConversation("", "Hi.").Messages})
	if err == nil || net.n.Load() != 1 || strings.Contains(err.Error(), "no API key") {
		t.Errorf("with a key: %d requests, %v", net.n.Load(), err)
	}
}
