package mcpbridge_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/toolkit"
)

// TestServerSchemaTheSDKRefuses: a toolkit tool whose input schema the
// go-sdk's AddTool refuses (an x-mcp-header annotation on an object
// property, as an imported MCP server may send it) does not panic NewServer
// or Sync: NewServer fails with an error that names the tool, and Sync
// reports it without panicking.
func TestServerSchemaTheSDKRefuses(t *testing.T) {
	bad := json.RawMessage(`{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"A"}}}`)
	tool, err := toolkit.NewRawTool(toolkit.Spec{Name: "headed", Description: "Has a bad header annotation."}, bad,
		func(context.Context, json.RawMessage) ([]toolkit.Part, error) { return nil, nil })
	if err != nil {
		t.Skipf("the toolkit refuses the schema itself: %v", err)
	}
	want := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), `tool "headed" cannot be served over MCP`) || !strings.Contains(err.Error(), "x-mcp-header") {
			t.Fatalf("%s = %v, want an error naming the tool and its x-mcp-header", what, err)
		}
		t.Log(err)
	}
	noPanic := func(what string, f func() error) error {
		t.Helper()
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("%s panicked: %v", what, r)
			}
		}()
		return f()
	}

	// Registered before NewServer.
	tk := srvToolkit(t)
	if err := tk.Add(tool); err != nil {
		t.Fatal(err)
	}
	want("NewServer", noPanic("NewServer", func() error { _, err := mcpbridge.NewServer(tk); return err }))

	// Registered after: Sync refuses the new list, the old one stays.
	tk = srvToolkit(t)
	s := srvNew(t, tk)
	cs := srvConnect(t, s, nil, "2025-11-25")
	before := srvToolNames(t, cs)
	if err := tk.Add(tool); err != nil {
		t.Fatal(err)
	}
	want("Sync", noPanic("Sync", s.Sync))
	if after := srvToolNames(t, cs); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Fatalf("tools/list after a refused Sync = %v, want %v", after, before)
	}
	if text, isErr := srvCallText(t, cs, "weather", map[string]any{"city": "Paris"}); isErr {
		t.Fatalf("a call after a refused Sync: %s", text)
	}
}
