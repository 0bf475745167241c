// Command conformanceclient is the client under test for the MCP conformance
// suite's client scenarios (npm @modelcontextprotocol/conformance): the suite
// starts it with the scenario's server URL as its argument, the scenario's
// name in MCP_CONFORMANCE_SCENARIO and its settings (JSON) in
// MCP_CONFORMANCE_CONTEXT. It registers the server's tools in a toolkit with
// mcpbridge.Connect over mcpbridge.HTTP, as an application would, and calls
// the tool the scenario expects through the toolkit.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/toolkit"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: conformanceclient <server-url> (MCP_CONFORMANCE_SCENARIO names the scenario)")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Getenv("MCP_CONFORMANCE_SCENARIO"), os.Getenv("MCP_CONFORMANCE_CONTEXT")); err != nil {
		fmt.Fprintln(os.Stderr, "conformanceclient:", err)
		os.Exit(1)
	}
}

// scenarioCall is the tool a scenario expects to be called, with its
// arguments.
var scenarioCall = map[string]struct {
	tool string
	args string
}{
	"tools_call":                          {"add_numbers", `{"a":5,"b":3}`},
	"elicitation-sep1034-client-defaults": {"test_client_elicitation_defaults", `{}`},
	"sse-retry":                           {"test_reconnection", `{}`},
}

func run(url, scenario, rawContext string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	var sc map[string]any
	if rawContext != "" {
		if err := json.Unmarshal([]byte(rawContext), &sc); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	tk := toolkit.New()
	defer tk.Close(context.Background())
	opts := []mcpbridge.ClientOption{mcpbridge.WithPrefix(""), mcpbridge.WithDialTimeout(20 * time.Second),
		// Accept every elicitation with no content: the client fills in
		// the schema's defaults (SEP-1034).
		mcpbridge.WithElicitation(func(context.Context, string, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		})}
	ep := mcpbridge.HTTP{URL: url}
	c, err := mcpbridge.Connect(ctx, tk, "server", ep, opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	call, ok := scenarioCall[scenario]
	if !ok && len(scenario) > 5 && scenario[:5] == "auth/" {
		call.tool, call.args, ok = "test-tool", `{}`, true
	}
	if !ok {
		return nil // connecting and listing the tools is the scenario
	}
	sess, err := tk.Session("conformance")
	if err != nil {
		return err
	}
	res := sess.Run(ctx, []toolkit.Call{{ID: "1", Name: call.tool, Args: json.RawMessage(call.args)}})[0]
	if res.IsError() {
		return fmt.Errorf("calling %s: %s", call.tool, res.Text())
	}
	return nil
}
