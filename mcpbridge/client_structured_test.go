package mcpbridge_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
)

// TestClientOutputSchemaWithoutStructuredContent: a server's tool with an
// output schema whose result has no structuredContent fails the call with
// an error that names the server, the tool and the blocks that came. The
// engine used to take the last JSON part of the result as the structured
// value, and a resource_link or an embedded text resource maps to a JSON
// part: with a loose schema the link passed as the tool's structured
// result, with a strict one the model read that the result "does not match
// its output schema" (about a block that was never the structured result).
// With structuredContent, the other blocks stay as they were.
func TestClientOutputSchemaWithoutStructuredContent(t *testing.T) {
	ts := newTestServer(t)
	link := &mcp.ResourceLink{URI: "file:///data/report.csv", Name: "report.csv"}
	textRes := &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "notes"}}
	add := func(name, schema string, res *mcp.CallToolResult) {
		ts.srv.AddTool(&mcp.Tool{Name: name, Description: "Output schema.", InputSchema: objectSchema, OutputSchema: json.RawMessage(schema)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return res, nil })
	}
	add("loose", `{"type":"object"}`, &mcp.CallToolResult{Content: []mcp.Content{link}})
	add("strict", `{"type":"object","properties":{"t":{"type":"number"}},"required":["t"]}`,
		&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "see"}, textRes}})
	add("textonly", `{"type":"object"}`, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"t":1}`}}})
	add("both", `{"type":"object","properties":{"t":{"type":"number"}},"required":["t"]}`,
		&mcp.CallToolResult{Content: []mcp.Content{link, &mcp.TextContent{Text: `{"t":1}`}}, StructuredContent: map[string]any{"t": 1}})
	tk := testutil.Kit(t)
	connect(t, tk, "srv", ts.endpoint())
	res := testutil.Run(t, tk, "s",
		testutil.Call("1", "mcp__srv__loose", `{}`),
		testutil.Call("2", "mcp__srv__strict", `{}`),
		testutil.Call("3", "mcp__srv__textonly", `{}`),
		testutil.Call("4", "mcp__srv__both", `{}`))
	for i, want := range []string{"1 resource_link", "1 text, 1 resource", "1 text"} {
		text := res[i].Text()
		if !res[i].IsError() || !strings.Contains(text, `MCP server "srv"`) || !strings.Contains(text, `"`+[]string{"loose", "strict", "textonly"}[i]+`"`) ||
			!strings.Contains(text, "has an output schema but its result has no structuredContent") || !strings.Contains(text, "(it sent "+want+")") ||
			strings.Contains(text, "does not match") {
			t.Errorf("call %d: %v %q", i+1, res[i].State, text)
		}
	}
	if r := res[3]; r.IsError() || len(r.Content) != 2 || r.Content[0].Type != events.PartJSON || !strings.Contains(string(r.Content[0].JSON), "resource_link") ||
		string(r.Content[1].JSON) != `{"t":1}` {
		t.Errorf("with structuredContent: %v %+v", r.State, r.Content)
	}
}

// TestClientErrorWithoutText: an isError result with no text block gives an
// error that names the server and the kinds of blocks it sent (it said only
// "the MCP server reported an error without a message").
func TestClientErrorWithoutText(t *testing.T) {
	ts := newTestServer(t)
	add := func(name string, res *mcp.CallToolResult) {
		ts.srv.AddTool(&mcp.Tool{Name: name, Description: "Fails.", InputSchema: objectSchema},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return res, nil })
	}
	add("pictured", &mcp.CallToolResult{IsError: true, Content: []mcp.Content{
		&mcp.ImageContent{Data: []byte("\x89PNG"), MIMEType: "image/png"},
		&mcp.ResourceLink{URI: "file:///log", Name: "log"}, &mcp.ResourceLink{URI: "file:///log2", Name: "log2"}}})
	add("empty", &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{}}})
	add("none", &mcp.CallToolResult{IsError: true, Content: []mcp.Content{}})
	tk := testutil.Kit(t)
	connect(t, tk, "srv", ts.endpoint())
	res := testutil.Run(t, tk, "s",
		testutil.Call("1", "mcp__srv__pictured", `{}`),
		testutil.Call("2", "mcp__srv__empty", `{}`),
		testutil.Call("3", "mcp__srv__none", `{}`))
	for i, want := range []string{
		`MCP server "srv" reported an error without a message (it sent 1 image, 2 resource_link)`,
		`MCP server "srv" reported an error without a message (it sent 1 empty text)`,
		`MCP server "srv" reported an error without a message (it sent no content)`,
	} {
		if !res[i].IsError() || !strings.Contains(res[i].Text(), want) {
			t.Errorf("call %d: %v %q, want %q", i+1, res[i].State, res[i].Text(), want)
		}
	}
}

// TestClientStructuredAndText: what the model sees of a result with text,
// with structuredContent, and with both. MCP has a tool that returns
// structuredContent also return it as text, for older clients: the model
// used to read both, glued (`[FILE] a.txt{"content":"[FILE] a.txt"}` from
// server-filesystem's shape). Now it reads the structured value once; text
// that is not the same JSON value stays in Result.Meta["mcp_text"].
func TestClientStructuredAndText(t *testing.T) {
	ts := newTestServer(t)
	add := func(name string, res *mcp.CallToolResult) {
		ts.srv.AddTool(&mcp.Tool{Name: name, Description: "Content.", InputSchema: objectSchema},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return res, nil })
	}
	link := &mcp.ResourceLink{URI: "file:///a.txt", Name: "a.txt"}
	add("worded", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "[FILE] a.txt"}}, StructuredContent: map[string]any{"content": "[FILE] a.txt"}})
	add("copy", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{\n  \"n\": 1\n}"}}, StructuredContent: map[string]any{"n": 1}})
	add("text", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "plain"}}})
	add("structured", &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"n": 2}})
	add("linked", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "one file:"}, link, &mcp.TextContent{Text: `{"files":1}`}}, StructuredContent: map[string]any{"files": 1}})
	tk := testutil.Kit(t)
	connect(t, tk, "srv", ts.endpoint())
	res := testutil.Run(t, tk, "s",
		testutil.Call("1", "mcp__srv__worded", `{}`),
		testutil.Call("2", "mcp__srv__copy", `{}`),
		testutil.Call("3", "mcp__srv__text", `{}`),
		testutil.Call("4", "mcp__srv__structured", `{}`),
		testutil.Call("5", "mcp__srv__linked", `{}`))
	linkJSON := `{"type":"resource_link","uri":"file:///a.txt","name":"a.txt"}`
	for i, want := range []struct {
		parts []events.Part
		text  string // Result.Text
		meta  any    // Meta["mcp_text"]
	}{
		{[]events.Part{{Type: events.PartJSON, JSON: json.RawMessage(`{"content":"[FILE] a.txt"}`)}}, `{"content":"[FILE] a.txt"}`, "[FILE] a.txt"},
		{[]events.Part{{Type: events.PartJSON, JSON: json.RawMessage(`{"n":1}`)}}, `{"n":1}`, nil}, // the copy says nothing more
		{[]events.Part{events.Text("plain")}, "plain", nil},
		{[]events.Part{{Type: events.PartJSON, JSON: json.RawMessage(`{"n":2}`)}}, `{"n":2}`, nil},
		{[]events.Part{{Type: events.PartJSON, JSON: json.RawMessage(linkJSON)}, {Type: events.PartJSON, JSON: json.RawMessage(`{"files":1}`)}},
			linkJSON + "\n" + `{"files":1}`, "one file:"}, // never glued
	} {
		r := res[i]
		if r.IsError() {
			t.Errorf("call %d: %q", i+1, r.Text())
			continue
		}
		if !events.EqualContent(r.Content, want.parts) {
			t.Errorf("call %d: the model sees %q (%+v), want %+v", i+1, r.Text(), r.Content, want.parts)
		}
		if r.Text() != want.text {
			t.Errorf("call %d: Text() = %q, want %q", i+1, r.Text(), want.text)
		}
		if got := r.Meta["mcp_text"]; got != want.meta {
			t.Errorf("call %d: Meta[mcp_text] = %#v, want %#v", i+1, got, want.meta)
		}
	}
}
