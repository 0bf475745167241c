package interceptors

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"mime"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// Defaults of [Sanitize].
const (
	defaultSanitizePlaceholder = "[the tool returned no output]"
	defaultSanitizeMaxBytes    = 64 << 10
)

// SanitizeOption configures [Sanitize].
type SanitizeOption func(*sanitizeConfig)

type sanitizeConfig struct {
	count       *toolkit.Local[*sanitizeCount] // per call: the stream filter's, added once
	placeholder string
	maxBytes    int
	redactors   []sanitizeRedactor
}

// spansLines reports whether a redaction may match across a newline, so
// that text let through a line at a time may hold, between two lines, a
// match that neither line holds.
func (cfg *sanitizeConfig) spansLines() bool {
	for i := range cfg.redactors {
		if cfg.redactors[i].spansLines {
			return true
		}
	}
	return false
}

// holdFrom returns where the text to let through must end so that no
// redaction's match starts in it and goes on in what is held back: cut,
// or an earlier line start (a "Bearer" at the end of a line is held with
// the token on the next).
func (cfg *sanitizeConfig) holdFrom(text string, cut int) int {
	for i := range cfg.redactors {
		r := &cfg.redactors[i]
		if r.tail == nil || cut == 0 {
			continue
		}
		if at := r.tail(text[:cut]); at >= 0 {
			cut = strings.LastIndexByte(text[:at], '\n') + 1
		}
	}
	return cut
}

// SanitizePlaceholder sets the text that replaces an empty result (default
// "[the tool returned no output]").
func SanitizePlaceholder(text string) SanitizeOption {
	return func(c *sanitizeConfig) { c.placeholder = text }
}

// SanitizeMaxBytes sets the size, in bytes of text, above which a result is
// truncated (default 64 KiB); 0 or less turns truncation off.
func SanitizeMaxBytes(n int) SanitizeOption { return func(c *sanitizeConfig) { c.maxBytes = n } }

// Redact adds a redaction: every match of re in text (and in the strings of
// JSON parts, and in binary parts of a textual media type) is replaced with
// replacement, in which $1 or ${name} stand for the match's groups as in
// [regexp.Regexp.Expand]. A redaction with the name of an earlier one
// replaces it. The replacement should not itself match; matches of the
// empty string are ignored.
//
// Redaction is linear in the size of the result, at the speed of Go's
// regexp engine for such a pattern: fast when the pattern starts with a
// literal ("tok_[0-9a-f]{32}"), a few MB/s otherwise. The built-in
// redactions have finders of their own and run far faster.
func Redact(name string, re *regexp.Regexp, replacement string) SanitizeOption {
	return sanitizeAdd(newCustomRedactor(name, re, replacement))
}

func sanitizeAdd(r sanitizeRedactor) SanitizeOption {
	return func(c *sanitizeConfig) {
		for i := range c.redactors {
			if c.redactors[i].name == r.name {
				c.redactors[i] = r
				return
			}
		}
		c.redactors = append(c.redactors, r)
	}
}

// RedactEmails replaces e-mail addresses with "[redacted email]"
// (redaction "email").
func RedactEmails() SanitizeOption {
	return sanitizeAdd(sanitizeRedactor{name: "email", re: sanitizeEmailRE, repl: "[redacted email]", find: findEmail})
}

// A candidate: an optional +country code, an optional (area code), then
// groups of digits separated by one space, dot or hyphen; or + and digits.
// sanitizePhone decides which candidates are phone numbers.
var (
	sanitizePhoneRE = regexp.MustCompile(`(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,5}\)[ .-]?)?\d{2,5}(?:[ .-]\d{2,8}){1,5}|\+\d{8,15}`)
	sanitizeDateRE  = regexp.MustCompile(`^(?:\d{4}[-.]\d{1,2}[-.]\d{1,2}|\d{1,2}[-.]\d{1,2}[-.]\d{4})(?:$|[ .-])`)
	sanitizeIPRE    = regexp.MustCompile(`^\d{1,3}(?:\.\d{1,3}){3}$`)
)

// sanitizePhone accepts a candidate that has 7 to 15 digits, stands alone
// (no letter, digit or number punctuation around it), and is marked as a
// phone number by a leading + or (, or by at least two separators; dates
// and IPv4 addresses are not phone numbers.
func sanitizePhone(s string, start, end int) bool {
	m := s[start:end]
	digits, seps := 0, 0
	for i := 0; i < len(m); i++ {
		switch c := m[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == ' ' || c == '.' || c == '-':
			seps++
		}
	}
	if digits < 7 || digits > 15 {
		return false
	}
	if start > 0 {
		if c := s[start-1]; sanitizeWordByte(c) || strings.IndexByte("+-./,:_", c) >= 0 {
			return false
		}
	}
	if end < len(s) {
		c := s[end]
		if sanitizeWordByte(c) || (c == '.' || c == '-' || c == '/' || c == ',' || c == ':') && end+1 < len(s) && sanitizeWordByte(s[end+1]) {
			return false
		}
	}
	if m[0] != '+' && m[0] != '(' && seps < 2 {
		return false
	}
	return !sanitizeDateRE.MatchString(m) && !sanitizeIPRE.MatchString(m)
}

func sanitizeWordByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= utf8.RuneSelf
}

// RedactPhoneNumbers replaces phone numbers with "[redacted phone number]"
// (redaction "phone"). It looks for 7 to 15 digits written as phone numbers
// are: with a leading + or an area code in parentheses, or in groups
// separated by spaces, dots or hyphens ("+1 415 555 0132", "(415)
// 555-0132", "415.555.0132"); plain runs of digits, decimals, dates and IP
// addresses are left alone.
func RedactPhoneNumbers() SanitizeOption {
	return sanitizeAdd(sanitizeRedactor{name: "phone", re: sanitizePhoneRE, repl: "[redacted phone number]", accept: sanitizePhone, find: findPhone})
}

// RedactAPIKeys replaces API keys and tokens with "[redacted API key]"
// (redaction "api_key"): OpenAI and Anthropic keys (sk-...), Stripe keys,
// AWS access key ids (AKIA..., ASIA...), GitHub tokens (ghp_..., github_pat_...),
// Slack tokens (xoxb-..., xoxp-...), Google API keys (AIza...) and any long
// token after "Bearer " (the word "Bearer" is kept).
func RedactAPIKeys() SanitizeOption {
	return sanitizeAdd(sanitizeRedactor{name: "api_key", re: sanitizeKeyRE, repl: "${1}[redacted API key]", find: findKey, tail: bearerTail})
}

// Meta keys [Sanitize] sets on a result when it redacted something.
const (
	// SanitizeMetaRedactions counts the matches replaced while the call
	// ran (int64): in its deltas, including attempts retried inside
	// Sanitize, and in the whole result.
	SanitizeMetaRedactions = "sanitize.redactions"
	// SanitizeMetaUninspected counts the parts replaced whole because they
	// could not be inspected (int64): a JSON part that is not valid JSON.
	SanitizeMetaUninspected = "sanitize.uninspected"
)

// Sanitize returns an interceptor, named "sanitize", that cleans results
// before the model reads them:
//
//   - a result with no content, only whitespace text or a JSON null becomes
//     the placeholder "[the tool returned no output]" ([SanitizePlaceholder]),
//     so the model does not mistake silence for a failure to run;
//   - a result larger than 64 KiB of text ([SanitizeMaxBytes]) is cut at a
//     UTF-8 boundary and ends with "[truncated: N more bytes]" (the
//     "Error: ..." line of a failure is kept after it);
//   - redactions ([Redact], [RedactEmails], [RedactPhoneNumbers],
//     [RedactAPIKeys]) apply, in the order they were added, first to each
//     delta as it streams, so that observers and UIs do not see the secrets
//     either, and then to the whole result.
//
// Redaction fails closed. It reads text parts; the strings (keys and
// values, escapes decoded) of JSON parts, at any depth, keeping the rest
// of the JSON byte for byte; and binary parts of a textual media type
// (text/*, JSON, XML, YAML, JavaScript, form data), the JSON ones as JSON.
// A part it cannot inspect (a JSON part, or a binary part of a JSON media
// type, that is not valid JSON) is replaced whole by a marker, never passed
// on. Binary parts of other media types (images, audio, archives) are left
// alone: they are not text. The result's metadata counts what was replaced
// ([SanitizeMetaRedactions], [SanitizeMetaUninspected]), and a part
// replaced whole is logged as a warning. Redaction takes time linear in
// the size of the result and allocates about one copy of a part per
// redaction that changes it, nothing for a part it leaves as it is.
//
// Streamed text is redacted a line at a time: the end of a text delta after
// its last newline is held back until the next delta completes the line
// (or the attempt ends), so a secret cut across deltas never reaches
// observers in pieces; the redactions look for secrets that do not span
// lines (a line longer than 64 KiB goes out at its last space before its
// final 512 bytes; a "Bearer" ending a line waits for its token). Other
// parts are redacted one delta at a time. The pass over the whole result
// catches what a pattern of your own finds across lines, and a secret a
// long line's cut split, so the model never sees it (the result's deltas
// then start over, redacted). The message of a failure's cause is redacted
// too, since the result event's error field, an [Audit] line and
// Result.Err carry it: a cause it changes is wrapped, so errors.Is and
// errors.As still find what it wrapped. Redaction runs before truncation, so a secret is never cut
// into a piece that no longer matches.
//
// A structured result that a redaction made break the tool's output schema
// (the engine checks it as the filter let it through) is withheld: the
// call fails with an error that says so and names the paths, wrapping the
// engine's *[toolkit.OutputError]; the value before redaction holds the
// secret, the one after it breaks what the schema promises. Otherwise the
// state and error of the outcome are kept. Used with [Evict], add
// Evict first: Sanitize then runs inside it, so the stored result is
// redacted too (Evict's message is redacted either way); turn Sanitize's
// truncation off with SanitizeMaxBytes(0), or large results are cut before
// they can be stored.
func Sanitize(opts ...SanitizeOption) toolkit.Interceptor {
	cfg := &sanitizeConfig{placeholder: defaultSanitizePlaceholder, maxBytes: defaultSanitizeMaxBytes,
		count: toolkit.NewCallLocal[*sanitizeCount]()}
	for _, o := range opts {
		o(cfg)
	}
	return toolkit.Interceptor{
		Name: "sanitize",
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
			if len(cfg.redactors) == 0 {
				return cfg.apply(next(ctx, inv), nil)
			}
			// Once per call: a retry outside runs this again.
			count := cfg.count.LoadOrInit(inv, func() *sanitizeCount {
				count := &sanitizeCount{}
				inv.FilterStream(&sanitizeStream{cfg: cfg, count: count})
				return count
			})
			count.redactions.Store(0)
			count.uninspected.Store(0)
			out := next(ctx, inv)
			if oe := (*toolkit.OutputError)(nil); out.State == events.StateError && errors.As(out.Err, &oe) {
				if n := count.redactions.Load(); n > 0 {
					// The engine checked the result as the filter let it
					// through: redacted. The tool is not to blame.
					out = toolkit.Failure(events.StateError, &sanitizeSchemaError{tool: inv.Call.Name, n: n, cause: oe})
				}
			}
			out.Err = cfg.redactErr(out.Err)
			out = cfg.apply(out, count)
			if n := count.redactions.Load(); n > 0 {
				inv.Meta(SanitizeMetaRedactions, n)
			}
			if n := count.uninspected.Load(); n > 0 {
				inv.Meta(SanitizeMetaUninspected, n)
				inv.Logger().Warn().Str("tool", inv.Call.Name).Str("call", inv.Call.ID).Int64("parts", n).
					Msg("toolstream: sanitize replaced parts it could not inspect (invalid JSON)")
			}
			return out
		},
	}
}

// redactErr returns err with its message redacted. The message goes out
// of the process beside the content: in the result event's error field,
// in Audit's line, in Result.Err; the model's "Error: ..." line, made of
// it, is redacted as a delta. An error whose message holds nothing to
// redact is returned as it is; one that does is wrapped, so errors.Is and
// errors.As still find its causes (in process, where code may read them).
func (cfg *sanitizeConfig) redactErr(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	red, n := cfg.redact(msg)
	if n == 0 || red == msg {
		return err
	}
	return &sanitizedError{msg: red, err: err}
}

// sanitizedError is a cause whose message Sanitize redacted.
type sanitizedError struct {
	msg string
	err error
}

func (e *sanitizedError) Error() string { return e.msg }
func (e *sanitizedError) Unwrap() error { return e.err }

// sanitizeSchemaError is the cause of a call whose structured result,
// redacted, no longer matched the tool's output schema (a pattern, enum,
// format or maxLength that bound a value a redaction replaced). The result
// is withheld: the redacted one breaks the schema that code and MCP clients
// rely on, the one before redaction holds the secret. It names the paths,
// not the schema's problems (an enum's values would tell what was
// redacted), and wraps the engine's *toolkit.OutputError.
type sanitizeSchemaError struct {
	tool  string
	n     int64
	cause *toolkit.OutputError
}

func (e *sanitizeSchemaError) Error() string {
	var paths []string
	for _, p := range e.cause.Problems {
		path := p.Path
		if path == "" {
			path = "(root)"
		}
		if !slices.Contains(paths, path) {
			paths = append(paths, path)
		}
	}
	return fmt.Sprintf("the result of tool %q is withheld: it held data that may not be shown here (%d %s), and with that data redacted "+
		"it no longer matches the tool's output schema at %s. The tool ran; do not call it again for the same data, "+
		"and tell the user if they need it", e.tool, e.n, redactionsWord(e.n), strings.Join(paths, ", "))
}

func (e *sanitizeSchemaError) Unwrap() error { return e.cause }

func redactionsWord(n int64) string {
	if n == 1 {
		return "redaction"
	}
	return "redactions"
}

// sanitizeCount is one call's redaction state. The delta filter runs under
// the call's lock, where it cannot set metadata: it counts here and the
// interceptor reports.
//
// It also remembers a fingerprint of each large part the filter let
// through, so that the pass over the whole result skips a part that is
// exactly one filtered delta (the usual case: a tool that returns its
// result) instead of redacting it a second time. A part made of several
// deltas, or handed over by an inner interceptor, has no fingerprint and is
// redacted again. A fingerprint is 24 bytes per 32 KiB of result at most.
type sanitizeCount struct {
	redactions  atomic.Int64
	uninspected atomic.Int64

	mu       sync.Mutex
	filtered map[sanitizePrint]struct{}
}

// sanitizePrint identifies a part by type, size and a 64-bit hash with a
// per-process random seed: two different parts share one with probability
// 2^-64, and nobody outside can aim for it.
type sanitizePrint struct {
	typ  events.PartType
	size int
	hash uint64
}

// sanitizePrintMin is the smallest part worth a fingerprint: smaller ones
// cost less to redact again than to remember.
const sanitizePrintMin = 32 << 10

var sanitizeSeed = maphash.MakeSeed()

func sanitizePrintOf(p events.Part) (sanitizePrint, bool) {
	var b []byte
	switch p.Type {
	case events.PartText:
		if len(p.Text) < sanitizePrintMin {
			return sanitizePrint{}, false
		}
		return sanitizePrint{p.Type, len(p.Text), maphash.String(sanitizeSeed, p.Text)}, true
	case events.PartJSON:
		b = p.JSON
	default:
		b = p.Data
	}
	if len(b) < sanitizePrintMin {
		return sanitizePrint{}, false
	}
	return sanitizePrint{p.Type, len(b), maphash.Bytes(sanitizeSeed, b)}, true
}

// filter redacts a part that is not text and remembers it.
func (c *sanitizeCount) filter(cfg *sanitizeConfig, p events.Part) events.Part {
	p = cfg.redactPart(p, c)
	if fp, ok := sanitizePrintOf(p); ok {
		c.remember(fp)
	}
	return p
}

func (c *sanitizeCount) remember(fp sanitizePrint) {
	c.mu.Lock()
	if c.filtered == nil {
		c.filtered = map[sanitizePrint]struct{}{}
	}
	c.filtered[fp] = struct{}{}
	c.mu.Unlock()
}

// Streamed text is held back to the end of its line, at most
// sanitizeHoldMax bytes; a longer line goes out at its last space before
// its final sanitizeHoldTail bytes (or there, if it has none).
const (
	sanitizeHoldMax  = 64 << 10
	sanitizeHoldTail = 512
)

// sanitizeStream is Sanitize's stream filter. Text goes out in whole lines,
// redacted; the end of the text after its last newline waits for the rest
// of its line. It remembers the fingerprint of each run of text it let
// through (the text part it makes in the result), so that the pass over the
// whole result does not redact that part again.
type sanitizeStream struct {
	cfg   *sanitizeConfig
	count *sanitizeCount
	held  string

	run    maphash.Hash // of the text let through since the last other part
	runLen int
	// split: the run was let through in pieces cut where a match could
	// span the cut (a long line cut before its end, or a redaction that
	// matches across lines), so each piece's redaction may have missed
	// one: the pass over the whole result must not skip the run.
	split bool
}

func (f *sanitizeStream) Filter(p events.Part) []events.Part {
	if p.Type != events.PartText {
		out := f.Flush() // the held text comes first
		return append(out, f.count.filter(f.cfg, p))
	}
	text := f.held + p.Text
	cut := f.cfg.holdFrom(text, strings.LastIndexByte(text, '\n')+1)
	if len(text)-cut > sanitizeHoldMax {
		cut = len(text) - sanitizeHoldTail
		if i := strings.LastIndexAny(text[:cut], " \t"); i >= 0 {
			cut = i + 1
		} else {
			// Between two characters: a delta that ends inside one is not
			// UTF-8, and goes on the wire as U+FFFD.
			for cut > 0 && !utf8.RuneStart(text[cut]) {
				cut--
			}
		}
		f.split = true
	} else if cut > 0 && f.cfg.spansLines() {
		f.split = true
	}
	f.held = text[cut:]
	if cut == 0 {
		return nil
	}
	return []events.Part{f.let(text[:cut])}
}

// Flush lets the held text go, redacted, and ends the run of text.
func (f *sanitizeStream) Flush() []events.Part {
	var out []events.Part
	if f.held != "" {
		out = append(out, f.let(f.held))
		f.held = ""
	}
	f.endRun()
	return out
}

func (f *sanitizeStream) Reset() {
	f.held = ""
	f.run.Reset()
	f.runLen = 0
	f.split = false
}

// let redacts text that goes out.
func (f *sanitizeStream) let(text string) events.Part {
	p := f.cfg.redactPart(events.Text(text), f.count)
	if f.runLen == 0 {
		f.run.SetSeed(sanitizeSeed)
	}
	f.run.WriteString(p.Text)
	f.runLen += len(p.Text)
	return p
}

// endRun remembers the run of text let through as one part of the result.
func (f *sanitizeStream) endRun() {
	if f.runLen >= sanitizePrintMin && !f.split {
		f.count.remember(sanitizePrint{events.PartText, f.runLen, f.run.Sum64()})
	}
	f.run.Reset()
	f.runLen = 0
	f.split = false
}

// wasFiltered reports whether p is exactly a part the filter let through.
func (c *sanitizeCount) wasFiltered(p events.Part) bool {
	if c == nil {
		return false
	}
	fp, ok := sanitizePrintOf(p)
	if !ok {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, seen := c.filtered[fp]
	return seen
}

// apply cleans the whole result. It returns out unchanged (the same
// content slice) when there is nothing to do, so that no reset goes out.
func (cfg *sanitizeConfig) apply(out toolkit.Result, count *sanitizeCount) toolkit.Result {
	if out.State == events.StateSuspended {
		return out
	}
	content, changed := out.Content, false
	if len(cfg.redactors) > 0 {
		var redacted []events.Part
		for i, p := range content {
			if count.wasFiltered(p) {
				if redacted != nil {
					redacted = append(redacted, p)
				}
				continue
			}
			q, ch := cfg.redactPartChanged(p, count)
			if redacted == nil && ch {
				redacted = append(make([]events.Part, 0, len(content)), content[:i]...)
			}
			if redacted != nil {
				redacted = append(redacted, q)
			}
		}
		if redacted != nil {
			content, changed = redacted, true
		}
	}
	switch {
	case sanitizeEmpty(content):
		content, changed = []events.Part{events.Text(cfg.placeholder)}, true
	case cfg.maxBytes > 0 && sanitizeSize(content) > cfg.maxBytes:
		o := out
		o.Content = content
		content, changed = sanitizeTruncate(o, cfg.maxBytes, func(n int) string {
			return fmt.Sprintf("\n[truncated: %d more bytes]\n", n)
		}), true
	}
	if changed {
		out.Content = content
	}
	return out
}

// redactPart is the delta filter: it redacts one part.
func (cfg *sanitizeConfig) redactPart(p events.Part, count *sanitizeCount) events.Part {
	p, _ = cfg.redactPartChanged(p, count)
	return p
}

// redactPartChanged redacts one part and reports whether it changed.
func (cfg *sanitizeConfig) redactPartChanged(p events.Part, count *sanitizeCount) (events.Part, bool) {
	n := 0
	switch p.Type {
	case events.PartText:
		p.Text, n = cfg.redact(p.Text)
	case events.PartJSON:
		j, m, ok := cfg.redactJSON(p.JSON)
		if !ok {
			count.uninspect()
			return sanitizeUninspected(p, len(p.JSON)), true
		}
		if m > 0 {
			p.JSON, n = j, m
		}
	case events.PartBinary:
		switch sanitizeTextual(p.MediaType) {
		case textualJSON:
			j, m, ok := cfg.redactJSON(p.Data)
			if !ok {
				count.uninspect()
				return sanitizeUninspected(p, len(p.Data)), true
			}
			if m > 0 {
				p.Data, n = j, m
			}
		case textualText:
			// A read-only view of the bytes; a changed text is a new string.
			t, m := cfg.redact(unsafe.String(unsafe.SliceData(p.Data), len(p.Data)))
			if m > 0 {
				p.Data, n = []byte(t), m
			}
		}
	}
	if n == 0 {
		return p, false
	}
	if count != nil {
		count.redactions.Add(int64(n))
	}
	return p, true
}

func (c *sanitizeCount) uninspect() {
	if c != nil {
		c.uninspected.Add(1)
	}
}

// sanitizeUninspected is the marker that replaces a part that could not be
// inspected: a JSON string for a JSON part (it stays JSON), text otherwise.
func sanitizeUninspected(p events.Part, size int) events.Part {
	msg := fmt.Sprintf("[redacted: a part of %d bytes that is not valid JSON, so it could not be checked for secrets]", size)
	if p.Type == events.PartJSON {
		return events.Part{Type: events.PartJSON, JSON: appendJSONString(nil, msg)}
	}
	return events.Text(msg)
}

// redact applies every redaction to s, in order, and counts the matches
// replaced. It returns s itself when nothing matched.
func (cfg *sanitizeConfig) redact(s string) (string, int) {
	total := 0
	for i := range cfg.redactors {
		var n int
		s, n = cfg.redactors[i].replace(s)
		total += n
	}
	return s, total
}

// Kinds of binary media types, for redaction.
const (
	textualNo = iota
	textualText
	textualJSON
)

// sanitizeTextual says whether a binary part's media type is text that
// redaction reads, and whether it is JSON.
func sanitizeTextual(mediaType string) int {
	mt, _, err := mime.ParseMediaType(mediaType)
	if err != nil {
		// Parameters ParseMediaType refuses are still not part of the
		// type: "application/json; charset" is JSON.
		mt, _, _ = strings.Cut(mediaType, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
	}
	typ, sub, _ := strings.Cut(mt, "/")
	typ, sub = strings.TrimSpace(typ), strings.TrimSpace(sub)
	switch {
	case sub == "json" || strings.HasSuffix(sub, "+json"):
		return textualJSON
	case typ == "text",
		sub == "xml" || strings.HasSuffix(sub, "+xml"),
		sub == "yaml" || sub == "x-yaml" || strings.HasSuffix(sub, "+yaml"),
		sub == "javascript" || sub == "ecmascript" || sub == "x-javascript",
		sub == "x-ndjson" || sub == "jsonl" || sub == "x-jsonlines",
		sub == "x-www-form-urlencoded", sub == "csv", sub == "toml", sub == "sql", sub == "graphql":
		return textualText
	}
	return textualNo
}

// sanitizeEmpty reports whether content tells the model nothing: no parts,
// whitespace text, JSON null.
func sanitizeEmpty(content []events.Part) bool {
	for _, p := range content {
		switch p.Type {
		case events.PartText:
			if strings.TrimSpace(p.Text) != "" {
				return false
			}
		case events.PartJSON:
			if t := bytes.TrimSpace(p.JSON); len(t) > 0 && string(t) != "null" {
				return false
			}
		default:
			if !p.IsEmpty() {
				return false
			}
		}
	}
	return true
}

// sanitizeSize is the size of content as text (see events.ContentText),
// without building the text.
func sanitizeSize(content []events.Part) int {
	n := 0
	var prev events.Part
	for _, p := range content {
		if p.IsEmpty() {
			continue
		}
		if events.PartBreak(prev, p) {
			n++ // the newline that sets a JSON or binary part off
		}
		prev = p
		switch p.Type {
		case events.PartText:
			n += len(p.Text)
		case events.PartJSON:
			n += len(p.JSON)
		default:
			n += len(p.String())
		}
	}
	return n
}

// sanitizeTruncate cuts out's content to about limit bytes of text and adds
// marker(number of bytes left out). For a failure whose content ends with
// its "Error: ..." line, that line is kept after the marker, so the model
// still learns what went wrong. The content is copied, never changed in
// place.
func sanitizeTruncate(out toolkit.Result, limit int, marker func(omitted int) string) []events.Part {
	body, tail := out.Content, ""
	if out.State.IsError() && out.Err != nil {
		line := "Error: " + out.Err.Error()
		if n := len(body); n > 0 && len(line) <= limit/2 && body[n-1].Type == events.PartText && strings.HasSuffix(body[n-1].Text, line) {
			last := body[n-1]
			last.Text = strings.TrimSuffix(last.Text, line)
			body = append(body[:n-1:n-1], last)
			tail = line
		}
	}
	budget := max(limit-len(tail), 0)
	var kept []events.Part // AppendPart keeps no empty part
	for _, p := range body {
		if p.IsEmpty() {
			continue
		}
		// The newline the text rendering sets before a JSON or binary
		// part, or after one, costs a byte like the rest; one is kept
		// in reserve after a whole non-text part, for what follows it.
		sep := 0
		if n := len(kept); n > 0 && events.PartBreak(kept[n-1], p) {
			sep = 1
		}
		size := sanitizeSize([]events.Part{p})
		reserve := 0
		if p.Type != events.PartText {
			reserve = 1
		}
		if sep+size+reserve <= budget {
			kept = events.AppendPart(kept, p)
			budget -= sep + size
			continue
		}
		if budget > sep && p.Type != events.PartBinary {
			s := sanitizeCutString(p.String(), budget-sep) // a cut JSON value is no JSON: keep it as text
			if sep == 1 {
				s = "\n" + s // written out: text beside text gets none
			}
			kept = events.AppendPart(kept, events.Text(s))
		}
		break
	}
	// Left out: the text of the body (the whole content less the kept
	// Error line) after what is kept, up to the marker; whether a newline
	// comes before the marker depends on its first byte.
	probe := "m"
	if m := marker(0); m != "" {
		probe = m[:1]
	}
	head := sanitizeSize(append(slices.Clip(kept), events.Text(probe))) - 1
	omitted := max(sanitizeSize(out.Content)-len(tail)-head, 0)
	kept = events.AppendPart(kept, events.Text(marker(omitted)))
	if tail != "" {
		kept = events.AppendPart(kept, events.Text(tail))
	}
	return kept
}

// sanitizeCutString returns the longest prefix of s of at most n bytes that
// does not split a UTF-8 sequence.
func sanitizeCutString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
