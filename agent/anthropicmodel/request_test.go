package anthropicmodel_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/agent/anthropicmodel"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

func okStream(w http.ResponseWriter, r *http.Request, n int) {
	writeSSE(w, msgStart("claude-test-1", 1), textStart(0), textDelta(0, "ok"), blockStop(0), msgDelta("end_turn", 1), msgStop())
}

func jsonPart(t *testing.T, v any) events.Part {
	p, err := events.JSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The whole conversation mapping, field by field as the server received it.
func TestConversationMapping(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n-image-")
	pdf := []byte("%PDF-1.7 tiny")
	conv := []agent.Message{
		{Role: agent.RoleUser, Content: []events.Part{
			events.Text("Look at these"), events.Binary("image/png", png), jsonPart(t, map[string]int{"k": 1}),
			events.Binary("application/zip", []byte{1, 2, 3}), events.Binary("application/pdf", pdf), events.Text(""),
		}},
		{Role: agent.RoleAssistant, Content: []events.Part{events.Text("Running tools.")}, Calls: []toolkit.Call{
			{ID: "toolu_c1", Name: "read", Args: json.RawMessage(`{"path": "a.txt"}`)},
			{ID: "toolu_c2", Name: "read", Args: json.RawMessage(`{"path": "a`)},
			{ID: "toolu_c3", Name: "list", Args: json.RawMessage(``)},
			{ID: "toolu_c4", Name: "count", Args: json.RawMessage(`"{\"n\":1}"`)},
			{ID: "toolu_c5", Name: "count", Args: json.RawMessage(`[1,2]`)},
			{ID: "call.with:odd/chars", Name: "list", Args: json.RawMessage(`{}`)},
		}},
		{Role: agent.RoleTool, CallID: "toolu_c1", Tool: "read", Content: []events.Part{events.Text("file text"), events.Binary("image/jpeg", []byte("jpg"))}},
		{Role: agent.RoleTool, CallID: "toolu_c2", Tool: "read", IsError: true, Content: []events.Part{events.Text("Error: invalid arguments")}},
		{Role: agent.RoleTool, CallID: "toolu_c3", Tool: "list", Content: []events.Part{jsonPart(t, []string{"a", "b"})}},
		{Role: agent.RoleTool, CallID: "toolu_c4", Tool: "count", Content: []events.Part{events.Text("1")}},
		{Role: agent.RoleTool, CallID: "toolu_c5", Tool: "count", IsError: true, Content: []events.Part{events.Text("Error: not an object")}},
		{Role: agent.RoleTool, CallID: "call.with:odd/chars", Tool: "list", Content: nil},
		agent.UserText("Thanks, now summarise."),
		{Role: agent.RoleAssistant, Content: []events.Part{events.Text("Summary.")}},
		{Role: agent.RoleAssistant},
		agent.UserText("More?"),
	}
	if err := (&agent.Conversation{Messages: conv}).Check(); err != nil {
		t.Fatalf("the test's conversation is not valid: %v", err)
	}
	s := newServer(t, okStream)
	if _, err := s.model().Generate(ctx(t), &agent.Request{Messages: conv}); err != nil {
		t.Fatal(err)
	}
	b := s.body(t, 0)
	msgs := get(t, b, "messages").([]any)
	if len(msgs) != 5 {
		t.Fatalf("%d messages, want 5: %v", len(msgs), msgs)
	}
	roles := []string{"user", "assistant", "user", "assistant", "user"}
	for i, r := range roles {
		if get(t, msgs, i, "role") != r {
			t.Errorf("message %d role %v, want %s", i, get(t, msgs, i, "role"), r)
		}
	}
	b64 := base64.StdEncoding.EncodeToString
	want0 := []any{
		obj{"type": "text", "text": "Look at these"},
		obj{"type": "image", "source": obj{"type": "base64", "media_type": "image/png", "data": b64(png)}},
		obj{"type": "text", "text": `{"k":1}`},
		obj{"type": "text", "text": "[binary content left out: application/zip, 3 bytes; the Anthropic Messages API takes images (png, jpeg, gif, webp) and PDF documents only]"},
		obj{"type": "document", "source": obj{"type": "base64", "media_type": "application/pdf", "data": b64(pdf)}},
	}
	same(t, "user content", get(t, msgs, 0, "content"), want0)

	hashed := get(t, msgs, 1, "content", 6, "id").(string)
	if !regexp.MustCompile(`^toolu_[0-9a-f]{24}$`).MatchString(hashed) {
		t.Errorf("odd id went out as %q", hashed)
	}
	want1 := []any{
		obj{"type": "text", "text": "Running tools."},
		obj{"type": "tool_use", "id": "toolu_c1", "name": "read", "input": obj{"path": "a.txt"}},
		obj{"type": "tool_use", "id": "toolu_c2", "name": "read", "input": obj{anthropicmodel.InvalidArgumentsKey: `{"path": "a`}},
		obj{"type": "tool_use", "id": "toolu_c3", "name": "list", "input": obj{}},
		obj{"type": "tool_use", "id": "toolu_c4", "name": "count", "input": obj{"n": float64(1)}},
		obj{"type": "tool_use", "id": "toolu_c5", "name": "count", "input": obj{anthropicmodel.InvalidArgumentsKey: `[1,2]`}},
		obj{"type": "tool_use", "id": hashed, "name": "list", "input": obj{}},
	}
	same(t, "assistant content", get(t, msgs, 1, "content"), want1)

	want2 := []any{
		obj{"type": "tool_result", "tool_use_id": "toolu_c1", "content": []any{
			obj{"type": "text", "text": "file text"},
			obj{"type": "image", "source": obj{"type": "base64", "media_type": "image/jpeg", "data": b64([]byte("jpg"))}},
		}},
		obj{"type": "tool_result", "tool_use_id": "toolu_c2", "is_error": true, "content": []any{obj{"type": "text", "text": "Error: invalid arguments"}}},
		obj{"type": "tool_result", "tool_use_id": "toolu_c3", "content": []any{obj{"type": "text", "text": `["a","b"]`}}},
		obj{"type": "tool_result", "tool_use_id": "toolu_c4", "content": []any{obj{"type": "text", "text": "1"}}},
		obj{"type": "tool_result", "tool_use_id": "toolu_c5", "is_error": true, "content": []any{obj{"type": "text", "text": "Error: not an object"}}},
		obj{"type": "tool_result", "tool_use_id": hashed},
		obj{"type": "text", "text": "Thanks, now summarise."},
	}
	same(t, "tool results", get(t, msgs, 2, "content"), want2)
	same(t, "second assistant", get(t, msgs, 3, "content"), []any{obj{"type": "text", "text": "Summary."}})
	same(t, "last user", get(t, msgs, 4, "content"), []any{obj{"type": "text", "text": "More?"}})
	if _, ok := b["system"]; ok {
		t.Errorf("system sent without a system prompt: %v", b["system"])
	}
}

// same compares a decoded JSON value with the expected one.
func same(t *testing.T, what string, got, want any) {
	t.Helper()
	w, _ := json.Marshal(want)
	var wantV any
	_ = json.Unmarshal(w, &wantV)
	if !reflect.DeepEqual(got, wantV) {
		g, _ := json.MarshalIndent(got, "", "  ")
		wi, _ := json.MarshalIndent(wantV, "", "  ")
		t.Errorf("%s:\n got %s\nwant %s", what, g, wi)
	}
}

type searchIn struct {
	Query string   `json:"query" jsonschema:"what to look for, <b>bold</b> & all"`
	Limit int      `json:"limit,omitempty" tool:"default=10,minimum=1,maximum=50"`
	Exts  []string `json:"exts,omitempty" tool:"enum=go|md"`
}

// Tool definitions: name, description and the input schema exactly as the
// toolkit wrote it (bytes compared, not values); no tool_choice unless
// parallel tool use is off, and then only with tools.
func TestToolDefinitions(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk,
		testutil.Tool(t, toolkit.Spec{Name: "search", Description: "Search files."}, func(context.Context, searchIn) (string, error) { return "", nil }),
		testutil.Tool(t, toolkit.Spec{Name: "now"}, func(context.Context, struct{}) (string, error) { return "", nil }),
	)
	defs, err := testutil.Session(t, tk, "s").Definitions(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	// A hand-written schema with spaces and HTML characters: the SDK
	// compacts and HTML-escapes it (the same JSON value, keys in order).
	defs = append(defs, toolkit.Definition{Name: "raw", Parameters: json.RawMessage(`{ "type": "object",  "properties": { "z": {"type":"string", "description": "a <tag> & more"}, "a": {"type": "integer"} } }`)},
		toolkit.Definition{Name: "noschema"})

	for _, parallel := range []bool{true, false} {
		s := newServer(t, okStream)
		if _, err := s.model(anthropicmodel.WithParallelToolUse(parallel)).Generate(ctx(t), &agent.Request{Messages: []agent.Message{agent.UserText("go")}, Tools: defs}); err != nil {
			t.Fatal(err)
		}
		raw := s.raw(t, 0)
		var tools []map[string]json.RawMessage
		if err := json.Unmarshal(raw["tools"], &tools); err != nil || len(tools) != len(defs) {
			t.Fatalf("tools = %s (%v)", raw["tools"], err)
		}
		for i, d := range defs {
			var name, desc string
			_ = json.Unmarshal(tools[i]["name"], &name)
			_ = json.Unmarshal(tools[i]["description"], &desc)
			if name != d.Name || desc != d.Description {
				t.Errorf("tool %d: name %q description %q, want %q %q", i, name, desc, d.Name, d.Description)
			}
			if _, ok := tools[i]["description"]; ok != (d.Description != "") {
				t.Errorf("tool %d: description present %v", i, ok)
			}
			want := []byte(d.Parameters)
			switch d.Name {
			case "raw":
				var c bytes.Buffer
				_ = json.Compact(&c, d.Parameters)
				var h bytes.Buffer
				json.HTMLEscape(&h, c.Bytes())
				want = h.Bytes()
			case "noschema":
				want = []byte(`{"type":"object"}`)
			}
			if !bytes.Equal(tools[i]["input_schema"], want) {
				t.Errorf("tool %s: input_schema\n got %s\nwant %s", d.Name, tools[i]["input_schema"], want)
			}
		}
		choice, has := raw["tool_choice"]
		if parallel && has {
			t.Errorf("tool_choice sent with parallel tool use on: %s", choice)
		}
		if !parallel && string(choice) != `{"disable_parallel_tool_use":true,"type":"auto"}` {
			t.Errorf("tool_choice = %s", choice)
		}
	}

	// Parallel tool use off, but no tools: no tool_choice (the API refuses it).
	s := newServer(t, okStream)
	if _, err := s.model(anthropicmodel.WithParallelToolUse(false)).Generate(ctx(t), request(nil, agent.UserText("go"))); err != nil {
		t.Fatal(err)
	}
	if _, has := s.raw(t, 0)["tool_choice"]; has {
		t.Error("tool_choice sent without tools")
	}
}

// WithMaxTokens and WithParams shape the request; a bad max_tokens keeps
// the default.
func TestRequestOptions(t *testing.T) {
	s := newServer(t, okStream)
	m := s.model(anthropicmodel.WithMaxTokens(1234), anthropicmodel.WithParams(func(p *anthropic.MessageNewParams) {
		p.StopSequences = []string{"END"}
		p.Thinking = anthropic.ThinkingConfigParamUnion{OfEnabled: &anthropic.ThinkingConfigEnabledParam{BudgetTokens: 1024}}
		p.Metadata = anthropic.MetadataParam{UserID: param.NewOpt("u1")}
	}))
	if m.Name() != "claude-test-1" {
		t.Errorf("Name = %q", m.Name())
	}
	if _, err := m.Generate(ctx(t), request(nil, agent.UserText("go"))); err != nil {
		t.Fatal(err)
	}
	b := s.body(t, 0)
	if b["max_tokens"] != float64(1234) {
		t.Errorf("max_tokens = %v", b["max_tokens"])
	}
	same(t, "stop_sequences", b["stop_sequences"], []any{"END"})
	same(t, "thinking", b["thinking"], obj{"type": "enabled", "budget_tokens": 1024})
	same(t, "metadata", b["metadata"], obj{"user_id": "u1"})

	s2 := newServer(t, okStream)
	if _, err := s2.model(anthropicmodel.WithMaxTokens(0)).Generate(ctx(t), request(nil, agent.UserText("go"))); err != nil {
		t.Fatal(err)
	}
	if s2.body(t, 0)["max_tokens"] != float64(anthropicmodel.DefaultMaxTokens) {
		t.Errorf("max_tokens = %v", s2.body(t, 0)["max_tokens"])
	}
}

// An unknown role is refused before anything is sent, with the message's
// position.
func TestUnknownRole(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) { t.Error("a request was sent") })
	_, err := s.model().Generate(ctx(t), request(nil, agent.Message{Role: "system", Content: []events.Part{events.Text("x")}}))
	if err == nil || err.Error() != `anthropicmodel: message 0 has role "system", which the adapter does not know (user, assistant or tool)` {
		t.Errorf("err = %v", err)
	}
}

// A tool whose schema is not a JSON object is refused before anything is
// sent, naming the tool; not an APIError (asking again cannot help).
func TestInvalidToolSchema(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) { t.Error("a request was sent") })
	for _, schema := range []string{`{"type":`, `[1]`, `"x"`} {
		_, err := s.model().Generate(ctx(t), &agent.Request{Messages: []agent.Message{agent.UserText("go")},
			Tools: []toolkit.Definition{{Name: "bad", Parameters: json.RawMessage(schema)}}})
		var api *agent.APIError
		if err == nil || errors.As(err, &api) || !strings.Contains(err.Error(), `tool "bad": the input schema is not a JSON object`) {
			t.Errorf("schema %s: err = %v", schema, err)
		}
	}
}

// An assistant message's parts go as one text block; a binary part (a
// stored conversation may hold one) is a note, never silently dropped.
func TestAssistantParts(t *testing.T) {
	s := newServer(t, okStream)
	conv := []agent.Message{
		agent.UserText("go"),
		{Role: agent.RoleAssistant, Content: []events.Part{events.Text("Here: "), jsonPart(t, map[string]int{"n": 1}), events.Binary("image/png", []byte("png"))}},
		agent.UserText("ok"),
	}
	if _, err := s.model().Generate(ctx(t), &agent.Request{Messages: conv}); err != nil {
		t.Fatal(err)
	}
	same(t, "assistant", get(t, s.body(t, 0), "messages", 1), obj{"role": "assistant", "content": []any{
		obj{"type": "text", "text": `Here: {"n":1}[binary content left out: image/png, 3 bytes; an assistant message is sent as text]`},
	}})
}
