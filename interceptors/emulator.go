package interceptors

import (
	"context"
	"fmt"
	"strings"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// MetaEmulated is the result metadata key, set to true, that marks a
// result [Emulate] made up.
const MetaEmulated = "emulated"

// Model generates text from a prompt: the LLM that plays the tools for
// [Emulate].
type Model interface {
	Generate(ctx context.Context, prompt string) (string, error)
}

// EmulateOption configures [Emulate].
type EmulateOption func(*emulateConfig)

type emulateConfig struct {
	model      Model
	prompt     func(inv *toolkit.Invocation) string
	noFallback bool
}

// EmulatePrompt replaces the prompt the model gets (see [EmulatePromptFor]
// for the default).
func EmulatePrompt(f func(inv *toolkit.Invocation) string) EmulateOption {
	return func(c *emulateConfig) {
		if f != nil {
			c.prompt = f
		}
	}
}

// EmulateNoFallback makes a model failure the call's failure (state error)
// instead of running the real tool.
func EmulateNoFallback() EmulateOption { return func(c *emulateConfig) { c.noFallback = true } }

// Emulate returns an interceptor (named "emulator") that answers calls
// with what model makes up instead of running the tool, for tests and
// dry runs. The interceptors added after it and the tool itself do not
// run. The result is the model's output as text, marked with
// [MetaEmulated] in its metadata.
//
// If the model fails, the real tool runs, unless [EmulateNoFallback] is
// given. A call whose context ends while the model works fails as a
// timeout or an interruption.
//
// Set the returned interceptor's Tools to emulate only some tools, and its
// Unknown to also emulate calls of tools nobody registered (Spring AI
// Alibaba's emulator does: a dry run of a tool that is not written yet;
// with Tools, only the names listed). For those the prompt gets the name
// and the arguments only, and a model failure gives the unknown-tool
// answer.
func Emulate(model Model, opts ...EmulateOption) toolkit.Interceptor {
	cfg := &emulateConfig{model: model, prompt: EmulatePromptFor}
	for _, o := range opts {
		o(cfg)
	}
	return toolkit.Interceptor{Name: "emulator", Intercept: cfg.intercept}
}

// EmulatePromptFor is the default prompt of [Emulate]:
//
//	You are emulating a software tool for a test. The tool is not available; reply as it would.
//
//	Tool: <name>
//	Description: <description>
//	Input schema: <JSON Schema of the arguments>
//	Arguments: <the call's arguments, JSON>
//
//	Reply with the tool's output only: no explanation, no preamble, no code fences.
//	Make it realistic and consistent with the arguments.
func EmulatePromptFor(inv *toolkit.Invocation) string {
	var b strings.Builder
	b.WriteString("You are emulating a software tool for a test. The tool is not available; reply as it would.\n\n")
	fmt.Fprintf(&b, "Tool: %s\n", inv.Call.Name)
	desc := toolSpec(inv).Description
	if desc == "" {
		desc = "(none)"
	}
	fmt.Fprintf(&b, "Description: %s\n", desc)
	var schema []byte
	if inv.Tool != nil {
		schema = inv.Tool.Definition().Parameters
	}
	fmt.Fprintf(&b, "Input schema: %s\n", schema)
	args := string(inv.Call.Args)
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	fmt.Fprintf(&b, "Arguments: %s\n\n", args)
	b.WriteString("Reply with the tool's output only: no explanation, no preamble, no code fences.\n")
	b.WriteString("Make it realistic and consistent with the arguments.\n")
	return b.String()
}

func (cfg *emulateConfig) intercept(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
	if cfg.model == nil || inv.Tool == nil { // no tool: an outer interceptor cleared it, the call fails
		return next(ctx, inv)
	}
	text, err := cfg.model.Generate(ctx, cfg.prompt(inv))
	if err != nil {
		if ctx.Err() != nil {
			return inv.ContextFailure(ctx)
		}
		if cfg.noFallback {
			return toolkit.Failure(events.StateError, &emulateError{tool: inv.Call.Name, err: err})
		}
		return next(ctx, inv)
	}
	inv.Meta(MetaEmulated, true)
	return toolkit.Success(events.Text(text))
}

type emulateError struct {
	tool string
	err  error
}

func (e *emulateError) Error() string {
	return fmt.Sprintf("emulating tool %q failed: %v", e.tool, e.err)
}

func (e *emulateError) Unwrap() error { return e.err }
