package interceptors

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/toolstream/toolstream/toolkit"
)

// ErrUnknownSuggestion: Approve was given a suggestion id the request did
// not offer.
var ErrUnknownSuggestion = errors.New("unknown suggestion")

// Grant is an allow rule a person adds to a session when approving a call:
// later calls it covers run without asking, in that session only. Its
// conditions add up (all must hold), so a grant never covers more than
// each of them says.
type Grant struct {
	// Tool is the tool's name (required).
	Tool string `json:"tool"`
	// Under, if set, is a folder: the call must have at least one path
	// argument, and every one of them must be this folder or inside it,
	// compared as cleaned text, case-sensitively and at component
	// boundaries ("./notes/../etc" and "./notes-evil" are not inside
	// "./notes"). Paths with a backslash or a NUL never match. Path
	// arguments are strings named like paths (path, file, dir, src, ...) or
	// looking like one (/, ./, ../, ~), at any depth, and object keys with
	// a slash, backslash or dot in them (a map of path to content).
	// Symbolic links are not followed: the grant is about the arguments'
	// text.
	Under string `json:"under,omitempty"`
	// Args, if set, are the exact arguments (as JSON; key order and spacing
	// do not matter, numbers must be written the same).
	Args json.RawMessage `json:"args,omitempty"`
}

// Suggestion is a rule offered with an approval request, which the person
// can accept with one click (Approve with WithSuggestion(ID)).
type Suggestion struct {
	// ID is stable: the same rule has the same id in every request.
	ID string `json:"id"`
	// Label says what accepting it does, for people. In a request it
	// shows invisible and bidirectional-control characters escaped (see
	// ApprovalRequest).
	Label string `json:"label"`
	// Grant is the rule it adds to the session.
	Grant Grant `json:"grant"`
}

// NewSuggestion makes a suggestion of a grant, with its stable id.
func NewSuggestion(label string, g Grant) Suggestion {
	if g.Under != "" {
		g.Under = path.Clean(g.Under)
	}
	if len(g.Args) > 0 {
		if c, err := canonicalJSON(g.Args); err == nil {
			g.Args = c
		}
	}
	kind := "tool"
	switch {
	case len(g.Args) > 0:
		kind = "args"
	case g.Under != "":
		kind = "path"
	}
	h := sha256.New()
	h.Write([]byte(g.Tool + "\x00" + g.Under + "\x00"))
	h.Write(g.Args)
	return Suggestion{ID: kind + "-" + hex.EncodeToString(h.Sum(nil))[:12], Label: label, Grant: g}
}

// Suggester makes the suggestions of an approval request from the tool's
// spec and the call's arguments (as the handler would receive them).
type Suggester func(spec toolkit.Spec, args json.RawMessage) []Suggestion

// WithSuggester replaces the suggestions approval requests carry
// (default DefaultSuggestions; nil offers none).
func WithSuggester(s Suggester) PermissionOption {
	return func(p *Permissions) { p.suggest = s }
}

// commandKeys name the argument of a tool that runs a command.
var commandKeys = []string{"command", "cmd", "script"}

// DefaultSuggestions offers, narrowest first: this exact call again (worded
// as "this exact command" when the call has a command argument), the
// tool on paths under the folder the call's path arguments share (when
// they share one below the working folder), and the tool for the rest of
// the session.
func DefaultSuggestions(spec toolkit.Spec, args json.RawMessage) []Suggestion {
	var out []Suggestion
	decoded, err := decodeJSON(args)
	obj, isObj := decoded.(map[string]any)
	if err == nil && isObj && len(obj) > 0 {
		label := fmt.Sprintf("Allow %s again with exactly these arguments", spec.Name)
		for _, k := range commandKeys {
			if cmd, ok := obj[k].(string); ok {
				label = fmt.Sprintf("Allow this exact command for %s: %s", spec.Name, clipLabel(cmd))
				break
			}
		}
		out = append(out, NewSuggestion(label, Grant{Tool: spec.Name, Args: args}))
		if dir, ok := suggestableDir(pathArgs(obj)); ok {
			out = append(out, NewSuggestion(fmt.Sprintf("Allow %s on paths under %s in this session", spec.Name, displayDir(dir)),
				Grant{Tool: spec.Name, Under: dir}))
		}
	}
	return append(out, NewSuggestion(fmt.Sprintf("Always allow %s in this session", spec.Name), Grant{Tool: spec.Name}))
}

// clipLabel shortens a command for a label: runs of spaces (U+0020 only)
// become one, and more than 80 characters are cut with "…". Other
// whitespace stays, to be shown escaped (see ApprovalRequest): a newline
// shown as a space would join two commands into one.
func clipLabel(s string) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == ' ' }), " ")
	if r := []rune(s); len(r) > 80 {
		return string(r[:79]) + "…"
	}
	return s
}

// canonicalJSON re-encodes a JSON value with sorted keys and no spaces,
// numbers as written.
func canonicalJSON(raw []byte) (json.RawMessage, error) {
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// sessionGrantsOf holds the grants approvals added, kept with the session
// and shared by every Permissions (its interceptor and its batch hook).
var sessionGrantsOf = toolkit.NewSessionLocal[*sessionGrants]()

func newSessionGrants() *sessionGrants { return &sessionGrants{} }

// sessionGrants are the grants approvals added to a session.
type sessionGrants struct {
	mu     sync.Mutex
	grants []Grant // Under cleaned, Args canonical
}

func (s *sessionGrants) add(g Grant) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.ContainsFunc(s.grants, func(x Grant) bool {
		return x.Tool == g.Tool && x.Under == g.Under && string(x.Args) == string(g.Args)
	}) {
		s.grants = append(s.grants, g)
	}
}

// covering returns the first grant that covers a call of tool with the
// given arguments. Arguments are decoded only if a grant of the tool looks
// at them.
func (s *sessionGrants) covering(tool string, raw json.RawMessage) (Grant, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var (
		decoded   any
		canonical json.RawMessage
		done      bool
		bad       bool
	)
	for _, g := range s.grants {
		if g.Tool != tool {
			continue
		}
		if g.Under == "" && len(g.Args) == 0 {
			return g, true
		}
		if !done {
			done = true
			var err error
			if decoded, err = decodeJSON(raw); err == nil {
				canonical, err = json.Marshal(decoded)
			}
			bad = err != nil
		}
		if bad {
			continue
		}
		if len(g.Args) > 0 && string(g.Args) != string(canonical) {
			continue
		}
		if g.Under != "" && !allUnder(pathArgs(decoded), g.Under) {
			continue
		}
		return g, true
	}
	return Grant{}, false
}

// allUnder: at least one path, and every one inside dir.
func allUnder(paths []pathArg, dir string) bool {
	if len(paths) == 0 {
		return false
	}
	for _, p := range paths {
		if !pathUnder(p.value, dir) {
			return false
		}
	}
	return true
}

// grantLabel says what a grant allows, for approval notes.
func grantLabel(g Grant) string {
	switch {
	case len(g.Args) > 0:
		return fmt.Sprintf("%s with exactly these arguments", g.Tool)
	case g.Under != "":
		return fmt.Sprintf("%s on paths under %s", g.Tool, displayDir(g.Under))
	}
	return g.Tool
}
