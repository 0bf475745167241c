package toolkit

// Annotations are a tool's hints as MCP's ToolAnnotations name them, with
// MCP's defaults applied: what [Definition.Annotations] carries. Like MCP's,
// they are hints for clients and people, not promises a client may rely
// on for its safety.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint"`
	DestructiveHint bool   `json:"destructiveHint"`
	IdempotentHint  bool   `json:"idempotentHint"`
	OpenWorldHint   bool   `json:"openWorldHint"`
}

// IsDestructive reports whether the tool may delete or overwrite data:
// false for a read-only tool, else Destructive, true when not given (MCP's
// default).
func (s Spec) IsDestructive() bool {
	if s.ReadOnly {
		return false
	}
	return s.Destructive == nil || *s.Destructive
}

// IsIdempotent reports whether calling the tool again with the same
// arguments has no further effect: true for a read-only tool (it has no
// effect at all), else Idempotent, false when not given (MCP's default).
func (s Spec) IsIdempotent() bool {
	if s.ReadOnly {
		return true
	}
	return s.Idempotent != nil && *s.Idempotent
}

// IsOpenWorld reports whether the tool reaches outside entities:
// OpenWorld, true when not given (MCP's default).
func (s Spec) IsOpenWorld() bool { return s.OpenWorld == nil || *s.OpenWorld }

// Annotations returns the spec's hints with the defaults applied, and
// whether the spec declares any (a title, read-only or a hint).
func (s Spec) Annotations() (Annotations, bool) {
	declared := s.Title != "" || s.ReadOnly || s.Destructive != nil || s.Idempotent != nil || s.OpenWorld != nil
	return Annotations{
		Title: s.Title, ReadOnlyHint: s.ReadOnly, DestructiveHint: s.IsDestructive(),
		IdempotentHint: s.IsIdempotent(), OpenWorldHint: s.IsOpenWorld(),
	}, declared
}

// ownHints gives the spec copies of its hints, so that the caller's
// variables cannot change a built tool.
func (s *Spec) ownHints() {
	for _, p := range []**bool{&s.Destructive, &s.Idempotent, &s.OpenWorld} {
		if *p != nil {
			*p = new(**p)
		}
	}
}
