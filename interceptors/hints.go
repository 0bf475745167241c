package interceptors

import (
	"fmt"

	"github.com/toolstream/toolstream/toolkit"
)

// Modes that read a tool's annotations (toolkit.Spec: ReadOnly and the
// MCP hints), beside [ReadOnly], which allows read-only tools and asks
// about every other one.
var (
	// StrictReadOnly lets read-only tools run and denies every other call no
	// rule covers: an agent that may look but never change anything (a
	// planner, a reviewer). Rules can still allow particular tools.
	StrictReadOnly Mode = func(s toolkit.Spec) Decision {
		if s.ReadOnly {
			return Allow
		}
		return Deny
	}
	// AskDestructive lets read-only tools and tools that only add (declared
	// with Destructive false) run, and asks about the destructive ones: a
	// tool that declares nothing is destructive, as in MCP.
	AskDestructive Mode = func(s toolkit.Spec) Decision {
		if a, _ := s.Annotations(); !a.DestructiveHint {
			return Allow
		}
		return Ask
	}
)

// modeReason says why the mode refused or asked about a call no rule covers.
func modeReason(tool string, s toolkit.Spec) string {
	switch {
	case s.ReadOnly:
		return fmt.Sprintf("no rule covers tool %q", tool)
	case s.Destructive != nil && *s.Destructive:
		return fmt.Sprintf("tool %q may delete or overwrite things (it is declared destructive) and no rule covers it", tool)
	}
	return fmt.Sprintf("tool %q may change things (it is not read-only) and no rule covers it", tool)
}

// retrySafe reports whether running a call of the tool again cannot do
// harm on its own account: read-only and idempotent tools, and tools that
// declare nothing about idempotence (see [Retry]).
func retrySafe(s toolkit.Spec) bool {
	a, _ := s.Annotations()
	return s.Idempotent == nil || a.IdempotentHint
}
