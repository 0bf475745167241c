package openaimodel

import (
	"net/http"

	"github.com/openai/openai-go/v3/option"

	"github.com/toolstream/toolstream/agent"
)

// openAIHost is the host of OpenAI's own API, the SDK's default base URL.
const openAIHost = "api.openai.com"

// errNoKey is the failure of a request to OpenAI's own API without a key
// (a new value each time: callers may change what they get).
func errNoKey() error {
	return &agent.APIError{
		Provider: provider,
		Type:     "missing_api_key",
		Message: "no API key: the request would go to https://" + openAIHost + " without one, which OpenAI refuses. " +
			"Set OPENAI_API_KEY in the environment (openai.NewClient reads it) or pass option.WithAPIKey(key) to openai.NewClient; " +
			"a server that needs no key (Ollama, vLLM, LM Studio) is reached with option.WithBaseURL(url) or OPENAI_BASE_URL",
	}
}

// requireKey refuses, before it leaves, a request to OpenAI's own API that
// carries no credentials: without OPENAI_API_KEY the SDK sends it anyway,
// and where the network fails (no DNS) the loop took that for a transient
// failure and retried it for seconds. It runs after every other
// middleware, which may add the header itself. A request to another host
// (a local OpenAI-compatible server, Azure with its api-key header) goes
// as it is: many need no key, and those that do answer 401 at once.
func requireKey(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	if r.URL.Host == openAIHost && r.Header.Get("Authorization") == "" {
		return nil, errNoKey()
	}
	return next(r)
}
