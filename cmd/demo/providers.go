package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/agent/anthropicmodel"
	"github.com/toolstream/toolstream/agent/openaimodel"
)

// The providers -provider names.
const (
	providerScripted  = "scripted"
	providerOpenAI    = "openai"
	providerAnthropic = "anthropic"
)

// modelConfig says which provider, server, model and key drive the loop.
type modelConfig struct {
	Provider string // providerOpenAI or providerAnthropic
	// API is OpenAI's API: "chat" (Chat Completions, the default, which
	// compatible servers speak) or "responses".
	API     string
	Model   string
	BaseURL string
	APIKey  string
	// HTTPClient carries the requests; nil means a client of the model's
	// own, released by Close.
	HTTPClient *http.Client
}

// envPrefix is where a provider's settings live in the environment.
func envPrefix(provider string) string {
	if provider == providerAnthropic {
		return "ANTHROPIC"
	}
	return "OPENAI"
}

// modelFromEnv resolves the model, base URL and API key of provider: flags
// first, then <PROVIDER>_MODEL, _BASE_URL and _API_KEY. Without a model or
// a key it reports ok false and why, in words the demo prints.
func modelFromEnv(provider, model, baseURL, apiKey string) (cfg modelConfig, ok bool, why string) {
	env := envPrefix(provider)
	pick := func(flag, name string) string {
		if v := strings.TrimSpace(flag); v != "" {
			return v
		}
		return strings.TrimSpace(os.Getenv(env + "_" + name))
	}
	cfg = modelConfig{Provider: provider, Model: pick(model, "MODEL"), BaseURL: pick(baseURL, "BASE_URL"), APIKey: pick(apiKey, "API_KEY")}
	switch {
	case cfg.APIKey == "" && cfg.Model == "":
		return cfg, false, fmt.Sprintf("no API key and no model (set -api-key or %s_API_KEY, and -model or %s_MODEL)", env, env)
	case cfg.APIKey == "":
		return cfg, false, fmt.Sprintf("no API key (set -api-key or %s_API_KEY)", env)
	case cfg.Model == "":
		return cfg, false, fmt.Sprintf("no model (set -model or %s_MODEL)", env)
	}
	return cfg, true, ""
}

// providerModel is a real model and the HTTP client it owns.
type providerModel struct {
	agent.Model
	name string
	http *http.Client
}

// Name implements agent.Namer: the model id, with the server's host when
// it is not the provider's own.
func (m *providerModel) Name() string { return m.name }

// Close releases the idle connections of the model's HTTP client.
func (m *providerModel) Close() error {
	m.http.CloseIdleConnections()
	return nil
}

// newProviderModel builds the model cfg describes, on the official SDK of
// its provider through the agent package's adapters. The SDKs still read
// their other environment variables (OPENAI_ORG_ID, ...), as any program
// using them would; the fields of cfg win over them.
func newProviderModel(cfg modelConfig) (*providerModel, error) {
	switch {
	case strings.TrimSpace(cfg.Model) == "":
		return nil, fmt.Errorf("%s: no model given", cfg.Provider)
	case strings.TrimSpace(cfg.APIKey) == "":
		return nil, fmt.Errorf("%s: no API key given", cfg.Provider)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient()
	}
	name := cfg.Model
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("%s: base URL %q is not an absolute URL", cfg.Provider, cfg.BaseURL)
		}
		name += " at " + u.Host
	}
	m := &providerModel{name: name, http: hc}
	switch cfg.Provider {
	case providerOpenAI:
		opts := []option.RequestOption{option.WithAPIKey(cfg.APIKey), option.WithHTTPClient(hc)}
		if cfg.BaseURL != "" {
			opts = append(opts, option.WithBaseURL(cfg.BaseURL))
		}
		client := openai.NewClient(opts...)
		switch cfg.API {
		case "", "chat":
			m.Model = openaimodel.NewChat(client, cfg.Model)
		case "responses":
			m.Model = openaimodel.NewResponses(client, cfg.Model)
		default:
			return nil, fmt.Errorf("openai: unknown API %q (chat or responses)", cfg.API)
		}
	case providerAnthropic:
		opts := []aoption.RequestOption{aoption.WithAPIKey(cfg.APIKey), aoption.WithHTTPClient(hc)}
		if cfg.BaseURL != "" {
			opts = append(opts, aoption.WithBaseURL(cfg.BaseURL))
		}
		m.Model = anthropicmodel.New(anthropic.NewClient(opts...), cfg.Model)
	default:
		return nil, errors.New("unknown provider " + cfg.Provider)
	}
	return m, nil
}

// defaultHTTPClient is what the SDKs would use (a fresh transport with a
// bound on waiting for response headers), but owned by the model so that
// Close can release its idle connections.
func defaultHTTPClient() *http.Client {
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t = t.Clone()
		t.ResponseHeaderTimeout = 10 * time.Minute
		return &http.Client{Transport: t}
	}
	return &http.Client{Transport: http.DefaultTransport}
}
