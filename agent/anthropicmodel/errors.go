package anthropicmodel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolstream/toolstream/agent"
)

// streamError is a failure the adapter itself finds in a stream: a stream
// cut short, an event that breaks the protocol.
type streamError struct{ msg string }

func (e *streamError) Error() string { return e.msg }

// retryableEventTypes are the error types of an error event in a stream
// that began with 200 and that asking again may cure: the types of the
// statuses agent.RetryableStatus accepts (overloaded_error is 529,
// api_error 500, rate_limit_error 429, timeout_error 504).
var retryableEventTypes = map[string]bool{
	"overloaded_error": true,
	"api_error":        true,
	"rate_limit_error": true,
	"timeout_error":    true,
}

// toError turns what the SDK (or the stream) reported into the error
// Generate returns. answered says the server had answered 2xx: then a
// failure without an HTTP status is a response cut short or garbled, worth
// a retry.
func toError(ctx context.Context, err error, answered bool) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(err, ctxErr) {
			return fmt.Errorf("anthropic: %w", err)
		}
		return fmt.Errorf("anthropic: %w (%v)", ctxErr, err)
	}
	var done *agent.APIError
	if errors.As(err, &done) {
		return done
	}
	e := &agent.APIError{Provider: provider, Err: err}
	var sdk *anthropic.Error
	var se *streamError
	switch {
	case errors.As(err, &sdk):
		e.Type = string(sdk.Type())
		e.Message = sdk.Message
		if sdk.StatusCode >= 200 && sdk.StatusCode < 300 {
			// An error event in a stream that began with 200: the status
			// is not the error's.
			e.Retryable = retryableEventTypes[e.Type]
			break
		}
		e.StatusCode = sdk.StatusCode
		e.Retryable = agent.RetryableStatus(sdk.StatusCode)
		if sdk.Response != nil {
			e.RetryAfter = agent.RetryAfter(sdk.Response.Header, time.Now())
		}
	case errors.As(err, &se):
		e.Message = se.msg
		e.Retryable = true
	case answered, errors.Is(err, io.ErrUnexpectedEOF), isNetError(err):
		// A connection that broke, a stream cut short or garbled: the same
		// request may well succeed.
		e.Retryable = true
	}
	return e
}

func isNetError(err error) bool {
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne)
}
