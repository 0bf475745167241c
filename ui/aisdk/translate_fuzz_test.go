package aisdk

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
	"github.com/toolstream/toolstream/ui/internal/thread"
)

// runScript is one run of the agent made up from fuzz bytes, in an order
// the agent loop and the toolkit can produce: turns whose text and calls
// stream (attempts a retry takes back), then the turn's calls, their
// events interleaved (start, approvals, progress, deltas and resets,
// result), pauses where only waiting calls are left, and an end. Each
// step is an event, or (ev nil) the end of a response: a later one when
// more steps follow (the run goes on after the pause).
type step struct {
	ev  *events.Event
	end *thread.End
}

type fuzzBytes struct {
	data []byte
	i    int
}

func (g *fuzzBytes) pick(n int) int {
	if g.i >= len(g.data) || n <= 1 {
		return 0
	}
	b := g.data[g.i]
	g.i++
	return int(b) % n
}

func runScript(data []byte) []step {
	g := &fuzzBytes{data: data}
	var out []step
	body := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	session := func(typ events.Type, v any) {
		out = append(out, step{ev: &events.Event{Version: 1, Type: typ, Session: "s", Data: body(v)}})
	}
	callEv := func(ev events.Event) { ev.Version, ev.Session, ev.Tool = 1, "s", "t"; out = append(out, step{ev: &ev}) }
	for turn := 1; turn <= 3; turn++ {
		session(agent.EventTurnStart, agent.TurnStart{Turn: turn})
		var calls []toolkit.Call
		for attempt := 0; ; attempt++ {
			calls = calls[:0]
			for range g.pick(3) {
				session(agent.EventText, agent.TextDelta{Turn: turn, Delta: "w "})
			}
			for i := range g.pick(4) {
				c := toolkit.Call{ID: fmt.Sprintf("c%d_%d", turn, i), Name: "t", Args: json.RawMessage(`{"a":1}`)}
				calls = append(calls, c)
				if g.pick(3) > 0 {
					session(agent.EventArgs, agent.ArgsDelta{Turn: turn, Index: i, Call: c.ID, Tool: c.Name})
					session(agent.EventArgs, agent.ArgsDelta{Turn: turn, Index: i, Call: c.ID, Tool: c.Name, Delta: `{"a":`})
					if g.pick(2) == 0 {
						session(agent.EventText, agent.TextDelta{Turn: turn, Delta: "and "})
					}
					session(agent.EventArgs, agent.ArgsDelta{Turn: turn, Index: i, Call: c.ID, Tool: c.Name, Delta: `1}`})
				}
			}
			if attempt < 2 && g.pick(5) == 0 {
				session(agent.EventRetry, agent.Retry{Turn: turn, Attempt: attempt + 1})
				continue
			}
			break
		}
		session(agent.EventTurnEnd, agent.TurnEnd{Turn: turn, Calls: slices.Clone(calls)})
		if len(calls) == 0 {
			break
		}
		// The calls' events: each call's in order, the calls interleaved.
		type callRun struct {
			id      string
			started bool
			asks    bool // waits for approval before it runs
			waiting bool
			steps   int // deltas and progress left
			done    bool
		}
		var runs []*callRun
		for _, c := range calls {
			runs = append(runs, &callRun{id: c.ID, asks: g.pick(3) == 0, steps: g.pick(4)})
		}
		for {
			var live []*callRun
			for _, r := range runs {
				if !r.done && !r.waiting {
					live = append(live, r)
				}
			}
			var waiting []interceptors.ApprovalRequest
			for _, r := range runs {
				if r.waiting {
					waiting = append(waiting, interceptors.ApprovalRequest{CallID: r.id, Tool: "t", Status: "pending"})
				}
			}
			if len(live) == 0 && len(waiting) > 0 {
				// Paused: the response ends; the next one answers.
				end := &thread.End{Kind: thread.EndPaused, Approvals: waiting}
				if g.pick(6) == 0 {
					out = append(out, step{end: end})
					return out // the run is still paused
				}
				out = append(out, step{end: end})
				ids := make([]string, len(waiting))
				for i, w := range waiting {
					ids[i] = w.CallID
				}
				session(thread.AnswersEvent, thread.AnswerCalls{Thread: "x", Calls: ids})
				for _, r := range runs {
					if r.waiting {
						r.waiting = false
						status := "approved"
						if g.pick(3) == 0 {
							status, r.steps = "rejected", 0
						}
						callEv(events.Event{Type: interceptors.ApprovalEvent, Call: r.id, Data: body(interceptors.ApprovalRequest{CallID: r.id, Tool: "t", Status: status})})
						if status == "approved" { // as with edited arguments: the arguments the tool runs with
							callEv(events.Event{Type: events.TypeArgs, Call: r.id, Data: json.RawMessage(`{"args":{"a":2}}`)})
						}
					}
				}
				continue
			}
			if len(live) == 0 {
				break
			}
			r := live[g.pick(len(live))]
			switch {
			case !r.started:
				r.started = true
				callEv(events.Event{Type: events.TypeStart, Call: r.id, Start: &events.Start{}})
				if r.asks {
					r.asks = false
					callEv(events.Event{Type: events.TypeSuspend, Call: r.id, Suspend: &events.Suspend{Reason: "approval"}})
					callEv(events.Event{Type: interceptors.ApprovalEvent, Call: r.id, Data: body(interceptors.ApprovalRequest{CallID: r.id, Tool: "t", Status: "pending"})})
					r.waiting = true
				}
			case r.steps > 0:
				r.steps--
				switch g.pick(5) {
				case 0:
					callEv(events.Event{Type: events.TypeProgress, Call: r.id, Progress: &events.Progress{Message: "p"}})
				case 1:
					callEv(events.Event{Type: events.TypeDelta, Call: r.id, Reset: true, Delta: &events.Part{Type: events.PartText}})
				case 2:
					callEv(events.Event{Type: events.TypeDelta, Call: r.id, Delta: &events.Part{Type: events.PartJSON, JSON: json.RawMessage(`{"k":1}`)}})
				default:
					callEv(events.Event{Type: events.TypeDelta, Call: r.id, Delta: &events.Part{Type: events.PartText, Text: "d"}})
				}
			default:
				r.done = true
				state := []events.State{events.StateSuccess, events.StateError, events.StateDenied, events.StateInterrupted}[g.pick(4)]
				callEv(events.Event{Type: events.TypeResult, Call: r.id, Result: &events.Result{State: state, Content: []events.Part{events.Text("ok")}, Error: "e"}})
			}
			if g.pick(40) == 0 {
				session(agent.EventError, agent.RunError{Turn: turn, Error: "boom"})
				return append(out, step{end: &thread.End{Kind: thread.EndError, Error: &agent.RunError{Error: "boom"}}})
			}
		}
	}
	session(agent.EventAnswer, agent.Answer{Text: "done"})
	return append(out, step{end: &thread.End{Kind: thread.EndAnswer}})
}

// FuzzTranslateRun: a run's responses, live one by one (each its own
// stream, the client going on with the message) and as a resume sends
// them (one stream from the run's start), are streams the `ai` package's
// reader takes: a mirror of its rules (text and tool-input deltas only
// for an open part, outputs and approval requests only for a tool part
// the message has, reset-step taking back the step's parts, start first,
// finish last).
func FuzzTranslateRun(f *testing.F) {
	for _, s := range []string{"", "\x01\x02\x01\x01\x00\x00\x01", "\x02\x03\x01\x00\x00\x00\x01\x01\x00\x05\x01\x02\x03",
		"\x00\x02\x02\x01\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x01\x01"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		steps := runScript(data)
		// Live: a stream per response, each continuing the message.
		var live [][]map[string]any
		var tr *translator
		var rec *httptest.ResponseRecorder
		for _, s := range steps {
			if tr == nil {
				rec = httptest.NewRecorder()
				tr = newTranslator(newWriter(rec), "msg", 1)
				tr.begin()
			}
			if s.ev != nil {
				tr.event(s.ev)
				continue
			}
			tr.finish(s.end)
			tr.out.done()
			live = append(live, frames(t, rec.Body.String()))
			tr = nil
		}
		m := &mirror{}
		for i, cs := range live {
			if err := m.read(cs); err != nil {
				t.Fatalf("live response %d: %v\n%s", i+1, err, dumpChunks(cs))
			}
		}
		// Resumed: one stream, the earlier ends in between.
		rec = httptest.NewRecorder()
		tr = newTranslator(newWriter(rec), "msg", 1)
		tr.begin()
		for i, s := range steps {
			switch {
			case s.ev != nil:
				tr.event(s.ev)
			case i < len(steps)-1:
				tr.between(s.end)
			default:
				tr.finish(s.end)
			}
		}
		tr.out.done()
		resumed := frames(t, rec.Body.String())
		m2 := &mirror{}
		if err := m2.read(resumed); err != nil {
			t.Fatalf("resumed: %v\n%s", err, dumpChunks(resumed))
		}
		if a, b := fmt.Sprint(m.parts), fmt.Sprint(m2.parts); a != b {
			t.Fatalf("the resumed message has parts %s, the live one %s", b, a)
		}
	})
}

func frames(t *testing.T, s string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 1<<20)
	done := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || done {
			t.Fatalf("line %q (after [DONE]: %v)", line, done)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var c map[string]any
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("%q: %v", data, err)
		}
		out = append(out, c)
	}
	if !done {
		t.Fatal("no [DONE]")
	}
	return out
}

func dumpChunks(cs []map[string]any) string {
	var b strings.Builder
	for _, c := range cs {
		j, _ := json.Marshal(c)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

// mirror follows what ai's processUIMessageStream does with a message's
// parts, and fails where it throws.
type mirror struct {
	parts   []string // "step", "text", "tool:<id>", in order
	text    map[string]bool
	partial map[string]bool
}

func (m *mirror) hasTool(id string) bool { return slices.Contains(m.parts, "tool:"+id) }

func (m *mirror) read(cs []map[string]any) error {
	m.text, m.partial = map[string]bool{}, map[string]bool{}
	for i, c := range cs {
		typ, _ := c["type"].(string)
		id, _ := c["id"].(string)
		call, _ := c["toolCallId"].(string)
		switch {
		case (i == 0) != (typ == "start"):
			return fmt.Errorf("chunk %d is %s", i, typ)
		case (i == len(cs)-1) != (typ == "finish"):
			return fmt.Errorf("chunk %d of %d is %s", i, len(cs), typ)
		}
		switch typ {
		case "start-step":
			m.parts = append(m.parts, "step")
		case "reset-step":
			last := -1
			for j, p := range m.parts {
				if p == "step" {
					last = j
				}
			}
			m.parts = m.parts[:last+1]
			m.text, m.partial = map[string]bool{}, map[string]bool{}
		case "text-start":
			m.text[id] = true
			m.parts = append(m.parts, "text")
		case "text-delta", "text-end":
			if !m.text[id] {
				return fmt.Errorf("chunk %d: %s for missing text part %q", i, typ, id)
			}
			if typ == "text-end" {
				delete(m.text, id)
			}
		case "tool-input-start":
			m.partial[call] = true
			if !m.hasTool(call) {
				m.parts = append(m.parts, "tool:"+call)
			}
		case "tool-input-delta":
			if !m.partial[call] {
				return fmt.Errorf("chunk %d: tool-input-delta for missing tool call %q", i, call)
			}
		case "tool-input-available":
			if !m.hasTool(call) {
				m.parts = append(m.parts, "tool:"+call)
			}
		case "tool-approval-request", "tool-output-available", "tool-output-error", "tool-output-denied":
			if !m.hasTool(call) {
				return fmt.Errorf("chunk %d: %s: no tool invocation found for tool call ID %q", i, typ, call)
			}
		}
	}
	return nil
}
