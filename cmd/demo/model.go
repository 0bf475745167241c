package main

import (
	"context"
	"time"

	"github.com/toolstream/toolstream/toolkit"
)

// Model is what the demo's agent loop needs from a language model: given
// the conversation so far and the tools on offer, the next turn. The
// scripted model and the OpenAI-compatible one both implement it.
type Model interface {
	// Name says which model this is, for the demo's output.
	Name() string
	// Next returns the model's next turn. A turn without calls ends the loop.
	Next(ctx context.Context, conv []Message, tools []toolkit.Definition) (Turn, error)
}

// Role is who a message of the conversation is from.
type Role string

// The roles of a conversation, as chat APIs name them.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of the conversation the model sees.
type Message struct {
	Role Role
	// Text is the message's text: the prompt, the model's words, or (for
	// RoleTool) the model-visible result of a call.
	Text string
	// Calls are the tool calls an assistant message asked for.
	Calls []toolkit.Call
	// CallID is the call a RoleTool message answers.
	CallID string
}

// Turn is what the model answered: words, tool calls, or both.
type Turn struct {
	Text  string
	Calls []toolkit.Call
	// StopAfter, when positive, stands for the person watching who presses
	// stop: the demo cancels the turn's calls after this long. Only the
	// scripted model sets it.
	StopAfter time.Duration
	// Note says, for the demo's output, what the turn is meant to show.
	Note string
}
