package groups

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/tracehook"
	"github.com/toolstream/toolstream/toolkit"
)

// metaFor returns reset_tools as one session sees it. It depends only on the
// catalog and the active groups, so sessions with the same groups share one
// tool, built once (building means compiling its schema).
func (m *Manager) metaFor(c *catalog, on map[string]bool) (*toolkit.Tool, error) {
	var buf [64]byte
	key := buf[:0]
	for _, g := range c.order {
		if g.CodeOnly {
			continue // not in the tool: sessions that differ only in these share it
		}
		if on[g.Name] {
			key = append(key, '1')
		} else {
			key = append(key, '0')
		}
	}
	return c.metas.Get(key, func() (*toolkit.Tool, error) { return m.buildMeta(c, on) })
}

// buildMeta builds reset_tools as one session sees it: one boolean property
// per group, each described with the group's description and whether it is
// active right now, so the model does not switch on what is already on.
// With tool_search, inactive groups are listed by name only (tool_search
// finds what they hold), so that the listing stays small with many groups.
func (m *Manager) buildMeta(c *catalog, on map[string]bool) (*toolkit.Tool, error) {
	type prop struct {
		Type        string `json:"type"`
		Description string `json:"description,omitempty"`
	}
	props := make(map[string]prop, len(c.shown))
	var desc strings.Builder
	desc.WriteString("Choose which tool groups are active. Set a group to true to use its tools, false to put them away. " +
		"The values you pass are the complete new state: every group not set to true becomes inactive, so keep the groups you still need set to true. " +
		"The result lists the tools that became available and the description and instructions of each group you activate: read and follow them. " +
		"Call it again with the same groups to see those of the active groups again.")
	if m.search != nil {
		fmt.Fprintf(&desc, "\nThere are %d groups; find the ones you need with %s, which searches their tools.\nActive groups:", len(c.shown), SearchTool)
		n := 0
		for _, g := range c.order {
			if g.CodeOnly {
				continue
			}
			if on[g.Name] {
				props[g.Name] = prop{Type: "boolean", Description: fmt.Sprintf("%s (ACTIVE now)", g.Description)}
				fmt.Fprintf(&desc, "\n- %s: %s", g.Name, g.Description)
				n++
			} else {
				props[g.Name] = prop{Type: "boolean"}
			}
		}
		if n == 0 {
			desc.WriteString(" none.")
		}
	} else {
		desc.WriteString("\nGroups:")
		for _, g := range c.order {
			if g.CodeOnly {
				continue
			}
			state := "inactive"
			if on[g.Name] {
				state = "ACTIVE now"
			}
			props[g.Name] = prop{Type: "boolean", Description: fmt.Sprintf("%s (%s)", g.Description, state)}
			fmt.Fprintf(&desc, "\n- %s (%s): %s", g.Name, state, g.Description)
		}
	}
	schema, err := json.Marshal(map[string]any{
		"type":                 "object",
		"properties":           props,
		"additionalProperties": false,
	})
	if err != nil {
		return nil, err
	}
	return m.meta.Variant(desc.String(), schema)
}

// resetTools is the meta tool's handler. Its arguments were checked against
// the session's variant of the tool: only group names, each true or false.
func (m *Manager) resetTools(ctx context.Context, args json.RawMessage) (_ []events.Part, err error) {
	info, ok := toolkit.CallInfoFrom(ctx)
	if !ok {
		return nil, errors.New("reset_tools must run inside a toolkit call")
	}
	ctx, op := tracehook.StartOp(ctx, MetaTool) // a span of its own when the toolkit is traced
	defer func() { op.End(err) }()
	var set map[string]bool
	if err := json.Unmarshal(args, &set); err != nil {
		return nil, fmt.Errorf("the arguments must be an object of group names to true or false: %v", err)
	}
	var want []string
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if set[k] {
			want = append(want, k)
		}
	}

	op.Set("toolstream.groups.requested", want)
	ch, c, err := m.changeIn(ctx, info.Session, "model", info.CallID, resetByModel(want))
	if err != nil {
		return nil, err
	}
	op.Set("toolstream.groups.active", ch.Active)
	op.Set("toolstream.groups.activated", ch.Activated)
	op.Set("toolstream.groups.deactivated", ch.Deactivated)
	return []events.Part{events.Text(m.report(c, ch))}, nil
}

// report is what the model reads after reset_tools: the active groups, the
// tools that came and went, and the description and instructions of each
// group it newly activated (of every active group when nothing changed), in
// a tagged layout. CodeOnly groups are left out: the model never sees them.
func (m *Manager) report(c *catalog, ch Change) string {
	var b strings.Builder
	active := c.shownOf(ch.Active)
	switch {
	case len(active) > 0:
		fmt.Fprintf(&b, "Active tool groups: %s.", strings.Join(active, ", "))
	case len(ch.Active) > 0: // CodeOnly groups are on: their tools remain
		b.WriteString("All tool groups are now inactive.")
	default:
		b.WriteString("All tool groups are now inactive; only the basic tools remain.")
	}
	if !ch.Changed() {
		b.WriteString(" Nothing changed.")
	}
	added, removed := m.toolsChanged(c, ch)
	if len(added) > 0 {
		fmt.Fprintf(&b, "\nNow available: %s.", strings.Join(added, ", "))
	}
	if len(removed) > 0 {
		fmt.Fprintf(&b, "\nNo longer available: %s.", strings.Join(removed, ", "))
	}
	// The groups this call switched on, or, when it changed nothing (the
	// model checking again), the active ones: what each is for and how to
	// use it.
	show := ch.Activated // the model's call never switches a CodeOnly group
	if !ch.Changed() {
		show = active
	}
	if len(show) > 0 {
		if ch.Changed() {
			b.WriteString("\n<tool-instructions>\nThe groups you activated, and how to use their tools:")
		} else {
			b.WriteString("\n<tool-instructions>\nThe active groups, and how to use their tools:")
		}
		for _, n := range show {
			g := c.byName[n]
			fmt.Fprintf(&b, "\n<group name=%q>\n<description>%s</description>", g.Name, strings.TrimSpace(g.Description))
			if in := strings.TrimSpace(g.Instructions); in != "" {
				fmt.Fprintf(&b, "\n<instructions>\n%s\n</instructions>", in)
			}
			b.WriteString("\n</group>")
		}
		b.WriteString("\n</tool-instructions>")
	}
	return b.String()
}

// ToolsChanged returns the registered tools that a change of a session's
// groups made visible (added) and those it hid (removed), in registration
// order. Basic tools are never in either.
func (m *Manager) ToolsChanged(ch Change) (added, removed []string) {
	return m.toolsChanged(m.defs.Load(), ch)
}

func (m *Manager) toolsChanged(c *catalog, ch Change) (added, removed []string) {
	on := make(map[string]bool, len(ch.Active)+len(ch.Deactivated))
	for _, n := range ch.Active {
		on[n] = true
	}
	// Before the change: what is active now, less what it activated, plus
	// what it deactivated.
	wasOn := maps.Clone(on)
	for _, n := range ch.Activated {
		delete(wasOn, n)
	}
	for _, n := range ch.Deactivated {
		wasOn[n] = true
	}
	for _, t := range m.tk.Tools() {
		name := t.Name()
		if len(c.member[name]) == 0 {
			continue
		}
		now, was := visible(c, on, name), visible(c, wasOn, name)
		switch {
		case now && !was:
			added = append(added, name)
		case was && !now:
			removed = append(removed, name)
		}
	}
	return added, removed
}
