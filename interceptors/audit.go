package interceptors

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolstream/toolstream/toolkit"
)

// AuditName is the name of the interceptor [Audit] returns.
const AuditName = "audit"

// AuditOption configures [Audit].
type AuditOption func(*auditConfig)

type auditConfig struct {
	log     zerolog.Logger
	args    bool
	results bool
}

// AuditArgs adds the call's arguments to each line (field "args"). Off by
// default: arguments may hold personal data.
func AuditArgs() AuditOption { return func(c *auditConfig) { c.args = true } }

// AuditResults adds the model-visible result text to each line (field
// "result"). Off by default.
func AuditResults() AuditOption { return func(c *auditConfig) { c.results = true } }

// Audit returns an interceptor (named "audit") that writes one line per
// call to log once it is over, at info level (warn for failures), with the
// message "tool call" and the fields tool, session, call, run, state,
// duration_ms, attempts (how many times the tool itself ran) and, for
// failures, error. [AuditArgs] and [AuditResults] add the arguments and
// the result.
//
// Add it first to record what the model finally gets. Like every
// interceptor it does not see calls that never reach a tool (unknown
// tools, malformed calls); observers do.
func Audit(log zerolog.Logger, opts ...AuditOption) toolkit.Interceptor {
	cfg := &auditConfig{log: log}
	for _, o := range opts {
		o(cfg)
	}
	return toolkit.Interceptor{Name: AuditName, Intercept: cfg.intercept}
}

func (cfg *auditConfig) intercept(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
	start := time.Now()
	args := inv.Call.Args // as they came in, before inner interceptors change them
	out := next(ctx, inv)
	elapsed := time.Since(start)

	level := zerolog.InfoLevel
	if out.State.IsError() {
		level = zerolog.WarnLevel
	}
	e := cfg.log.WithLevel(level)
	if !e.Enabled() {
		return out
	}
	state := out.State
	if state == "" {
		state = toolkit.StateSuccess
	}
	e = e.Str("tool", inv.Call.Name).
		Str("session", inv.Session).
		Str("call", inv.Call.ID).
		Str("run", inv.BatchID()).
		Str("state", string(state)).
		Float64("duration_ms", float64(elapsed)/float64(time.Millisecond)).
		Int("attempts", inv.Attempts())
	if out.Err != nil {
		e = e.Err(out.Err)
	}
	if cfg.args {
		var buf bytes.Buffer
		if len(args) > 0 && json.Compact(&buf, args) == nil {
			e = e.RawJSON("args", buf.Bytes()) // compact: one line per call
		} else {
			e = e.Str("args", string(args))
		}
	}
	if cfg.results {
		e = e.Str("result", out.Text())
	}
	e.Msg("tool call")
	return out
}
