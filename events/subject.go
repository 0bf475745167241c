package events

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// defaultPrefix is the subject prefix used when none is configured.
const defaultPrefix = "toolstream"

// sessionToken is the call token of session-level events, the ones that are
// not about one call: <prefix>.<session>._.<type>. [EncodeToken] never
// produces it, so it cannot collide with a call id.
const sessionToken = "_"

const (
	maxPlainToken = 64  // longest id used as is
	maxPrefix     = 128 // longest prefix, in bytes
	encodedMark   = '~' // first byte of an encoded token
)

// ErrInvalidSubject is wrapped by the errors of [NewSubjects] and
// [Subjects.Parse].
var ErrInvalidSubject = errors.New("events: invalid subject")

// plainByte marks the bytes allowed after the first one of a plain token;
// the first one must also not be '_' or '-'.
var plainByte = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	t['_'] = true
	t['-'] = true
	return t
}()

// isPlain reports whether id matches ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$.
func isPlain(id string) bool {
	if len(id) == 0 || len(id) > maxPlainToken || id[0] == '_' || id[0] == '-' {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !plainByte[id[i]] {
			return false
		}
	}
	return true
}

// EncodeToken turns an id (a session id, a call id, an event type) into one
// NATS subject token. Ids come from outside and are untrusted, so this is a
// protocol rule that implementations in other languages follow exactly:
//
//   - An id that matches ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$ is used as is.
//   - Any other id (empty, with '.', '*', '>', spaces or non-ASCII, starting
//     with '_' or '-', longer than 64 bytes, not valid UTF-8, anything) becomes
//     '~' followed by the unpadded base64url encoding (RFC 4648 §5, alphabet
//     A-Z a-z 0-9 - _, no '=') of its bytes. The empty id becomes "~".
//
// So a token never contains '.', '*', '>' or whitespace; a plain token never
// starts with '~' or '_'; the token "_", reserved for session-level events,
// is never produced; and distinct ids give distinct tokens, so a
// subscription to one session's subjects cannot match another session's
// events.
func EncodeToken(id string) string {
	if isPlain(id) {
		return id
	}
	enc := base64.RawURLEncoding
	b := make([]byte, 1, 1+enc.EncodedLen(len(id)))
	b[0] = encodedMark
	b = enc.AppendEncode(b, []byte(id))
	return string(b)
}

// decodeToken is the inverse of [EncodeToken]: it returns the id, or why
// the token is invalid. It accepts exactly the tokens EncodeToken produces
// and rejects everything else (the reserved "_", '~' followed by anything
// but canonical unpadded base64url, '~' encoding an id that is sent as is,
// a token that is neither plain nor encoded).
func decodeToken(tok string) (id, reason string) {
	switch {
	case tok == "":
		return "", "empty"
	case tok == sessionToken:
		return "", `"_" is reserved for session-level events`
	case tok[0] == encodedMark:
		enc := base64.RawURLEncoding
		b, err := enc.DecodeString(tok[1:])
		if err != nil {
			return "", "bad base64url after '~': " + err.Error()
		}
		id = string(b)
		if isPlain(id) {
			return "", fmt.Sprintf("encodes %q, which must be sent as is", id)
		}
		// The decoder skips newlines and ignores non-zero trailing bits:
		// only the canonical form is accepted, so that each id has one token.
		if enc.EncodeToString(b) != tok[1:] {
			return "", "non-canonical base64url after '~'"
		}
		return id, ""
	case isPlain(tok):
		return tok, ""
	}
	return "", "neither a plain id ([A-Za-z0-9][A-Za-z0-9_-]{0,63}) nor '~' and base64url"
}

// Subjects builds and parses the NATS subjects of events:
//
//	<prefix>.<session>.<call>.<type>   an event of one call
//	<prefix>.<session>._.<type>        a session-level event (no call)
//
// Session ids, call ids and types are turned into tokens with
// [EncodeToken]; every protocol type is a plain token, so types appear as
// is. The zero value uses the prefix "toolstream"; use [NewSubjects] to have a
// configured prefix checked.
type Subjects struct {
	// Prefix is one or more dot-separated tokens; "" means "toolstream".
	Prefix string
}

// NewSubjects returns Subjects under prefix ("" means "toolstream"). The
// prefix must be dot-separated non-empty tokens of [A-Za-z0-9_-] (so no
// wildcards), at most 128 bytes in all.
func NewSubjects(prefix string) (Subjects, error) {
	if prefix == "" {
		return Subjects{Prefix: defaultPrefix}, nil
	}
	if len(prefix) > maxPrefix {
		return Subjects{}, fmt.Errorf("%w prefix %q: longer than %d bytes", ErrInvalidSubject, prefix, maxPrefix)
	}
	for tok := range strings.SplitSeq(prefix, ".") {
		if tok == "" {
			return Subjects{}, fmt.Errorf("%w prefix %q: empty token", ErrInvalidSubject, prefix)
		}
		for i := 0; i < len(tok); i++ {
			if !plainByte[tok[i]] {
				return Subjects{}, fmt.Errorf("%w prefix %q: tokens may only hold A-Z a-z 0-9 _ -", ErrInvalidSubject, prefix)
			}
		}
	}
	return Subjects{Prefix: prefix}, nil
}

func (s Subjects) prefix() string {
	if s.Prefix == "" {
		return defaultPrefix
	}
	return s.Prefix
}

// Event returns the subject of ev: a session-level subject when ev.Call is
// empty.
func (s Subjects) Event(ev *Event) string {
	return s.Call(ev.Session, ev.Call, string(ev.Type))
}

// Call returns the subject of an event of type typ of one call. An empty call
// id gives the session-level subject, as for [Subjects.Event].
func (s Subjects) Call(session, call, typ string) string {
	prefix, tokens := s.CallBase(session, call)
	return prefix + tokens + EncodeToken(typ)
}

// CallBase returns what the subjects of one call's events start with: the
// prefix and a dot, and "<session>.<call>." (the call token "_"
// when call is empty), which the publisher also uses for message ids.
func (s Subjects) CallBase(session, call string) (prefix, tokens string) {
	callTok := sessionToken
	if call != "" {
		callTok = EncodeToken(call)
	}
	return s.prefix() + ".", EncodeToken(session) + "." + callTok + "."
}

// Session returns the wildcard subject of everything of one session:
// <prefix>.<session>.>.
func (s Subjects) Session(session string) string {
	return s.prefix() + "." + EncodeToken(session) + ".>"
}

// CallAll returns the wildcard subject of every event of one call:
// <prefix>.<session>.<call>.*.
func (s Subjects) CallAll(session, call string) string {
	return s.prefix() + "." + EncodeToken(session) + "." + EncodeToken(call) + ".*"
}

// AllOfType returns the wildcard subject of the events of type t of all
// sessions and calls: <prefix>.*.*.<type>.
func (s Subjects) AllOfType(t Type) string {
	return s.prefix() + ".*.*." + EncodeToken(string(t))
}

// All returns the wildcard subject of every event under the prefix:
// <prefix>.>.
func (s Subjects) All() string {
	return s.prefix() + ".>"
}

// Events returns the wildcard subject that matches every event subject
// under the prefix and nothing else: <prefix>.*.*.* (an event's subject
// always has a session, a call and a type token). What a stream should
// keep: other subjects under the prefix, such as remote tool calls on
// <prefix>._tools.<tool> (package remote), are not events.
func (s Subjects) Events() string {
	return s.prefix() + ".*.*.*"
}

// Parse splits an event subject into session id, call id ("" for a
// session-level event) and type. It accepts exactly the subjects
// [Subjects.Event] produces for events with a non-empty type, and returns an
// error wrapping [ErrInvalidSubject] for anything else, wildcard subjects
// included.
func (s Subjects) Parse(subject string) (session, call string, typ Type, err error) {
	p := s.prefix()
	if len(subject) <= len(p) || subject[len(p)] != '.' || subject[:len(p)] != p {
		return "", "", "", fmt.Errorf("%w %q: not under prefix %q", ErrInvalidSubject, subject, p)
	}
	rest := subject[len(p)+1:]
	var toks [3]string
	for i := range toks {
		j := strings.IndexByte(rest, '.')
		if i == len(toks)-1 {
			if j >= 0 {
				return "", "", "", fmt.Errorf("%w %q: more than 3 tokens after the prefix", ErrInvalidSubject, subject)
			}
			j = len(rest)
		} else if j < 0 {
			return "", "", "", fmt.Errorf("%w %q: fewer than 3 tokens after the prefix", ErrInvalidSubject, subject)
		}
		toks[i], rest = rest[:j], rest[min(j+1, len(rest)):]
	}
	bad := func(what, tok, reason string) error {
		return fmt.Errorf("%w %q: %s token %q: %s", ErrInvalidSubject, subject, what, tok, reason)
	}
	var reason string
	if session, reason = decodeToken(toks[0]); reason != "" {
		return "", "", "", bad("session", toks[0], reason)
	}
	if toks[1] != sessionToken {
		if call, reason = decodeToken(toks[1]); reason != "" {
			return "", "", "", bad("call", toks[1], reason)
		}
		if call == "" {
			return "", "", "", bad("call", toks[1], `an empty call id is sent as "_"`)
		}
	}
	t, reason := decodeToken(toks[2])
	if reason == "" && t == "" {
		reason = "empty type"
	}
	if reason != "" {
		return "", "", "", bad("type", toks[2], reason)
	}
	return session, call, Type(t), nil
}
