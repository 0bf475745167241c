package toolkit

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolstream/toolstream/events"
)

// Call is one tool call as the model produced it.
type Call struct {
	// ID is the model's call id (OpenAI tool_call_id, Anthropic tool_use_id).
	// An empty id is replaced by a generated one.
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"arguments,omitempty"`
}

// Result is the outcome of one call. It is also what a Handler returns to
// the interceptor around it: there only State, Content and Err count; the
// engine fills Call, Meta (attach it with Invocation.Meta), Started and
// Duration when the call ends.
type Result struct {
	Call  Call
	State events.State
	// Content is what the model sees: the concatenation of the call's deltas.
	// In an interceptor, each result from next is the interceptor's own
	// copy of the list (the bytes of JSON and binary parts are shared: do
	// not write to them). An interceptor that returns different content
	// replaces it: the engine emits a reset delta and the new content,
	// which goes through the call's delta filters like every delta, so the
	// deltas still add up to the result.
	Content []events.Part
	// Err is the cause of a failure, for errors.Is and errors.As: for example
	// an *ArgumentError, an *UnknownToolError, a *PanicError, ErrTimeout or the
	// error the handler returned.
	Err error
	// Meta is metadata the tool attached for code and UIs, not for the model.
	Meta map[string]any
	// Started is when the call left the queue; zero if it never did.
	Started time.Time
	// Duration is the time from Started to the result.
	Duration time.Duration
}

// IsError reports whether the model should be told the call failed.
func (r Result) IsError() bool { return r.State.IsError() }

// Text renders the content as one string for LLM APIs that take text only.
func (r Result) Text() string { return events.ContentText(r.Content) }

// Final reports whether the result is final (not a suspension notice).
func (r Result) Final() bool { return r.State != events.StateSuspended }

type userKey struct{}

// WithUser returns a context carrying the id of the user on whose behalf tools
// run. Tools read it with [User]; it never appears in a schema.
func WithUser(ctx context.Context, userID string) context.Context {
	return context.WithValue(ctx, userKey{}, userID)
}

// User returns the user id set with [WithUser], or "".
func User(ctx context.Context) string {
	u, _ := ctx.Value(userKey{}).(string)
	return u
}

type valueKey[T any] struct{}

// WithValue returns a context carrying v, keyed by its type T. It is how
// callers hand tools values of their own (a database handle, a tenant) that
// the model must neither see nor set. The context passed to a batch reaches
// every handler.
func WithValue[T any](ctx context.Context, v T) context.Context {
	return context.WithValue(ctx, valueKey[T]{}, v)
}

// Value returns the value of type T set with [WithValue].
func Value[T any](ctx context.Context) (T, bool) {
	v, ok := ctx.Value(valueKey[T]{}).(T)
	return v, ok
}
