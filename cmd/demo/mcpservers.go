package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/toolkit"
)

// connectMCPServers starts the MCP servers of the -mcp flags and registers
// their tools in tk, each server's in a tool group of its own (on at the
// start), named after the server. Their requests for the user's input go to
// elicit, which the page answers like an approval. It returns a function that disconnects
// them all.
func connectMCPServers(ctx context.Context, tk *toolkit.Toolkit, gm *groups.Manager, elicit *mcpbridge.Elicitations, lines []string, view *termView) (func(), []mcpPick, error) {
	var clients []*mcpbridge.Client
	closeAll := func() {
		for _, c := range clients {
			c.Close()
		}
	}
	var picks []mcpPick
	used := map[string]bool{}
	for i, line := range lines {
		ep, err := mcpbridge.ParseCommand(line)
		if err != nil {
			closeAll()
			return nil, nil, usagef("-mcp %q: %v", line, err)
		}
		name := mcpServerName(ep, i, used)
		c, err := mcpbridge.Connect(ctx, tk, name, ep, mcpbridge.WithGroup(gm, true), mcpbridge.WithElicitations(elicit))
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("-mcp %q: %w", line, err)
		}
		clients = append(clients, c)
		view.printf("mcp: %d tools from %s (%s), in the group %q\n", len(c.Tools()), name, line, name)
		for _, p := range c.Problems() {
			view.printf("mcp: %s: skipped: %v\n", name, p)
		}
		if p, ok := pickMCPTool(tk, name, c.Tools()); ok {
			picks = append(picks, p)
		}
	}
	return closeAll, picks, nil
}

// mcpPick is the tool of an MCP server the scripted tour calls, and how.
type mcpPick struct {
	group string // the server's tool group
	tool  string // its toolstream name
	args  map[string]any
}

// mcpGreeting is what the tour gives a server's tool to say.
const mcpGreeting = "hello from the toolstream tour"

// pickMCPTool chooses the server's tool the tour calls: echo if it has
// one, else the first whose required arguments are all strings (each
// given mcpGreeting; with none required, its first string argument is).
// A server with no such tool is not called.
func pickMCPTool(tk *toolkit.Toolkit, group string, tools []mcpbridge.ToolInfo) (mcpPick, bool) {
	ordered := slices.Clone(tools)
	slices.SortStableFunc(ordered, func(a, b mcpbridge.ToolInfo) int {
		return boolOrder(a.Tool != "echo") - boolOrder(b.Tool != "echo")
	})
	for _, ti := range ordered {
		t, ok := tk.Tool(ti.Name)
		if !ok {
			continue
		}
		if args, ok := stringArgs(t.Definition().Parameters); ok {
			return mcpPick{group: group, tool: ti.Name, args: args}, true
		}
	}
	return mcpPick{}, false
}

func boolOrder(b bool) int {
	if b {
		return 1
	}
	return 0
}

// stringArgs fills a schema's required string properties with
// mcpGreeting; false when a required property is not a string.
func stringArgs(schema json.RawMessage) (map[string]any, bool) {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil, false
	}
	isString := func(name string) bool {
		p, ok := s.Properties[name]
		return ok && p.Type == "string"
	}
	args := map[string]any{}
	for _, r := range s.Required {
		if !isString(r) {
			return nil, false
		}
		args[r] = mcpGreeting
	}
	if len(args) == 0 {
		names := slices.Sorted(maps.Keys(s.Properties))
		if i := slices.IndexFunc(names, isString); i >= 0 {
			args[names[i]] = mcpGreeting
		}
	}
	return args, true
}

// mcpTurn calls the picked tool of each -mcp server.
func mcpTurn(picks []mcpPick) scriptTurn {
	calls := make([]toolkit.Call, len(picks))
	for i, p := range picks {
		calls[i] = call(fmt.Sprintf("call_m%d", i+1), p.tool, p.args)
	}
	return scriptTurn{Turn: Turn{
		Note:  "a tool of the MCP server (-mcp), called through the toolkit like any other: its group stayed on",
		Text:  "Asking the MCP server's tool too.",
		Calls: calls,
	}}
}

// mcpServerName names a server after the part of its command line that
// looks like its package or program ("npx -y @modelcontextprotocol/server-
// everything" is "everything"), else mcp1, mcp2, ...; names stay unique.
func mcpServerName(ep mcpbridge.Stdio, i int, used map[string]bool) string {
	name := ""
	for _, w := range append([]string{ep.Command}, ep.Args...) {
		for _, seg := range strings.Split(w, "/") {
			if s, ok := strings.CutPrefix(seg, "server-"); ok && name == "" {
				name = s
			}
		}
		if name == "" && strings.Contains(w, "mcp") {
			name = strings.TrimSuffix(path.Base(w), path.Ext(w))
		}
	}
	name = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '_'
	}, name)
	if name == "" || len(name) > 24 {
		name = fmt.Sprintf("mcp%d", i+1)
	}
	for base, n := name, 2; used[name]; n++ {
		name = fmt.Sprintf("%s%d", base, n)
	}
	used[name] = true
	return name
}
