package mcpbridge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// TestServerContentKinds: every kind of part reaches the client as the MCP
// content made for it, in order, with streamed deltas in the final content.
func TestServerContentKinds(t *testing.T) {
	tk := srvToolkit(t)
	png, wav, pdf := []byte("\x89PNG..."), []byte("RIFF...."), []byte("%PDF-1.7")
	media, err := toolkit.NewRawTool(toolkit.Spec{Name: "media", Description: "All kinds of parts."},
		json.RawMessage(`{"type":"object"}`), func(ctx context.Context, _ json.RawMessage) ([]events.Part, error) {
			_ = stream.From(ctx).Text("streamed, ")
			j, _ := events.JSON(map[string]int{"n": 1})
			return []events.Part{events.Text("then returned"), j,
				events.Binary("image/png", png), events.Binary("audio/wav", wav), events.Binary("application/pdf", pdf)}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.Add(media); err != nil {
		t.Fatal(err)
	}
	cs := srvConnect(t, srvNew(t, tk), nil, "")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "media"})
	if err != nil || res.IsError || len(res.Content) != 5 {
		t.Fatalf("media: %+v %v", res, err)
	}
	if c := res.Content[0].(*mcp.TextContent); c.Text != "streamed, then returned" {
		t.Errorf("text %q", c.Text)
	}
	if c := res.Content[1].(*mcp.TextContent); c.Text != `{"n":1}` {
		t.Errorf("json as text %q", c.Text)
	}
	if res.StructuredContent != nil {
		t.Errorf("structuredContent for a tool without an output schema: %v", res.StructuredContent)
	}
	if c, ok := res.Content[2].(*mcp.ImageContent); !ok || c.MIMEType != "image/png" || !bytes.Equal(c.Data, png) {
		t.Errorf("image %+v", res.Content[2])
	}
	if c, ok := res.Content[3].(*mcp.AudioContent); !ok || c.MIMEType != "audio/wav" || !bytes.Equal(c.Data, wav) {
		t.Errorf("audio %+v", res.Content[3])
	}
	c, ok := res.Content[4].(*mcp.EmbeddedResource)
	if !ok || c.Resource.MIMEType != "application/pdf" || !bytes.Equal(c.Resource.Blob, pdf) || !strings.HasPrefix(c.Resource.URI, "toolstream://call/mcp-") {
		t.Errorf("resource %+v", res.Content[4])
	}
}

// TestServerCallContext: WithCallContext puts what the request says (here
// the client's name) in the call's context.
func TestServerCallContext(t *testing.T) {
	tk := srvToolkit(t)
	if err := tk.Add(toolkit.MustTool(toolkit.Spec{Name: "whoami", Description: "The user."},
		func(ctx context.Context, _ struct{}) (string, error) { return toolkit.User(ctx), nil })); err != nil {
		t.Fatal(err)
	}
	s := srvNew(t, tk, mcpbridge.WithCallContext(func(ctx context.Context, req *mcp.CallToolRequest) context.Context {
		return toolkit.WithUser(ctx, "client:"+req.ClientInfo().Name)
	}))
	cs := srvConnect(t, s, nil, "")
	if text, isErr := srvCallText(t, cs, "whoami", nil); isErr || text != "client:test" {
		t.Fatalf("whoami: %v %q", isErr, text)
	}
}

// TestServerClose: Close ends the MCP sessions and the toolstream sessions
// they opened, interrupting a call that was running.
func TestServerClose(t *testing.T) {
	started := make(chan struct{}, 1)
	tk := srvToolkit(t, toolkit.WithInlineObserver(toolkit.ObserverFunc(func(ev *events.Event) {
		if ev.Type == events.TypeStart && ev.Tool == "slow" {
			started <- struct{}{}
		}
	})))
	s, err := mcpbridge.NewServer(tk)
	if err != nil {
		t.Fatal(err)
	}
	cs := srvConnect(t, s, nil, "2025-11-25")
	if _, isErr := srvCallText(t, cs, "noop", nil); isErr || len(tk.Sessions()) != 1 {
		t.Fatalf("noop: %v, sessions %v", isErr, tk.Sessions())
	}
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	answers := make(chan answer, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow"})
		answers <- answer{res, err}
	}()
	<-started
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if open := tk.Sessions(); len(open) != 0 {
		t.Fatalf("sessions after Close: %v", open)
	}
	// The interrupted call's answer may still reach the client before its
	// session closes (an error result), or the session closes first (an
	// error): it never succeeds.
	if a := <-answers; a.err == nil && !a.res.IsError {
		t.Fatalf("the call in flight at Close succeeded: %+v", a.res)
	}
}

func TestServerSessionPrefix(t *testing.T) {
	tk := srvToolkit(t)
	if _, err := mcpbridge.NewServer(tk, mcpbridge.WithSessionPrefix("bad\x00")); err == nil {
		t.Fatal("a prefix with a control character was accepted")
	}
	if _, err := mcpbridge.NewServer(tk, mcpbridge.WithSessionPrefix(strings.Repeat("p", 250))); err == nil {
		t.Fatal("a prefix too long for session ids was accepted")
	}
	s := srvNew(t, tk, mcpbridge.WithSessionPrefix("agent-a/"))
	cs := srvConnect(t, s, nil, "2025-11-25")
	if _, isErr := srvCallText(t, cs, "noop", nil); isErr {
		t.Fatal("noop failed")
	}
	if open := tk.Sessions(); len(open) != 1 || !strings.HasPrefix(open[0], "agent-a/") {
		t.Fatalf("sessions %v", open)
	}
}
