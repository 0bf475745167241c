package interceptors

import (
	"bytes"
	"context"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// AuditOption configures [Audit].
type AuditOption func(*auditConfig)

type auditConfig struct {
	log      zerolog.Logger
	args     bool
	results  bool
	maxBytes int
}

// defaultAuditMaxBytes is how much of a call's arguments and of its result
// an audit line holds unless [AuditMaxBytes] says otherwise.
const defaultAuditMaxBytes = 4 << 10

// AuditMaxBytes bounds the arguments and the result an audit line holds
// (with [AuditArgs] and [AuditResults]): longer ones are cut at a character
// boundary, end with "…", and their full size is logged as args_bytes or
// result_bytes. A tool's 100 MiB result must not become a 100 MiB log line.
// The default is 4 KiB; n <= 0 means no bound.
func AuditMaxBytes(n int) AuditOption { return func(c *auditConfig) { c.maxBytes = n } }

// AuditArgs adds the call's arguments to each line (field "args", as they
// reached Audit) and, when an interceptor inside Audit or a person's
// approval changed them, those the tool ran with (field "ran_args",
// presets left out, as the call's args event has them). Off by default:
// arguments may hold personal data.
func AuditArgs() AuditOption { return func(c *auditConfig) { c.args = true } }

// AuditResults adds the model-visible result text to each line (field
// "result"). Off by default.
func AuditResults() AuditOption { return func(c *auditConfig) { c.results = true } }

// Audit returns an interceptor (named "audit") that writes one line per
// call to log once it is over, at info level (warn for failures), with the
// message "tool call" and the fields tool, session, call, run, state,
// duration_ms, attempts (how many times the tool itself ran) and, for
// failures, error; ran_tool names the tool that ran when a ToolResolver or
// an alias ran the call under another name. [AuditArgs] and [AuditResults]
// add the arguments and the result.
//
// Add it first to record what the model finally gets. It also records calls
// of tools nobody registered (it sets Interceptor.Unknown); it does not see
// calls that fail before the chain (malformed arguments); observers do.
func Audit(log zerolog.Logger, opts ...AuditOption) toolkit.Interceptor {
	cfg := &auditConfig{log: log, maxBytes: defaultAuditMaxBytes}
	for _, o := range opts {
		o(cfg)
	}
	return toolkit.Interceptor{Name: "audit", Intercept: cfg.intercept, Unknown: true}
}

// cut returns s bounded by the configured size, and whether it was cut.
func (cfg *auditConfig) cut(s string) (string, bool) {
	if cfg.maxBytes <= 0 || len(s) <= cfg.maxBytes {
		return s, false
	}
	n := cfg.maxBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…", true
}

// addArgs adds arguments to a line as field key: compact JSON, or text cut
// to the bound with its full size in key_bytes.
func (cfg *auditConfig) addArgs(e *zerolog.Event, key string, args json.RawMessage) *zerolog.Event {
	var buf bytes.Buffer
	compact := len(args) > 0 && json.Compact(&buf, args) == nil
	switch {
	case compact && (cfg.maxBytes <= 0 || buf.Len() <= cfg.maxBytes):
		return e.RawJSON(key, buf.Bytes()) // compact: one line per call
	case compact:
		text, _ := cfg.cut(buf.String())
		return e.Str(key, text).Int(key+"_bytes", buf.Len())
	default:
		text, cut := cfg.cut(string(args))
		if e = e.Str(key, text); cut {
			e = e.Int(key+"_bytes", len(args))
		}
		return e
	}
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
		state = events.StateSuccess
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
	if inv.Unknown() {
		e = e.Bool("unknown_tool", true)
	} else if ran := toolName(inv); ran != inv.Call.Name {
		// A ToolResolver or an alias ran the call as another tool: the
		// called name alone would hide what ran.
		e = e.Str("ran_tool", ran)
	}
	if cfg.args {
		e = cfg.addArgs(e, "args", args)
		if ran, ok := inv.RanArgs(); ok {
			// An interceptor inside, or a person's approval, changed
			// them: "args" alone would not say what ran.
			e = cfg.addArgs(e, "ran_args", ran)
		}
	}
	if cfg.results {
		full := out.Text()
		text, cut := cfg.cut(full)
		if e = e.Str("result", text); cut {
			e = e.Int("result_bytes", len(full))
		}
	}
	e.Msg("tool call")
	return out
}
