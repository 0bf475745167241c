// Package openaimodel adapts the official OpenAI Go SDK
// (github.com/openai/openai-go/v3) to [agent.Model], for the Chat
// Completions API ([NewChat]) and the Responses API ([NewResponses]).
//
// Both stream by default: the reply's words and tool calls reach
// [agent.Request.Send] as they are generated, and Generate returns the whole
// reply at the end. Any server that speaks the API works through the
// client's base URL (option.WithBaseURL): vLLM, Ollama, LM Studio,
// llama.cpp and proxies speak Chat Completions; the adapter copes with the
// ways they differ from OpenAI (tool calls without type or id, usage in the
// last chunk or never, finish_reason "stop" with tool calls, a JSON body
// where a stream was asked for).
//
// A request to OpenAI's own API (api.openai.com, the SDK's default base
// URL) without a key fails at the first Generate, before it leaves, with a
// non-retryable [*agent.APIError] that says to set OPENAI_API_KEY or pass
// option.WithAPIKey to openai.NewClient. A client pointed at another server
// with option.WithBaseURL (Ollama, vLLM) needs no key and is never stopped.
//
// Retries belong to the agent loop: the adapters turn the SDK's own retries
// off (option.WithMaxRetries(0)) and report every provider failure as an
// [*agent.APIError] that says whether asking again may work and how long
// the server asked to wait. Pass [WithRequestOptions](option.WithMaxRetries(n))
// to have the SDK retry as well.
//
// Tool schemas reach the wire as the toolkit wrote them (key order and large
// integers included), sent with strict mode off: the toolkit validates
// arguments itself and its schemas have optional properties, which strict
// mode refuses.
package openaimodel
