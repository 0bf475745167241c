package interceptors

import (
	"context"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// ErrorOption configures [ErrorPolicy].
type ErrorOption func(*errpolConfig)

type errpolConfig struct {
	message func(toolkit.Result) string
	fatal   func(error) bool
}

// Message sets what the model reads for a failed call: f gets the failed
// outcome and returns the whole model-visible text (add an "Error: " prefix
// yourself if you want one). An empty string keeps the engine's message.
func Message(f func(toolkit.Result) string) ErrorOption {
	return func(c *errpolConfig) { c.message = f }
}

// Fatal makes the failures whose cause f accepts fatal for the whole run:
// the run is aborted with that cause (see [toolkit.Invocation.AbortBatch]),
// so the batch's other calls are interrupted and Batch.Err reports it.
// Interrupted calls are never made fatal (they are the aftermath).
func Fatal(f func(error) bool) ErrorOption {
	return func(c *errpolConfig) { c.fatal = f }
}

// ErrorPolicy returns an interceptor (named "errors") that decides what
// failed calls become: the message the model reads ([Message]) and whether
// the failure ends the run ([Fatal]). Without options it changes nothing.
// Add it outside [Retry] so that it sees the final failure, not each
// attempt's.
func ErrorPolicy(opts ...ErrorOption) toolkit.Interceptor {
	var cfg errpolConfig
	for _, o := range opts {
		o(&cfg)
	}
	return toolkit.Interceptor{Name: "errors", Intercept: cfg.intercept}
}

func (cfg *errpolConfig) intercept(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
	out := next(ctx, inv)
	if !out.State.IsError() {
		return out
	}
	if cfg.fatal != nil && out.Err != nil && out.State != events.StateInterrupted && cfg.fatal(out.Err) {
		inv.AbortBatch(out.Err)
	}
	if cfg.message != nil {
		if msg := cfg.message(out); msg != "" && msg != out.Text() {
			out.Content = []events.Part{events.Text(msg)}
		}
	}
	return out
}
