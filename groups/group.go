// Package groups lets a model keep its context focused: tools come in named
// groups that are switched on and off per session, by code and by the model
// itself through the reset_tools meta tool.
//
// Tools registered in no group form the basic group and are always visible.
// The name "basic" (BasicGroup) is reserved for them: no group may be defined
// with it, switched off, or listed in reset_tools.
// A tool may belong to several groups; it is visible when it is basic or in
// at least one active group. A session starts with the groups' defaults
// (Group.Active); changes by code (Manager.SetActive, Activate, Deactivate)
// and by the model (reset_tools) go through one store, atomically, so that
// neither overwrites the other, and each change emits a session-level
// "groups" event.
//
// A CodeOnly group is code's alone: the model never sees it in reset_tools
// or tool_search, and cannot switch it.
//
// For toolkits too large to show at once, WithToolSearch adds the
// tool_search meta tool: the model searches the names and descriptions of
// inactive groups and their tools and gets the groups to switch on, ranked.
//
// A reset_tools call is not concurrency-safe: in a batch, the calls after it
// start only once it has finished, and see the groups it set; the calls
// before it see the groups as they were.
package groups

import (
	"errors"
	"fmt"
	"slices"

	"github.com/toolstream/toolstream/toolkit"
)

// MetaTool is the name of the meta tool the model switches groups with.
const MetaTool = "reset_tools"

// BasicGroup is the reserved name of the tools registered in no group. It is
// always active: a group with this name cannot be defined, it cannot be
// switched off, and reset_tools does not list it.
const BasicGroup = "basic"

// EventType is the type of the session-level event a change of active groups
// emits. Its Data is a Change.
const EventType = "groups"

// Errors for errors.Is.
var (
	// ErrUnknownGroup: no group has that name.
	ErrUnknownGroup = errors.New("groups: unknown group")
	// ErrDuplicateGroup: a group with that name exists already.
	ErrDuplicateGroup = errors.New("groups: group already exists")
	// ErrInvalidGroup: a group definition is not usable.
	ErrInvalidGroup = errors.New("groups: invalid group")
	// ErrReservedGroup: the basic group was defined, removed or switched
	// off (see BasicGroup). It wraps ErrInvalidGroup.
	ErrReservedGroup = fmt.Errorf("%w: %q is reserved", ErrInvalidGroup, BasicGroup)
)

// Group is a named set of tools the model switches on and off (or, when
// CodeOnly, only code does).
type Group struct {
	// Name identifies the group; it is also the group's key in reset_tools'
	// arguments, so it follows tool naming: ^[a-zA-Z0-9_-]{1,64}$.
	Name string
	// Description says what the group is for: the model reads it to decide
	// whether to activate the group.
	Description string
	// Instructions say how to use the group's tools: the model gets them
	// when it activates the group.
	Instructions string
	// Tools are the names of the member tools.
	Tools []string
	// Active is the group's state in a session that has not changed it.
	Active bool
	// CodeOnly makes a group that only code switches (SetActive, Activate,
	// Deactivate, ActivateForCall) and the model never sees: it is not in
	// reset_tools or tool_search, a reset_tools call leaves it as it is and
	// is refused, as for a group that does not exist, when it names it. Its
	// tools are shown when it is active, like any group's; the "groups"
	// event reports it (the event is for people). For tools an application
	// grants by policy (a plan, a role, a stage of a workflow), not by the
	// model's choice. It needs no Description, and its Instructions are
	// never shown: put what the model needs in the prompt.
	CodeOnly bool
}

func (g Group) check() error {
	if err := toolkit.CheckToolName(g.Name); err != nil {
		return fmt.Errorf("%w %q: name: %v", ErrInvalidGroup, g.Name, err)
	}
	if g.Name == BasicGroup {
		return fmt.Errorf("%w: the basic group is the tools registered in no group, always active; "+
			"to make tools always visible, leave them out of every group, or give your group another name", ErrReservedGroup)
	}
	if g.Name == MetaTool || g.Name == SearchTool {
		return fmt.Errorf("%w %q: the name is reserved", ErrInvalidGroup, g.Name)
	}
	if g.Description == "" && !g.CodeOnly {
		return fmt.Errorf("%w %q: a description is required: the model decides from it", ErrInvalidGroup, g.Name)
	}
	if len(g.Tools) == 0 {
		return fmt.Errorf("%w %q: no tools", ErrInvalidGroup, g.Name)
	}
	return nil
}

func (g Group) clone() Group {
	g.Tools = slices.Clone(g.Tools)
	return g
}

// Change describes a change of a session's active groups: the Data of a
// "groups" event and what Manager's changing methods return.
type Change struct {
	// Active are the groups active after the change, sorted.
	Active []string `json:"active"`
	// Activated and Deactivated are the groups whose state changed.
	Activated   []string `json:"activated,omitempty"`
	Deactivated []string `json:"deactivated,omitempty"`
	// By is "model" (reset_tools), "code", or what a tool that enables
	// groups says (a skill loader says "skill").
	By string `json:"by"`
	// Call is the id of the reset_tools call, when the model made the change.
	Call string `json:"call,omitempty"`
}

// Changed reports whether any group changed state.
func (c Change) Changed() bool { return len(c.Activated)+len(c.Deactivated) > 0 }
