package agui_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
	"github.com/toolstream/toolstream/ui/agui"
	"github.com/toolstream/toolstream/ui/internal/thread"
)

// opEvents turns fuzz bytes into a response's events: each byte picks an
// event (its low bits) and a call among three (its high bits), in
// whatever order, the agent's and the calls' events interleaved; the last
// byte picks the end.
func opEvents(data []byte) ([]*events.Event, *thread.End) {
	var evs []*events.Event
	turn := 0
	body := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	session := func(typ events.Type, v any) {
		evs = append(evs, &events.Event{Version: 1, Type: typ, Session: "s", Data: body(v)})
	}
	call := func(ev events.Event) { ev.Version, ev.Session = 1, "s"; evs = append(evs, &ev) }
	for _, b := range data {
		id := fmt.Sprintf("c%d", b>>6)
		switch b & 31 {
		case 0:
			turn++
			session(agent.EventTurnStart, agent.TurnStart{Turn: turn})
		case 1:
			session(agent.EventText, agent.TextDelta{Turn: turn, Delta: "w "})
		case 2:
			session(agent.EventArgs, agent.ArgsDelta{Turn: turn, Call: id, Tool: "t"})
		case 3:
			session(agent.EventArgs, agent.ArgsDelta{Turn: turn, Call: id, Tool: "t", Delta: `{"a":`})
		case 4:
			session(agent.EventRetry, agent.Retry{Turn: turn, Attempt: 1})
		case 5:
			session(agent.EventTurnEnd, agent.TurnEnd{Turn: turn, Calls: []toolkit.Call{{ID: id, Name: "t", Args: json.RawMessage(`{}`)}}})
		case 6:
			session(agent.EventTurnEnd, agent.TurnEnd{Turn: turn, Calls: []toolkit.Call{{ID: "c0", Name: "t"}, {ID: "c1", Name: "t", Args: json.RawMessage(`{"x":1}`)}}})
		case 7:
			call(events.Event{Type: events.TypeStart, Call: id, Tool: "t", Start: &events.Start{}})
		case 8:
			call(events.Event{Type: events.TypeProgress, Call: id, Tool: "t", Progress: &events.Progress{Message: "p"}})
		case 9:
			call(events.Event{Type: events.TypeDelta, Call: id, Tool: "t", Delta: &events.Part{Type: events.PartText, Text: "d"}})
		case 10:
			call(events.Event{Type: events.TypeDelta, Call: id, Tool: "t", Reset: true, Delta: &events.Part{Type: events.PartText}})
		case 11:
			call(events.Event{Type: events.TypeDelta, Call: id, Tool: "t", Delta: &events.Part{Type: events.PartJSON, JSON: json.RawMessage(`{"k":[1]}`)}})
		case 12:
			call(events.Event{Type: events.TypeDelta, Call: id, Tool: "t", Delta: &events.Part{Type: events.PartBinary, MediaType: "image/png", Data: []byte{0, 1}}})
		case 13:
			call(events.Event{Type: events.TypeSuspend, Call: id, Tool: "t", Suspend: &events.Suspend{Reason: "approval"}})
		case 14:
			call(events.Event{Type: interceptors.ApprovalEvent, Call: id, Tool: "t", Data: body(interceptors.ApprovalRequest{CallID: id, Tool: "t", Status: "pending"})})
		case 15:
			call(events.Event{Type: interceptors.ApprovalEvent, Call: id, Tool: "t", Data: body(interceptors.ApprovalRequest{CallID: id, Tool: "t", Status: "approved"})})
		case 16:
			call(events.Event{Type: events.TypeResult, Call: id, Tool: "t", Result: &events.Result{State: events.StateSuccess, Content: []events.Part{events.Text("ok")}}})
		case 17:
			call(events.Event{Type: events.TypeResult, Call: id, Tool: "t", Result: &events.Result{State: events.StateError, Error: "bad"}})
		case 18:
			session("groups", map[string]any{"active": []string{"g"}})
		case 19:
			session("note", map[string]any{"n": 1})
		case 20:
			session(interceptors.ApprovalEvent, map[string]any{"batch": true})
		case 21:
			session(thread.MarkEvent, thread.Mark{Thread: "x", Response: 2})
		case 22:
			session(agent.EventText, agent.TextDelta{Turn: turn})
		case 23:
			session(agent.EventArgs, agent.ArgsDelta{Turn: turn, Tool: "t", Delta: "x"})
		case 24:
			call(events.Event{Type: events.TypeArgs, Call: id, Tool: "t", Data: json.RawMessage(`{"args":{"a":2}}`)})
		}
	}
	end := &thread.End{Kind: thread.EndAnswer, Answer: &agent.Answer{Text: "done"}}
	if n := len(data); n > 0 {
		switch data[n-1] % 3 {
		case 1:
			end = &thread.End{Kind: thread.EndError, Error: &agent.RunError{Error: "boom", Canceled: true}}
		case 2:
			end = &thread.End{Kind: thread.EndPaused, Approvals: []interceptors.ApprovalRequest{{CallID: "c0", Tool: "t", Status: "pending"}}}
		}
	}
	return evs, end
}

// FuzzTranslate: whatever events a response holds, in whatever order, the
// AG-UI run made of them keeps the official verifier's rules (RUN_STARTED
// first, nothing after the end, ARGS and END only for an open call, no
// START of an open call or message, nothing open at RUN_FINISHED), every
// frame is a JSON object with a type, and nothing panics.
func FuzzTranslate(f *testing.F) {
	for _, s := range []string{
		"\x00\x01\x01\x02\x03\x43\x05\x45\x07\x47\x08\x09\x0a\x0b\x0c\x10\x51\x00\x01",
		"\x00\x01\x04\x01\x03\x04\x02\x03\x06\x07\x0d\x0e\x02",
		"\x00\x02\x42\x03\x43\x06\x07\x47\x0f\x09\x4a\x10\x50\x12\x13\x14\x15\x00\x16\x17\x01",
		"\x05\x10\x00\x00\x04\x04\x06\x06",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, end := opEvents(data)
		rec := httptest.NewRecorder()
		agui.Translate(rec, "th", "r1", evs, end)
		var out []ev
		sc := bufio.NewScanner(rec.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if line == "" {
				continue
			}
			frame, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				t.Fatalf("not a data line: %q", line)
			}
			var e ev
			if err := json.Unmarshal([]byte(frame), &e); err != nil {
				t.Fatalf("frame %q: %v", frame, err)
			}
			if typ, _ := e["type"].(string); typ == "" {
				t.Fatalf("frame without a type: %q", frame)
			}
			out = append(out, e)
		}
		if err := verify(out); err != nil {
			t.Fatalf("%v\n%s", err, dump(out))
		}
	})
}
