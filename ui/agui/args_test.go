package agui_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
	"github.com/toolstream/toolstream/ui/agui"
	"github.com/toolstream/toolstream/ui/internal/thread"
)

// TestUnstreamedArgumentsAsWritten: a call the model did not stream gets
// its arguments from turn_end, which carries arguments that are not JSON
// as a JSON string of their text; the client is sent the text as the
// model wrote it, not that string quoted.
func TestUnstreamedArgumentsAsWritten(t *testing.T) {
	te := agent.TurnEnd{Turn: 1, Calls: []toolkit.Call{
		{ID: "bad", Name: "t", Args: json.RawMessage(`{"city": "Rome`)},
		{ID: "good", Name: "t", Args: json.RawMessage(`{"city":"Rome"}`)},
	}}
	data, err := json.Marshal(te) // as the agent publishes it
	if err != nil {
		t.Fatal(err)
	}
	evs := []*events.Event{
		{Version: 1, Type: agent.EventTurnStart, Session: "s", Data: json.RawMessage(`{"turn":1}`)},
		{Version: 1, Type: agent.EventTurnEnd, Session: "s", Data: data},
	}
	rec := httptest.NewRecorder()
	agui.Translate(rec, "th", "r1", evs, &thread.End{})
	out := frames(t, rec.Body.String())
	args := map[string]string{}
	for _, e := range of(out, "TOOL_CALL_ARGS") {
		args[e["toolCallId"].(string)] += e["delta"].(string)
	}
	if args["bad"] != `{"city": "Rome` || args["good"] != `{"city":"Rome"}` {
		t.Errorf("TOOL_CALL_ARGS add up to %q", args)
	}
}

// frames parses an SSE body of data frames.
func frames(t *testing.T, body string) []ev {
	t.Helper()
	var out []ev
	for _, line := range strings.Split(body, "\n") {
		frame, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var e ev
		if err := json.Unmarshal([]byte(frame), &e); err != nil {
			t.Fatalf("frame %q: %v", frame, err)
		}
		out = append(out, e)
	}
	if err := verify(out); err != nil {
		t.Fatalf("%v\n%s", err, dump(out))
	}
	return out
}

// TestArgumentsTheToolRanWithPassThrough: the args event of a call whose
// arguments an interceptor rewrote reaches the client as a CUSTOM
// toolstream.args event with its envelope (data.args), and leaves the
// call's own frames as they were: the TOOL_CALL_ARGS stay the model's.
func TestArgumentsTheToolRanWithPassThrough(t *testing.T) {
	te, _ := json.Marshal(agent.TurnEnd{Turn: 1, Calls: []toolkit.Call{{ID: "c1", Name: "write", Args: json.RawMessage(`{"path":"/etc/x"}`)}}})
	call := func(ev events.Event) *events.Event {
		ev.Version, ev.Session, ev.Call, ev.Tool = 1, "s", "c1", "write"
		return &ev
	}
	evs := []*events.Event{
		{Version: 1, Type: agent.EventTurnStart, Session: "s", Data: json.RawMessage(`{"turn":1}`)},
		{Version: 1, Type: agent.EventTurnEnd, Session: "s", Data: te},
		call(events.Event{Type: events.TypeStart, Start: &events.Start{Args: json.RawMessage(`{"path":"/etc/x"}`)}}),
		call(events.Event{Type: events.TypeArgs, Data: json.RawMessage(`{"args":{"path":"/tmp/x"}}`)}),
		call(events.Event{Type: events.TypeDelta, Delta: &events.Part{Type: events.PartText, Text: "wrote /tmp/x"}}),
		call(events.Event{Type: events.TypeResult, Result: &events.Result{State: events.StateSuccess, Content: []events.Part{events.Text("wrote /tmp/x")}}}),
	}
	rec := httptest.NewRecorder()
	agui.Translate(rec, "th", "r1", evs, &thread.End{})
	out := frames(t, rec.Body.String())
	var ran []string
	for _, e := range of(out, "CUSTOM") {
		if e["name"] == "toolstream.args" {
			v, _ := json.Marshal(e["value"])
			var env events.Event
			if err := json.Unmarshal(v, &env); err != nil || env.Call != "c1" {
				t.Fatalf("CUSTOM toolstream.args value %s: %v", v, err)
			}
			ran = append(ran, string(env.Data))
		}
	}
	if len(ran) != 1 || ran[0] != `{"args":{"path":"/tmp/x"}}` {
		t.Fatalf("CUSTOM toolstream.args: %q, want one with the arguments the tool ran with\n%s", ran, dump(out))
	}
	var args string
	for _, e := range of(out, "TOOL_CALL_ARGS") {
		args += e["delta"].(string)
	}
	if args != `{"path":"/etc/x"}` || results(out)["c1"] != "wrote /tmp/x" {
		t.Fatalf("TOOL_CALL_ARGS %q, results %v\n%s", args, results(out), dump(out))
	}
}
