package toolkit

import (
	"errors"
	"fmt"
	"strings"

	"github.com/toolstream/toolstream/internal/schema"
)

// Errors returned by the registry and sessions, for errors.Is.
var (
	// ErrInvalidName: a tool name does not match ^[a-zA-Z0-9_-]{1,64}$.
	ErrInvalidName = errors.New("toolkit: invalid tool name")
	// ErrDuplicate: a tool with that name is already registered.
	ErrDuplicate = errors.New("toolkit: tool already registered")
	// ErrInvalidSession: a session id is empty, too long, not UTF-8 or has
	// control characters.
	ErrInvalidSession = errors.New("toolkit: invalid session id")
	// ErrUnknownCall: no suspended call with that id waits in the session.
	ErrUnknownCall = errors.New("toolkit: no suspended call with that id")
	// ErrClosed: the toolkit or session was closed.
	ErrClosed = errors.New("toolkit: closed")
)

// Causes of failed calls, found with errors.Is on [Result.Err]. Those
// with details of their own are typed, found with errors.AsType:
// *[UnknownToolError] (the model called a tool that is not registered),
// *[ArgumentError] (the arguments did not match the tool's schema),
// *[PanicError] (the handler, or code around it, panicked) and
// *[OutputError] (the result did not match the output schema).
var (
	// ErrTimeout: the call ran past its deadline.
	ErrTimeout = errors.New("tool call timed out")
	// ErrInterrupted: the batch's context was cancelled.
	ErrInterrupted = errors.New("tool call interrupted")
	// ErrInvalidCall: the call itself is malformed (bad or duplicate id).
	ErrInvalidCall = errors.New("invalid tool call")
)

// UnknownToolError is the cause of a call to a tool that does not exist.
type UnknownToolError struct {
	Name string
	// Suggestions are the closest registered names, best first.
	Suggestions []string
	// Available are all names the session could have called.
	Available []string
}

// Error names the tool, the closest names and the available tools.
func (e *UnknownToolError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "unknown tool %q", shownName(e.Name))
	if len(e.Suggestions) > 0 {
		b.WriteString("; did you mean ")
		for i, s := range e.Suggestions {
			if i > 0 {
				b.WriteString(" or ")
			}
			fmt.Fprintf(&b, "%q", s)
		}
		b.WriteString("?")
	} else {
		b.WriteString(".") // the sentence ends before the list
	}
	if len(e.Available) > 0 {
		b.WriteString(" Available tools: ")
		b.WriteString(strings.Join(e.Available, ", "))
	} else {
		b.WriteString(" No tools are available.")
	}
	return b.String()
}

// ArgumentError is the cause of a call whose arguments were rejected before
// the handler ran. Its message lists one problem per line as "path: message".
type ArgumentError struct {
	Tool     string
	Problems []Problem
	// Err is set when the arguments were not valid JSON at all.
	Err error
}

// Problem is one reason why arguments were rejected: the path of the value
// ("" for the whole arguments object) and what is wrong with it.
type Problem = schema.Problem

// Error lists the problems, one "- path: message" line each.
func (e *ArgumentError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid arguments for tool %q", e.Tool)
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
		return b.String()
	}
	b.WriteString(":")
	for _, p := range e.Problems {
		b.WriteString("\n- ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Unwrap returns the JSON syntax error, if any.
func (e *ArgumentError) Unwrap() error { return e.Err }

// PanicError is the cause of a call whose handler panicked.
// The panic may also come from code around the handler: In then says
// which ("an interceptor", "the visibility").
type PanicError struct {
	Tool  string
	Value any
	Stack []byte
	In    string // empty when the handler itself panicked
}

// Error names the tool and the panic value (the stack is in Stack).
func (e *PanicError) Error() string {
	if e.In != "" {
		return fmt.Sprintf("%s of tool %q panicked: %v", e.In, shownName(e.Tool), e.Value)
	}
	return fmt.Sprintf("tool %q panicked: %v", shownName(e.Tool), e.Value)
}

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// callError wraps a cause with a sentinel so that both errors.Is(err,
// sentinel) and errors.Is(err, cause) hold.
type callError struct {
	kind  error
	msg   string
	cause error
}

func (e *callError) Error() string   { return e.msg }
func (e *callError) Unwrap() []error { return []error{e.kind, e.cause} }

// shownName is a called tool's name as messages show it: a model may call
// a name of any length, and the message it reads back must stay short.
func shownName(name string) string { return truncate(name, 128) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// isPanic reports whether err is, or wraps, a *PanicError.
func isPanic(err error) bool {
	_, ok := errors.AsType[*PanicError](err)
	return ok
}
