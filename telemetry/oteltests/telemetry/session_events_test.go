package telemetry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

// Session-level events carry the trace of the work that sent them: the
// groups event of a reset_tools call its call's span, the agent loop's
// events the span of the caller's run (Session.Emit), so that a
// NATS subscriber links every event of a run to a span.
func TestSessionEventsCarryTheirWorksTrace(t *testing.T) {
	bus := natstest.Bus(t)
	rec := listen(t, bus)
	r := newRig(t, nil, toolkit.WithInlineObserver(bus.Publisher()))
	testutil.Add(t, r.tk, tool(t, toolkit.Spec{Name: "work"}, func(ctx context.Context, in struct{}) (string, error) { return "done", nil }))
	gm, err := groups.Install(r.tk)
	if err != nil {
		t.Fatal(err)
	}
	if err := gm.Add(groups.Group{Name: "tools", Description: "Work.", Tools: []string{"work"}}); err != nil {
		t.Fatal(err)
	}
	model := agent.ModelFunc(func(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
		if len(req.Messages) == 1 {
			return &agent.Reply{Calls: []toolkit.Call{{ID: "g1", Name: groups.MetaTool, Args: json.RawMessage(`{"tools":true}`)}}}, nil
		}
		return &agent.Reply{Text: "Done."}, nil
	})
	sess := testutil.Session(t, r.tk, "conv")
	ctx, run := r.tp.Tracer("test").Start(context.Background(), "invoke_agent")
	if _, err := agent.New(model).Run(ctx, sess, agent.NewConversation("", "Switch the tools on.")); err != nil {
		t.Fatal(err)
	}
	run.End()

	deadline := time.Now().Add(10 * time.Second)
	for {
		got := rec.All()
		done := len(got) > 0 && got[len(got)-1].Type == agent.EventAnswer
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	runSpan := r.span(t, "invoke_agent")
	callSpan := r.span(t, "execute_tool "+groups.MetaTool)
	wantRun := fmt.Sprintf("00-%s-%s-01", runSpan.SpanContext.TraceID(), runSpan.SpanContext.SpanID())
	wantCall := fmt.Sprintf("00-%s-%s-01", callSpan.SpanContext.TraceID(), callSpan.SpanContext.SpanID())
	seen := map[events.Type]bool{}
	for _, ev := range rec.All() {
		if ev.Call != "" {
			continue
		}
		seen[ev.Type] = true
		want := wantRun
		if ev.Type == groups.EventType {
			want = wantCall
		}
		if ev.Trace == nil || ev.Trace.TraceParent() != want {
			t.Errorf("%s event's trace %v, want %s", ev.Type, ev.Trace, want)
		}
	}
	for _, typ := range []events.Type{agent.EventTurnStart, agent.EventTurnEnd, agent.EventAnswer, groups.EventType} {
		if !seen[typ] {
			t.Errorf("no %s event on NATS", typ)
		}
	}
}
