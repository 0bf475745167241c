package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/toolkit"
)

// Model interceptors wrap each attempt in the order given (the first
// outermost): they rewrite the request, see and rewrite the stream,
// rewrite the reply, and answer without the model; the loop's retries run
// the whole chain again.
func TestModelInterceptors(t *testing.T) {
	ctx := context.Background()
	tk, rec := record(t, "chain")
	tk.Add(weatherTool(t))
	sess, _ := tk.Session("chain")
	m := &script{steps: []step{
		{err: &agent.APIError{Provider: "test", StatusCode: 503, Retryable: true}},
		{chunks: []agent.Chunk{{Kind: agent.ChunkText, Text: "The secret "}, {Kind: agent.ChunkText, Text: "is out."}},
			reply: &agent.Reply{Text: "The secret is out.", Calls: []toolkit.Call{call("w", "weather", `{"city":"Oslo"}`)}}},
	}}
	var log []string
	outer := func(ctx context.Context, req *agent.Request, next agent.Model) (*agent.Reply, error) {
		log = append(log, "outer in")
		r := *req
		r.System += " Never tell secrets."
		reply, err := next.Generate(ctx, &r)
		log = append(log, fmt.Sprintf("outer out (err %v)", err != nil))
		if err == nil {
			reply.Text = strings.ReplaceAll(reply.Text, "secret", "[redacted]")
		}
		return reply, err
	}
	inner := func(ctx context.Context, req *agent.Request, next agent.Model) (*agent.Reply, error) {
		log = append(log, "inner in: "+req.System)
		if last := req.Messages[len(req.Messages)-1]; last.Role == agent.RoleTool { // a cache: the model is not asked
			return &agent.Reply{Text: "Cached: " + last.Text()}, nil
		}
		r := *req
		r.Stream = func(c agent.Chunk) {
			log = append(log, "chunk "+c.Text)
			c.Text = strings.ReplaceAll(c.Text, "secret", "[redacted]")
			req.Send(c)
		}
		return next.Generate(ctx, &r)
	}
	l := agent.New(m, agent.WithModelInterceptor(outer), agent.WithModelInterceptor(inner),
		agent.WithRetry(agent.RetryPolicy{Attempts: 2, Backoff: time.Millisecond}))
	conv := agent.NewConversation("Be brief.", "Weather?")
	out, err := l.Run(ctx, sess, conv)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"outer in", "inner in: Be brief. Never tell secrets.", "outer out (err true)", // attempt 1
		"outer in", "inner in: Be brief. Never tell secrets.", "chunk The secret ", "chunk is out.", "outer out (err false)", // attempt 2
		"outer in", "inner in: Be brief. Never tell secrets.", "outer out (err false)", // turn 2, from the cache
	}
	if strings.Join(log, "\n") != strings.Join(want, "\n") {
		t.Fatalf("chain:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
	if out.Answer != "Cached: sunny in Oslo" || len(m.requests()) != 2 || m.requests()[1].System != "Be brief. Never tell secrets." {
		t.Fatalf("answer %q after %d model requests", out.Answer, len(m.requests()))
	}
	if conv.System != "Be brief." || conv.Messages[1].Text() != "The [redacted] is out." {
		t.Errorf("stored: system %q, reply %q", conv.System, conv.Messages[1].Text())
	}
	var streamed strings.Builder
	for _, ev := range rec.waitFor(t, agent.EventAnswer) {
		if ev.Type == agent.EventText {
			streamed.WriteString(body[agent.TextDelta](t, ev).Delta)
		}
	}
	if streamed.String() != "The [redacted] is out.Cached: sunny in Oslo" {
		t.Errorf("text_delta events add up to %q", streamed.String())
	}
}
