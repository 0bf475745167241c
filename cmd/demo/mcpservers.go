package main

import (
	"context"
	"fmt"
	"path"
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
func connectMCPServers(ctx context.Context, tk *toolkit.Toolkit, gm *groups.Manager, elicit *mcpbridge.Elicitations, lines []string, view *termView) (func(), error) {
	var clients []*mcpbridge.Client
	closeAll := func() {
		for _, c := range clients {
			c.Close()
		}
	}
	used := map[string]bool{}
	for i, line := range lines {
		ep, err := mcpbridge.ParseCommand(line)
		if err != nil {
			closeAll()
			return nil, usagef("-mcp %q: %v", line, err)
		}
		name := mcpServerName(ep, i, used)
		c, err := mcpbridge.Connect(ctx, tk, name, ep, mcpbridge.WithGroup(gm, true), mcpbridge.WithElicitations(elicit))
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("-mcp %q: %w", line, err)
		}
		clients = append(clients, c)
		view.printf("mcp: %d tools from %s (%s), in the group %q\n", len(c.Tools()), name, line, name)
		for _, p := range c.Problems() {
			view.printf("mcp: %s: skipped: %v\n", name, p)
		}
	}
	return closeAll, nil
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
