package mcpbridge_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/toolkit"
)

func srvToolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func srvCallText(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// TestServerGroups: tools/list is the same stable list for every connection
// (all registered tools, reset_tools among them); a group's visibility
// applies when a tool is called, per MCP session.
func TestServerGroups(t *testing.T) {
	tk := srvToolkit(t)
	m, err := groups.Install(tk)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add(groups.Group{Name: "forecast", Description: "Weather tools.", Tools: []string{"weather"}}); err != nil {
		t.Fatal(err)
	}
	s := srvNew(t, tk)
	a, b := srvConnect(t, s, nil, ""), srvConnect(t, s, nil, "2025-11-25")
	want := "noop,reset_tools,slow,steps,weather"
	for _, cs := range []*mcp.ClientSession{a, b} {
		if got := strings.Join(srvToolNames(t, cs), ","); got != want {
			t.Fatalf("tools/list = %s, want %s", got, want)
		}
	}
	text, isErr := srvCallText(t, a, "weather", map[string]any{"city": "Oslo"})
	if !isErr || !strings.Contains(text, `"forecast"`) || !strings.Contains(text, "reset_tools") {
		t.Fatalf("weather in an inactive group: %v %q", isErr, text)
	}
	if text, isErr := srvCallText(t, b, "reset_tools", map[string]any{"forecast": true}); isErr {
		t.Fatalf("reset_tools: %q", text)
	}
	if text, isErr := srvCallText(t, b, "weather", map[string]any{"city": "Oslo"}); isErr || !strings.Contains(text, "Oslo") {
		t.Fatalf("weather after reset_tools: %v %q", isErr, text)
	}
	// The other connection's session did not change (the newest revision
	// has no session: each of its requests is one, so activate on b only).
	if _, isErr := srvCallText(t, a, "weather", map[string]any{"city": "Oslo"}); !isErr {
		t.Fatal("a group activated on one connection is active on another")
	}
	if text, isErr := srvCallText(t, b, "reset_tools", map[string]any{"nosuch": true}); !isErr || !strings.Contains(text, "nosuch") {
		t.Fatalf("reset_tools with an unknown group: %v %q", isErr, text)
	}
}

// TestServerSync: registering and removing tools shows in tools/list after
// Sync, with notifications/tools/list_changed where the protocol has it.
func TestServerSync(t *testing.T) {
	tk := srvToolkit(t)
	s := srvNew(t, tk)
	changed := make(chan struct{}, 4)
	cs := srvConnect(t, s, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}, "2025-11-25")
	extra := toolkit.MustTool(toolkit.Spec{Name: "extra", Description: "New."},
		func(ctx context.Context, _ struct{}) (string, error) { return "new", nil })
	if err := tk.Add(extra); err != nil {
		t.Fatal(err)
	}
	tk.Remove("slow")
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/tools/list_changed")
	}
	if got := strings.Join(srvToolNames(t, cs), ","); got != "extra,noop,steps,weather" {
		t.Fatalf("tools/list after Sync = %s", got)
	}
	if text, isErr := srvCallText(t, cs, "extra", nil); isErr || text != "new" {
		t.Fatalf("extra: %v %q", isErr, text)
	}
}
