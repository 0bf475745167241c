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
