// Package agent is the agent loop: it asks a model for a turn, runs the
// tool calls of the turn with a toolkit session, hands the results back to
// the model and repeats until the model answers.
//
// A Model is any language model behind one method; packages
// agent/openaimodel and agent/anthropicmodel adapt the official OpenAI and
// Anthropic SDKs, and docs/llm-sdk.md shows how to adapt another one. The
// Conversation holds the history in a form no provider owns and marshals
// to JSON, so a caller can persist it and continue later. Hooks (WithHooks)
// steer a run at its timing points, and ModelInterceptors wrap each model
// call as toolkit interceptors wrap each tool call.
package agent
