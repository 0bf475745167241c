package anthropicmodel

import (
	"net/http"

	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolstream/toolstream/agent"
)

// anthropicHost is the host of Anthropic's own API, the SDK's default base
// URL.
const anthropicHost = "api.anthropic.com"

// errNoKey is the failure of a request to Anthropic's own API without a
// credential (a new value each time: callers may change what they get).
func errNoKey() error {
	return &agent.APIError{
		Provider: provider,
		Type:     "missing_api_key",
		Message: "no API key: the request would go to https://" + anthropicHost + " without a credential, which Anthropic refuses. " +
			"Set ANTHROPIC_API_KEY in the environment (anthropic.NewClient reads it, or ANTHROPIC_AUTH_TOKEN) or pass option.WithAPIKey(key) to anthropic.NewClient; " +
			"a compatible server or proxy that needs none is reached with option.WithBaseURL(url) or ANTHROPIC_BASE_URL",
	}
}

// requireKey refuses, before it leaves, a request to Anthropic's own API
// that carries no credential (X-Api-Key, or Authorization for a token):
// without ANTHROPIC_API_KEY the SDK sends it anyway, and where the network
// fails (no DNS) the loop took that for a transient failure and retried it
// for seconds. It runs after every other middleware, which may add the
// credential (the SDK's federation does). A request to another host goes
// as it is.
func requireKey(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	if r.URL.Host == anthropicHost && r.Header.Get("X-Api-Key") == "" && r.Header.Get("Authorization") == "" {
		return nil, errNoKey()
	}
	return next(r)
}
