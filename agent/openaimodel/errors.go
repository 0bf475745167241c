package openaimodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/toolstream/toolstream/agent"
)

const provider = "openai"

// failure turns what the SDK returned into the error Generate reports:
// the context's error when ctx ended (wrapped, so errors.Is finds
// context.Canceled), else an *agent.APIError. res is the HTTP response
// when there was one (option.WithResponseInto), kept to describe error
// bodies the SDK cannot decode (a proxy's HTML page).
func failure(ctx context.Context, err error, res *http.Response) error {
	if ctx.Err() != nil {
		return fmt.Errorf("openai: %w", ctx.Err())
	}
	var done *agent.APIError
	if errors.As(err, &done) {
		return done
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		e := &agent.APIError{
			Provider:   provider,
			StatusCode: apiErr.StatusCode,
			Type:       firstNonEmpty(apiErr.Code, apiErr.Type),
			Message:    apiErr.Message,
			Err:        err,
		}
		if e.Message == "" {
			msg, typ := errorBody(apiErr.Response)
			e.Message, e.Type = msg, firstNonEmpty(e.Type, typ)
		}
		if apiErr.Response != nil {
			e.RetryAfter = agent.RetryAfter(apiErr.Response.Header, time.Now())
		}
		e.Retryable = agent.RetryableStatus(e.StatusCode) && !hopeless(e.Type)
		return e
	}
	var streamErr *ssestream.StreamError
	if errors.As(err, &streamErr) {
		return eventError(streamErr.Event.Data, err)
	}
	if res != nil && res.StatusCode >= 400 {
		// The error body was not the API's JSON (the SDK could not read
		// it): a compatible server's own shape, or a proxy's page.
		msg, typ := errorBody(res)
		return &agent.APIError{
			Provider:   provider,
			StatusCode: res.StatusCode,
			Type:       typ,
			Message:    msg,
			RetryAfter: agent.RetryAfter(res.Header, time.Now()),
			Retryable:  agent.RetryableStatus(res.StatusCode) && !hopeless(typ),
			Err:        err,
		}
	}
	return &agent.APIError{Provider: provider, Message: err.Error(), Retryable: transient(err), Err: err}
}

// streamFailure is failure for the error that ended a stream: an event
// that is not JSON (a proxy's page in the middle of a stream, say) is a
// malformed reply, which asking again may cure.
func streamFailure(ctx context.Context, err error, res *http.Response) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if ctx.Err() == nil && (res == nil || res.StatusCode < 400) && (errors.As(err, &syntax) || errors.As(err, &typ)) {
		e := malformed("a stream event is not what the API sends: %v", err)
		e.Err = err
		return e
	}
	return failure(ctx, err, res)
}

// hopeless reports error codes that come with a retryable status but that
// no retry can cure: a 429 for an exhausted quota is not a rate limit.
func hopeless(code string) bool {
	return code == "insufficient_quota" || code == "billing_hard_limit_reached"
}

// transient reports whether an error without an HTTP status is the
// connection's fault (refused, reset, cut short, timed out), which a new
// request may not meet.
func transient(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}

// eventError reads an error a stream carried after a 200: Chat Completions
// servers send {"error":{...}} as a chunk, the Responses API an "error"
// event {"type":"error","code":...,"message":...}. Both are the server's
// trouble unless the code says the request was wrong.
func eventError(data []byte, err error) *agent.APIError {
	var body struct {
		Error *struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	}
	e := &agent.APIError{Provider: provider, Err: err}
	if json.Unmarshal(data, &body) == nil {
		if body.Error != nil {
			e.Message = body.Error.Message
			e.Type = firstNonEmpty(codeString(body.Error.Code), body.Error.Type)
		} else {
			e.Message = body.Message
			e.Type = codeString(body.Code)
		}
	}
	if e.Message == "" {
		e.Message = snippet(string(data))
	}
	e.Retryable = retryableCode(e.Type)
	return e
}

// codeString reads an error code that servers write as a string or a
// number (vLLM sends the HTTP status).
func codeString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// retryableCode says whether an error reported inside a stream (no HTTP
// status to go by) may pass: server errors, overload and rate limits do;
// a request the server found wrong does not.
func retryableCode(code string) bool {
	c := strings.ToLower(code)
	if hopeless(c) {
		return false
	}
	for _, bad := range []string{"invalid", "context_length", "not_found", "unsupported", "policy", "permission", "auth", "400", "401", "403", "404", "422"} {
		if strings.Contains(c, bad) {
			return false
		}
	}
	return true
}

// cutShort is the error for a stream that ended without saying it was
// done: the connection closed early, or a proxy cut it.
func cutShort(what string) *agent.APIError {
	return &agent.APIError{
		Provider:  provider,
		Message:   "the stream ended before the reply was complete (" + what + ")",
		Retryable: true,
		Err:       io.ErrUnexpectedEOF,
	}
}

// malformed is the error for a reply the adapter cannot read as the API
// defines it. Asking again may well give a good one.
func malformed(format string, args ...any) *agent.APIError {
	msg := fmt.Sprintf(format, args...)
	return &agent.APIError{Provider: provider, Message: msg, Retryable: true, Err: errors.New(msg)}
}

// errorBody reads the message (and type or code) of an error response
// the SDK could not: the shapes OpenAI-compatible servers use
// ({"error":"..."} from Ollama, {"object":"error","message":...} from
// vLLM, {"detail":...} from FastAPI servers), else the start of the body
// on one line (a proxy's HTML page). The SDK leaves the body readable
// after it failed.
func errorBody(res *http.Response) (msg, typ string) {
	if res == nil || res.Body == nil {
		return "no details", ""
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	var body struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(b, &body) == nil {
		var s string
		var obj struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		switch {
		case json.Unmarshal(body.Error, &s) == nil && s != "":
			return s, ""
		case json.Unmarshal(body.Error, &obj) == nil && obj.Message != "":
			return obj.Message, firstNonEmpty(codeString(obj.Code), obj.Type)
		case body.Message != "":
			return body.Message, firstNonEmpty(body.Type, codeString(body.Code))
		case json.Unmarshal(body.Detail, &s) == nil && s != "":
			return s, ""
		}
	}
	if s := snippet(string(b)); s != "" {
		return s, ""
	}
	return "empty response body", ""
}

func snippet(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = strings.ToValidUTF8(s[:300], "") + "..."
	}
	return s
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
