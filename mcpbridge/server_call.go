package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/schema"
	"github.com/toolstream/toolstream/toolkit"
)

// mcpCall is what the toolkit's events leave for the goroutine that serves
// an MCP call: the newest progress not yet sent and a pending approval.
// Observers must not block, so they only store and signal.
type mcpCall struct {
	signal chan struct{} // capacity 1: "look again"

	mu       sync.Mutex
	progress *events.Progress
	approval *interceptors.ApprovalRequest
}

func (c *mcpCall) poke() {
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

// observe is the Server's inline observer on the toolkit: it hands progress
// and approval requests of the calls it serves to their MCP handlers.
func (s *Server) observe(ev *events.Event) {
	if ev.Call == "" || (ev.Type != events.TypeProgress && ev.Type != interceptors.ApprovalEvent) {
		return
	}
	v, ok := s.inflight.Load(callKey{ev.Session, ev.Call})
	if !ok {
		return
	}
	c := v.(*mcpCall)
	switch ev.Type {
	case events.TypeProgress:
		if ev.Progress == nil {
			return
		}
		c.mu.Lock()
		c.progress = ev.Progress // the newest wins: progress is for people
		c.mu.Unlock()
	default:
		var req interceptors.ApprovalRequest
		if json.Unmarshal(ev.Data, &req) != nil || req.Status != "pending" || req.CallID != ev.Call {
			return
		}
		c.mu.Lock()
		c.approval = &req
		c.mu.Unlock()
	}
	c.poke()
}

// relay runs the call on the toolkit's goroutines and, while it runs, sends
// its progress as notifications/progress and turns an approval request into
// an elicitation.
func (s *Server) relay(ctx context.Context, req *mcp.CallToolRequest, ts *toolkit.Session, call toolkit.Call, token any, elicit bool) toolkit.Result {
	c := &mcpCall{signal: make(chan struct{}, 1)}
	key := callKey{ts.ID(), call.ID}
	s.inflight.Store(key, c)
	defer s.inflight.Delete(key)

	batch := ts.Start(ctx, []toolkit.Call{call})
	var last, total float64
	for {
		done := false
		select {
		case <-batch.Done():
			done = true // the newest progress still goes out, before the result
		case <-c.signal:
		}
		c.mu.Lock()
		p, a := c.progress, c.approval
		c.progress, c.approval = nil, nil
		c.mu.Unlock()
		if done {
			a = nil
		}
		if p != nil && token != nil {
			var n mcp.ProgressNotificationParams
			n.ProgressToken, n.Message = token, cutNoted(p.Message, maxProgressMessage)
			last, total = nextProgress(last, total, p.Fraction)
			n.Progress, n.Total = last, total
			// A client that went away ends ctx, and with it the call.
			_ = req.Session.NotifyProgress(ctx, &n)
		}
		if a != nil && elicit {
			s.elicit(ctx, req, ts.ID(), a, batch.Done())
		}
		if done {
			return batch.Wait()[0]
		}
	}
}

// maxProgressMessage bounds the message of a progress notification, in
// bytes: progress is for people, and a message over the client's frame (the
// go-sdk's 16 MiB) closed its connection, failing every call on it.
const maxProgressMessage = 16 << 10

// nextProgress returns MCP's progress and total for a toolstream progress
// event: percent of the work (total 100) once the tool gives a fraction, and
// always strictly more than the previous value, as MCP requires, even for a
// message without a fraction or a fraction that went back.
func nextProgress(last, total float64, fraction *float64) (float64, float64) {
	next := math.Nextafter(last, math.Inf(1))
	if fraction != nil && !math.IsNaN(*fraction) {
		total = 100
		if v := math.Min(math.Max(*fraction, 0), 1) * 100; v > last {
			next = v
		}
	}
	return next, total
}

// elicitSchema is the form of an approval: one yes/no field.
var elicitSchema = json.RawMessage(`{"type":"object","properties":{"approve":{"type":"boolean","title":"Allow this call","default":true}},"required":["approve"]}`)

// maxElicitArgs bounds the arguments quoted in an approval's question, in
// bytes: megabytes of arguments made a message over the client's frame (the
// go-sdk's 16 MiB), which closed its connection.
const maxElicitArgs = 4 << 10

// approvalQuestion is the message of the elicitation that asks about a:
// the tool, its arguments (cut to maxElicitArgs bytes) and the reason.
func approvalQuestion(a *interceptors.ApprovalRequest) string {
	msg := fmt.Sprintf("Allow the tool %q to run", a.Tool)
	if len(a.Args) > 0 {
		msg += " with " + cutNoted(string(a.Args), maxElicitArgs)
	}
	msg += "?"
	if a.Reason != "" {
		msg += " (" + a.Reason + ")"
	}
	return msg
}

// elicit asks the MCP client's user about a call the permissions wait for.
// If the client cannot answer, the request stays on the approval desk.
// The question is withdrawn (notifications/cancelled) when the call ends
// first, for example because someone answered on the desk.
func (s *Server) elicit(ctx context.Context, req *mcp.CallToolRequest, session string, a *interceptors.ApprovalRequest, done <-chan struct{}) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-done:
			cancel()
		case <-ctx.Done():
		}
	}()
	res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: approvalQuestion(a), RequestedSchema: elicitSchema})
	if err != nil {
		return // unanswered: the desk (page, code) decides, or the wait times out
	}
	if res.Action == "accept" {
		if ok, isBool := res.Content["approve"].(bool); !isBool || ok {
			_ = s.opts.perms.Approve(session, a.CallID)
			return
		}
	}
	reason := "the user of the MCP client said no"
	switch res.Action {
	case "decline":
		reason = "the user of the MCP client declined it"
	case "cancel":
		reason = "the user of the MCP client dismissed the question"
	}
	_ = s.opts.perms.Reject(session, a.CallID, reason)
}

// result maps a toolkit result to MCP: the parts as content, the last JSON
// part as structuredContent for a tool with an output schema (an isError
// result when there is none, or it does not conform), failures as
// isError with the text the model would read; and what is over the size
// limit as fit says.
func (s *Server) result(res toolkit.Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{Content: make([]mcp.Content, 0, len(res.Content))}
	var lastJSON json.RawMessage
	copyAt := -1 // the index in out.Content of its text
	for i, p := range res.Content {
		if c := mcpContent(p, res.Call.ID, i); c != nil {
			if p.Type == events.PartJSON {
				lastJSON, copyAt = p.JSON, len(out.Content)
			}
			out.Content = append(out.Content, c)
		}
	}
	if res.IsError() {
		out.IsError = true
		if len(out.Content) == 0 {
			text := string(res.State)
			if res.Err != nil {
				text = res.Err.Error()
			}
			out.Content = append(out.Content, &mcp.TextContent{Text: text})
		}
		return s.fit(res, out, -1)
	}
	if o := s.outputSchema(res.Call.Name); o != nil {
		if !isJSONObject(lastJSON) {
			return s.fit(res, noStructured(res.Call.Name, out, lastJSON, copyAt), -1)
		}
		if probs := o.problems(lastJSON); len(probs) > 0 {
			return s.fit(res, nonconforming(res.Call.Name, out, probs), -1)
		}
		out.StructuredContent = lastJSON
		return s.fit(res, out, copyAt)
	}
	return s.fit(res, out, -1)
}

// isJSONObject reports whether v is a JSON object (structuredContent must
// be one).
func isJSONObject(v json.RawMessage) bool {
	for _, b := range v {
		switch b {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return b == '{'
	}
	return false
}

// maxQuotedStructured bounds the structured value quoted in noStructured's
// message, in bytes.
const maxQuotedStructured = 200

// noStructured is what a client gets for a successful call of a tool with
// an output schema whose result has no structured value (a typed tool that
// returned a nil pointer or map, which the engine lets through, or a result
// an interceptor reshaped): MCP requires structuredContent from such a
// tool unless the result is an error, and the TypeScript SDK's client
// throws on a success without it. So it is an isError result that says
// why, followed by the content that was there (less the text copy of a
// structured value that is not an object). An interceptor that replaced a
// large result by a reference (Evict) is such a result too. last is the last JSON part (nil
// if none), copyAt the index of its text in out.Content.
func noStructured(tool string, out *mcp.CallToolResult, last json.RawMessage, copyAt int) *mcp.CallToolResult {
	var what string
	switch {
	case last != nil:
		what = "its structured value is " + cutNoted(string(last), maxQuotedStructured) + ", not an object"
	case len(out.Content) == 0:
		what = "the tool returned nothing"
	default:
		what = "it has no JSON value"
	}
	msg := fmt.Sprintf("The call of tool %q succeeded, but its result holds no structured value (%s), and over MCP a tool "+
		"with an output schema must give one that conforms to it, so this result is sent as an error.", tool, what)
	if len(out.Content) > 1 || (len(out.Content) == 1 && copyAt != 0) {
		msg += " Its content follows."
	}
	content := []mcp.Content{&mcp.TextContent{Text: msg}}
	for i, c := range out.Content {
		if i != copyAt {
			content = append(content, c)
		}
	}
	return &mcp.CallToolResult{Content: content, IsError: true}
}

// maxListedProblems bounds the paths nonconforming lists.
const maxListedProblems = 5

// nonconforming is what a client gets for a successful call of a tool with
// an output schema whose structured value does not conform to the schema
// the tool is listed with. The engine checked the tool's own result, so an
// interceptor changed it afterwards: a redaction (Sanitize) that replaced
// a value a pattern, enum, format or maxLength bound, say. Sent as
// structuredContent it would break the contract the client checks (the
// TypeScript SDK's client throws: "Structured content does not match the
// tool's output schema"); undoing the change could undo a redaction. So it
// is an isError result that says why, followed by the content as it is
// (the structured value as text included). It names the paths of the
// values that do not conform, not the problems: an enum's or a const's
// allowed values would tell what a redaction took out.
func nonconforming(tool string, out *mcp.CallToolResult, probs []schema.Problem) *mcp.CallToolResult {
	var paths []string
	for _, p := range probs {
		path := p.Path
		if path == "" {
			path = "(root)"
		}
		if !slices.Contains(paths, path) {
			paths = append(paths, path)
		}
	}
	at := strings.Join(paths, ", ")
	if len(paths) > maxListedProblems {
		at = fmt.Sprintf("%s and %d more", strings.Join(paths[:maxListedProblems], ", "), len(paths)-maxListedProblems)
	}
	msg := fmt.Sprintf("The call of tool %q succeeded, but its structured value does not conform to the tool's output schema at %s: "+
		"an interceptor changed it after the tool returned it (a redaction, for example), and over MCP a tool with an output schema "+
		"must give a value that conforms to it, so this result is sent as an error.", tool, at)
	if len(out.Content) > 0 {
		msg += " Its content follows."
	}
	content := append([]mcp.Content{&mcp.TextContent{Text: msg}}, out.Content...)
	return &mcp.CallToolResult{Content: content, IsError: true}
}

// mcpContent maps one part: text as text, JSON as its text (clients that
// read structuredContent get it there too), image/* and audio/* data as
// image and audio content, other data as an embedded resource.
func mcpContent(p events.Part, callID string, i int) mcp.Content {
	switch p.Type {
	case events.PartText:
		return &mcp.TextContent{Text: p.Text}
	case events.PartJSON:
		return &mcp.TextContent{Text: string(p.JSON)}
	}
	if p.IsEmpty() {
		return nil
	}
	switch {
	case strings.HasPrefix(p.MediaType, "image/"):
		return &mcp.ImageContent{Data: p.Data, MIMEType: p.MediaType}
	case strings.HasPrefix(p.MediaType, "audio/"):
		return &mcp.AudioContent{Data: p.Data, MIMEType: p.MediaType}
	}
	return &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
		URI:      fmt.Sprintf("toolstream://call/%s/part/%d", callID, i),
		MIMEType: p.MediaType,
		Blob:     p.Data,
	}}
}
