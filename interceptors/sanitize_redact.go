package interceptors

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"
)

// How redaction stays linear with bounded memory: a redactor never asks the
// regexp package for all matches at once (one slice per match), it finds
// one match at a time and copies the text into a single output buffer,
// allocated only when the first match is accepted. The built-in redactions
// also never run their regexp over text that cannot hold a match: each has
// a finder that skips, at the speed of a byte loop, to the only places a
// match can be (a word starting like a key, the run of address characters
// around an "@", a run of phone characters with at least 7 digits), and
// runs the regexp there alone. Go's regexp engine runs at a few MB/s on
// patterns without a literal prefix; the finders are what make redaction
// run at hundreds of MB/s on ordinary text (see docs/benchmarks.md).

// sanitizeRedactor replaces what re matches with repl (expanded as by
// regexp.Expand), for the matches accept agrees to (all if nil).
type sanitizeRedactor struct {
	name   string
	re     *regexp.Regexp
	repl   string
	accept func(s string, start, end int) bool

	// find, for the built-in redactions, returns the first match in s at
	// or after from (absolute indices, as re would give them searching all
	// of s), or nil. w is the finder's memory across the finds of one pass.
	find func(s string, from int, w *sanitizeWindow) []int
	// lookback, for a custom pattern that looks at the text before a match
	// (\b, ^, \B), is the pattern with one rune of context in front, so
	// that a search can start in the middle of the text (see findCustom).
	lookback *regexp.Regexp

	// spansLines: the pattern may match a newline (a custom pattern), so
	// redacting text a line at a time may miss a match.
	spansLines bool
	// tail, for a built-in pattern that may match a newline, returns where
	// a match that could go on past the end of s starts, or -1.
	tail func(s string) int
}

// newCustomRedactor builds a redactor of a user's pattern.
func newCustomRedactor(name string, re *regexp.Regexp, repl string) sanitizeRedactor {
	r := sanitizeRedactor{name: name, re: re, repl: repl, spansLines: true}
	prog, err := syntax.Parse(re.String(), syntax.Perl)
	if err == nil {
		r.spansLines = matchesNewline(prog)
	}
	if err == nil && looksBack(prog) {
		// One rune of context, then the lazy scan of an unanchored search,
		// then the pattern: a match of the pattern at or after the context
		// with the pattern's groups shifted by one.
		r.lookback = regexp.MustCompile(`^(?s:.)(?s:.)*?(` + re.String() + `)`)
	}
	return r
}

// looksBack reports whether a pattern has an assertion that depends on
// the text before the position where it is tested.
func looksBack(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpBeginText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	}
	for _, sub := range re.Sub {
		if looksBack(sub) {
			return true
		}
	}
	return false
}

// matchesNewline reports whether a pattern may match a newline.
func matchesNewline(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpAnyChar:
		return true
	case syntax.OpLiteral:
		return slices.Contains(re.Rune, '\n')
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i] <= '\n' && '\n' <= re.Rune[i+1] {
				return true
			}
		}
		return false
	}
	for _, sub := range re.Sub {
		if matchesNewline(sub) {
			return true
		}
	}
	return false
}

// bearerTail returns where a "Bearer" that ends s, followed by nothing but
// white space, starts (its token may come on the next line: the key
// pattern's \s+ spans lines), or -1.
func bearerTail(s string) int {
	t := strings.TrimRight(s, " \t\r\n\v\f")
	const word = "bearer"
	if len(t) < len(word) || !strings.EqualFold(t[len(t)-len(word):], word) {
		return -1
	}
	at := len(t) - len(word)
	if at > 0 && asciiWord(t[at-1]) {
		return -1
	}
	return at
}

// sanitizeWindow is the run of bytes a finder is searching, [lo, hi),
// kept across the finds of one pass over a text so that a run holding many
// matches is measured once, not once per match (which would be quadratic).
type sanitizeWindow struct {
	lo, hi   int
	measured int // bytes the finder looked at to find runs, for tests
}

// next returns the first match in s at or after from, or nil.
func (r *sanitizeRedactor) next(s string, from int, w *sanitizeWindow) []int {
	if r.find != nil {
		return r.find(s, from, w)
	}
	return r.findCustom(s, from)
}

// findCustom finds the next match of a user's pattern as a search of the
// whole of s would, holding one match at a time.
func (r *sanitizeRedactor) findCustom(s string, from int) []int {
	if from == 0 || r.lookback == nil {
		m := r.re.FindStringSubmatchIndex(s[from:])
		return shift(m, from)
	}
	_, w := utf8.DecodeLastRuneInString(s[:from])
	m := r.lookback.FindStringSubmatchIndex(s[from-w:])
	if m == nil {
		return nil
	}
	return shift(m[2:], from-w) // drop the context and the scan
}

// shift moves match indices found in s[off:] to indices in s, in place.
func shift(m []int, off int) []int {
	if off != 0 {
		for i, v := range m {
			if v >= 0 {
				m[i] = v + off
			}
		}
	}
	return m
}

// replace returns s with the accepted matches replaced, and how many.
// When nothing matches it returns s itself and allocates nothing.
func (r *sanitizeRedactor) replace(s string) (string, int) {
	out, n, _ := r.replaceMeasured(s)
	return out, n
}

// replaceMeasured is replace, also returning how many bytes the finder
// looked at to find runs: tests hold it to a small multiple of len(s).
func (r *sanitizeRedactor) replaceMeasured(s string) (string, int, int) {
	var (
		b       strings.Builder
		scratch []byte
		last, n int
		w       sanitizeWindow
	)
	for pos := 0; pos <= len(s); {
		m := r.next(s, pos, &w)
		if m == nil {
			break
		}
		if m[1] == m[0] { // an empty match replaces nothing: step over
			_, w := utf8.DecodeRuneInString(s[m[1]:])
			pos = m[1] + max(w, 1)
			continue
		}
		pos = m[1]
		if r.accept != nil && !r.accept(s, m[0], m[1]) {
			continue
		}
		if n == 0 {
			b.Grow(len(s) + len(s)/8 + 64)
		}
		b.WriteString(s[last:m[0]])
		scratch = r.re.ExpandString(scratch[:0], r.repl, s, m)
		b.Write(scratch)
		last = m[1]
		n++
	}
	if n == 0 {
		return s, 0, w.measured
	}
	b.WriteString(s[last:])
	return b.String(), n, w.measured
}

// asciiWord reports whether c is a word character for \b (ASCII letters,
// digits and underscore).
func asciiWord(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

// byteSet is a set of bytes, for the finders' loops.
type byteSet [256]bool

func newByteSet(chars string) *byteSet {
	var s byteSet
	for i := 0; i < len(chars); i++ {
		s[chars[i]] = true
	}
	return &s
}

func (set *byteSet) addRange(lo, hi byte) *byteSet {
	for c := int(lo); c <= int(hi); c++ {
		set[c] = true
	}
	return set
}

// The built-in API key pattern, anchored: every alternative starts with a
// literal and a word boundary before it, which findKey checks itself so
// that the regexp runs only where a key can start.
var (
	sanitizeKeyRE = regexp.MustCompile(`^(?:` + strings.Join([]string{
		`sk-[A-Za-z0-9_-]{20,}`,                    // OpenAI, Anthropic (sk-ant-...), sk-proj-...
		`[sr]k_(?:live|test)_[A-Za-z0-9]{16,}`,     // Stripe
		`(?:AKIA|ASIA)[0-9A-Z]{16}\b`,              // AWS access key ids
		`gh[pousr]_[A-Za-z0-9]{30,}`,               // GitHub tokens
		`github_pat_[A-Za-z0-9_]{30,}`,             // GitHub fine-grained tokens
		`xox[abposr]-[A-Za-z0-9-]{10,}`,            // Slack
		`AIza[0-9A-Za-z_-]{35}`,                    // Google API keys
		`(?i:(bearer\s+))[A-Za-z0-9._~+/-]{20,}=*`, // Authorization: Bearer <token>
	}, "|") + `)`)
	sanitizeKeyFirst = newByteSet("srAgxbB")
)

// findKey finds the next API key: a word that starts like one, then the
// anchored pattern.
func findKey(s string, from int, _ *sanitizeWindow) []int {
	for c := from; c < len(s); c++ {
		if !sanitizeKeyFirst[s[c]] || c > 0 && asciiWord(s[c-1]) || !keyStart(s[c:]) {
			continue
		}
		if m := sanitizeKeyRE.FindStringSubmatchIndex(s[c:]); m != nil {
			return shift(m, c)
		}
	}
	return nil
}

// keyStart reports whether t starts like one of the keys: a cheap test
// before the regexp.
func keyStart(t string) bool {
	has := func(p string) bool { return strings.HasPrefix(t, p) }
	switch t[0] {
	case 's':
		return has("sk-") || has("sk_")
	case 'r':
		return has("rk_")
	case 'A':
		return has("AKIA") || has("ASIA") || has("AIza")
	case 'g':
		return len(t) >= 4 && t[1] == 'h' && strings.IndexByte("pousr", t[2]) >= 0 && t[3] == '_' || has("github_pat_")
	case 'x':
		return has("xox")
	}
	return len(t) >= 6 && strings.EqualFold(t[:6], "bearer") // b, B
}

var (
	// sanitizeEmailRE has no assertion on the text before a match, so a
	// search may start anywhere.
	sanitizeEmailRE    = regexp.MustCompile(`[A-Za-z0-9_%+-]+(?:['.][A-Za-z0-9_%+-]+)*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z]{2,}\b`)
	sanitizeEmailBytes = newByteSet("_%+'.@-").addRange('a', 'z').addRange('A', 'Z').addRange('0', '9')
)

// findEmail finds the next e-mail address. Every byte of an address is in
// sanitizeEmailBytes, so an address lies inside the run of such bytes
// around an "@": the regexp searches that run alone (and the rune after
// it, for the final \b), which gives what a search of the whole text would.
func findEmail(s string, from int, w *sanitizeWindow) []int {
	for from < len(s) {
		if from >= w.hi { // past the run: find the next one
			at := strings.IndexByte(s[from:], '@')
			if at < 0 {
				return nil
			}
			at += from
			lo, hi := at, at+1
			for lo > from && sanitizeEmailBytes[s[lo-1]] {
				lo--
			}
			for hi < len(s) && sanitizeEmailBytes[s[hi]] {
				hi++
			}
			w.lo, w.hi, from = lo, hi, lo
			w.measured += hi - lo
		}
		if m := searchRun(sanitizeEmailRE, s, from, w.hi); m != nil {
			return m
		}
		from = w.hi
	}
	return nil
}

// searchRun searches s[lo:hi] and the rune after it (context for a final
// assertion; it cannot be part of a match) for the first match of re.
func searchRun(re *regexp.Regexp, s string, lo, hi int) []int {
	end := hi
	if end < len(s) {
		_, w := utf8.DecodeRuneInString(s[end:])
		end += w
	}
	m := re.FindStringSubmatchIndex(s[lo:end])
	return shift(m, lo)
}

var (
	sanitizePhoneBytes = newByteSet("+ .()-").addRange('0', '9')
)

// findPhone finds the next phone number candidate. Every byte of one is in
// sanitizePhoneBytes, and sanitizePhone accepts only candidates with 7
// digits or more: so the regexp searches only the runs of such bytes that
// hold 7 digits.
func findPhone(s string, from int, w *sanitizeWindow) []int {
	for from < len(s) {
		if from >= w.hi { // past the run: find the next one with 7 digits
			c := from
			for c < len(s) && (s[c] < '0' || s[c] > '9') {
				c++
			}
			if c == len(s) {
				return nil
			}
			lo, hi, digits := c, c, 0
			for lo > from && sanitizePhoneBytes[s[lo-1]] {
				lo--
			}
			for hi < len(s) && sanitizePhoneBytes[s[hi]] {
				if s[hi] >= '0' && s[hi] <= '9' {
					digits++
				}
				hi++
			}
			w.measured += hi - lo
			if digits < 7 {
				from = hi
				continue
			}
			w.lo, w.hi, from = lo, hi, lo
		}
		if m := searchRun(sanitizePhoneRE, s, from, w.hi); m != nil {
			return m
		}
		from = w.hi
	}
	return nil
}
