package agent

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// APIError is a provider's failure as an adapter reports it: what the
// server said, and whether asking again may work. The loop retries a
// Retryable error with backoff, waiting at least RetryAfter.
type APIError struct {
	// Provider names the provider, for the message ("openai", "anthropic").
	Provider string
	// StatusCode is the HTTP status; 0 when there was none (a stream cut
	// short, an error event in a stream that began with 200).
	StatusCode int
	// Type is the provider's error type or code ("rate_limit_error",
	// "insufficient_quota", "overloaded_error"), if it sent one.
	Type string
	// Message is the provider's own explanation.
	Message string
	// RetryAfter is how long the server asked to wait (Retry-After,
	// retry-after-ms); 0 when it did not say.
	RetryAfter time.Duration
	// Retryable says that the same request may succeed later: rate limits,
	// overload, server errors, a broken connection.
	Retryable bool
	// Err is the underlying error (the SDK's), for errors.As.
	Err error
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.StatusCode)
		if t := http.StatusText(e.StatusCode); t != "" {
			b.WriteString(" " + t)
		}
	}
	if e.Type != "" {
		b.WriteString(" (" + e.Type + ")")
	}
	switch {
	case e.Message != "":
		b.WriteString(": " + e.Message)
	case e.Err != nil:
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

func (e *APIError) Unwrap() error { return e.Err }

// RetryableStatus reports whether an HTTP status is worth retrying: 408
// (timeout), 409 (conflict, OpenAI's lock), 429 (rate limit) and every 5xx
// (529 is Anthropic's overload).
func RetryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusConflict ||
		code == http.StatusTooManyRequests || code >= 500
}

// RetryAfter reads how long a response asks the client to wait: the
// retry-after-ms header (OpenAI, Anthropic), else Retry-After in seconds
// or as an HTTP date. It returns 0 when there is no usable value.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e9 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// isRetryable reports whether err is an APIError worth retrying, and the
// wait it asks for.
func isRetryable(err error) (time.Duration, bool) {
	var api *APIError
	if errors.As(err, &api) && api.Retryable {
		return api.RetryAfter, true
	}
	return 0, false
}
