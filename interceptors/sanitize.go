package interceptors

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// SanitizeName is the name of the interceptor [Sanitize] returns.
const SanitizeName = "sanitize"

// Defaults of [Sanitize].
const (
	DefaultSanitizePlaceholder = "[the tool returned no output]"
	DefaultSanitizeMaxBytes    = 64 << 10
)

// SanitizeOption configures [Sanitize].
type SanitizeOption func(*sanitizeConfig)

type sanitizeConfig struct {
	placeholder string
	maxBytes    int
	redactors   []sanitizeRedactor
}

// sanitizeRedactor replaces what re matches with repl (expanded as by
// regexp.Expand), for the matches accept agrees to (all if nil).
type sanitizeRedactor struct {
	name   string
	re     *regexp.Regexp
	repl   string
	accept func(s string, start, end int) bool
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
// JSON parts) is replaced with replacement, in which $1 or ${name} stand for
// the match's groups as in [regexp.Regexp.Expand]. A redaction with the name
// of an earlier one replaces it. The replacement should not itself match.
func Redact(name string, re *regexp.Regexp, replacement string) SanitizeOption {
	return sanitizeAdd(sanitizeRedactor{name: name, re: re, repl: replacement})
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

var sanitizeEmailRE = regexp.MustCompile(`[A-Za-z0-9_%+-]+(?:['.][A-Za-z0-9_%+-]+)*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z]{2,}\b`)

// RedactEmails replaces e-mail addresses with "[redacted email]"
// (redaction "email").
func RedactEmails() SanitizeOption {
	return sanitizeAdd(sanitizeRedactor{name: "email", re: sanitizeEmailRE, repl: "[redacted email]"})
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
	return sanitizeAdd(sanitizeRedactor{name: "phone", re: sanitizePhoneRE, repl: "[redacted phone number]", accept: sanitizePhone})
}

var sanitizeKeyRE = regexp.MustCompile(strings.Join([]string{
	`\bsk-[A-Za-z0-9_-]{20,}`,                    // OpenAI, Anthropic (sk-ant-...), sk-proj-...
	`\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}`,     // Stripe
	`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`,              // AWS access key ids
	`\bgh[pousr]_[A-Za-z0-9]{30,}`,               // GitHub tokens
	`\bgithub_pat_[A-Za-z0-9_]{30,}`,             // GitHub fine-grained tokens
	`\bxox[abposr]-[A-Za-z0-9-]{10,}`,            // Slack
	`\bAIza[0-9A-Za-z_-]{35}`,                    // Google API keys
	`(?i:\b(bearer\s+))[A-Za-z0-9._~+/-]{20,}=*`, // Authorization: Bearer <token>
}, "|"))

// RedactAPIKeys replaces API keys and tokens with "[redacted API key]"
// (redaction "api_key"): OpenAI and Anthropic keys (sk-...), Stripe keys,
// AWS access key ids (AKIA..., ASIA...), GitHub tokens (ghp_..., github_pat_...),
// Slack tokens (xoxb-..., xoxp-...), Google API keys (AIza...) and any long
// token after "Bearer " (the word "Bearer" is kept).
func RedactAPIKeys() SanitizeOption {
	return sanitizeAdd(sanitizeRedactor{name: "api_key", re: sanitizeKeyRE, repl: "${1}[redacted API key]"})
}

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
//     [RedactAPIKeys]) apply to text and to the strings of JSON parts, in
//     the order they were added, first to each delta as it streams, so that
//     observers and UIs do not see the secrets either, and then to the
//     whole result. Binary parts are left alone.
//
// Deltas are redacted one at a time: a secret split across two deltas can
// reach observers unredacted. The pass over the whole result still catches
// it, so the model never sees it (the result's deltas then start over,
// redacted). Redaction runs before truncation, so a secret is never cut
// into a piece that no longer matches.
//
// The state and error of the outcome are kept. Used with [Evict], add
// Evict first: Sanitize then runs inside it, so the stored result is
// redacted too (Evict's message is redacted either way); turn Sanitize's
// truncation off with SanitizeMaxBytes(0), or large results are cut before
// they can be stored.
func Sanitize(opts ...SanitizeOption) toolkit.Interceptor {
	cfg := &sanitizeConfig{placeholder: DefaultSanitizePlaceholder, maxBytes: DefaultSanitizeMaxBytes}
	for _, o := range opts {
		o(cfg)
	}
	return toolkit.Interceptor{
		Name: SanitizeName,
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
			if len(cfg.redactors) > 0 {
				// Once per call: a retry outside runs this again.
				if _, loaded := inv.CallValues().LoadOrStore(sanitizeFilterKey{cfg}, true); !loaded {
					inv.FilterDeltas(cfg.redactPart)
				}
			}
			return cfg.apply(next(ctx, inv))
		},
	}
}

type sanitizeFilterKey struct{ cfg *sanitizeConfig }

// apply cleans the whole result. It returns out unchanged (the same
// content slice) when there is nothing to do, so that no reset goes out.
func (cfg *sanitizeConfig) apply(out toolkit.Outcome) toolkit.Outcome {
	if out.State == toolkit.StateSuspended {
		return out
	}
	content, changed := out.Content, false
	if len(cfg.redactors) > 0 {
		var redacted []toolkit.Part
		for i, p := range content {
			q := cfg.redactPart(p)
			if redacted == nil && !sanitizeSamePart(p, q) {
				redacted = append(make([]toolkit.Part, 0, len(content)), content[:i]...)
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
		content, changed = []toolkit.Part{events.Text(cfg.placeholder)}, true
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

func sanitizeSamePart(a, b toolkit.Part) bool {
	return a.Type == b.Type && a.Text == b.Text && bytes.Equal(a.JSON, b.JSON)
}

// redactPart is the delta filter: it redacts one part.
func (cfg *sanitizeConfig) redactPart(p toolkit.Part) toolkit.Part {
	switch p.Type {
	case events.PartText:
		p.Text = cfg.redact(p.Text)
	case events.PartJSON:
		if j, ok := cfg.redactJSON(p.JSON); ok {
			p.JSON = j
		}
	}
	return p
}

func (cfg *sanitizeConfig) redact(s string) string {
	for _, r := range cfg.redactors {
		s = r.replace(s)
	}
	return s
}

func (r *sanitizeRedactor) replace(s string) string {
	ms := r.re.FindAllStringSubmatchIndex(s, -1)
	if ms == nil {
		return s
	}
	var out []byte
	last := 0
	for _, m := range ms {
		if r.accept != nil && !r.accept(s, m[0], m[1]) {
			continue
		}
		out = append(out, s[last:m[0]]...)
		out = r.re.ExpandString(out, r.repl, s, m)
		last = m[1]
	}
	if out == nil {
		return s
	}
	return string(append(out, s[last:]...))
}

// redactJSON redacts the strings (keys and values) of a JSON value. It
// reports false when nothing changed, leaving the original bytes (and their
// formatting) alone.
func (cfg *sanitizeConfig) redactJSON(raw json.RawMessage) (json.RawMessage, bool) {
	if bytes.IndexByte(raw, '\\') < 0 && cfg.redact(string(raw)) == string(raw) {
		return nil, false // no match anywhere, escapes aside
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, false
	}
	v, changed := cfg.redactValue(v)
	if !changed {
		return nil, false
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, false
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), true
}

func (cfg *sanitizeConfig) redactValue(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		r := cfg.redact(x)
		return r, r != x
	case []any:
		changed := false
		for i, e := range x {
			var c bool
			x[i], c = cfg.redactValue(e)
			changed = changed || c
		}
		return x, changed
	case map[string]any:
		changed := false
		out := make(map[string]any, len(x))
		for k, e := range x {
			e, c := cfg.redactValue(e)
			rk := cfg.redact(k)
			out[rk] = e
			changed = changed || c || rk != k
		}
		return out, changed
	}
	return v, false
}

// sanitizeEmpty reports whether content tells the model nothing: no parts,
// whitespace text, JSON null.
func sanitizeEmpty(content []toolkit.Part) bool {
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
func sanitizeSize(content []toolkit.Part) int {
	n := 0
	for _, p := range content {
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
func sanitizeTruncate(out toolkit.Outcome, limit int, marker func(omitted int) string) []toolkit.Part {
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
	var kept []toolkit.Part
	omitted := 0
	for _, p := range body {
		size := sanitizeSize([]toolkit.Part{p})
		switch {
		case size <= budget:
			kept = events.AppendPart(kept, p)
			budget -= size
		case budget > 0 && p.Type != events.PartBinary:
			s := sanitizeCutString(p.String(), budget) // a cut JSON value is no JSON: keep it as text
			kept = events.AppendPart(kept, events.Text(s))
			omitted += size - len(s)
			budget = 0
		default:
			omitted += size
			budget = 0
		}
	}
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
