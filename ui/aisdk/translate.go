package aisdk

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/ui/internal/thread"
)

// The data parts toolstream sends (each as data-<name>).
const (
	// dataProgress is a call's progress (transient: only onData sees it).
	// Its id is the call's, so a stored one would replace the previous.
	dataProgress = "toolstream-progress"
	// dataGroups is the session's tool groups (id "groups": each replaces
	// the one before in the message).
	dataGroups = "toolstream-groups"
	// dataSkills is the skills loaded (id "skills").
	dataSkills = "toolstream-skills"
	// dataAnswers (data thread.AnswersReport, id "answers-<response>") opens a
	// response when some of the request's answers were given and others
	// could not be: their calls stopped waiting between the check and the
	// answer (an approval that expired just then). The run goes on with
	// the answers given.
	dataAnswers = "toolstream-answers"
)

// progressData is the data of a dataProgress part.
type progressData struct {
	Call string `json:"call"`
	Tool string `json:"tool"`
	events.Progress
}

// translator turns one response's events into UI message chunks. It
// reads nothing but the events, so a replay writes the same stream.
type translator struct {
	out       *writer
	messageID string
	run       int

	step    bool
	text    string // the open text part's id
	turn    int
	attempt int
	started map[string]bool // tool parts begun in this response
	asked   map[string]bool // calls whose approval this response requested
	content map[string]*events.Reassembler
	// A call's first output is held until the call's next event: if that
	// is the result, the output was what the tool returned, and only the
	// final output goes, as the AI SDK sends a tool's plain return (one
	// final output; preliminary ones are a streaming tool's yields).
	// Otherwise it goes then, before what follows.
	outputs map[string]bool // calls with an output in this response
	held    []heldOutput    // in the order they came
}

// heldOutput is a call's first output, not sent yet.
type heldOutput struct {
	call   string
	output any
}

func newTranslator(out *writer, messageID string, run int) *translator {
	return &translator{out: out, messageID: messageID, run: run, started: map[string]bool{}, asked: map[string]bool{},
		content: map[string]*events.Reassembler{}, outputs: map[string]bool{}}
}

// preliminary sends a call's output so far.
func (t *translator) preliminary(call string, output any) {
	t.out.chunk(map[string]any{"type": "tool-output-available", "toolCallId": call, "output": output, "preliminary": true, "dynamic": true})
}

// release sends call's held output, if any; drop forgets it instead.
func (t *translator) release(call string, drop bool) {
	for i, h := range t.held {
		if h.call == call {
			t.held = slices.Delete(t.held, i, i+1)
			if !drop {
				t.preliminary(h.call, h.output)
			}
			return
		}
	}
}

func (t *translator) begin() {
	t.out.chunk(map[string]any{"type": "start", "messageId": t.messageID})
}

func (t *translator) event(ev *events.Event) {
	if ev.Call != "" && ev.Type != events.TypeDelta {
		t.release(ev.Call, ev.Type == events.TypeResult) // a result makes the held output the final one
	}
	switch ev.Type {
	case agent.EventTurnStart:
		var b agent.TurnStart
		_ = json.Unmarshal(ev.Data, &b)
		t.closeText()
		if t.step {
			t.out.chunk(map[string]any{"type": "finish-step"})
		}
		t.step, t.turn, t.attempt = true, b.Turn, 0
		t.out.chunk(map[string]any{"type": "start-step"})
	case agent.EventText:
		var b agent.TextDelta
		_ = json.Unmarshal(ev.Data, &b)
		if b.Delta == "" {
			return
		}
		if t.text == "" {
			t.text = fmt.Sprintf("text-%d-%d-%d", t.run, t.turn, t.attempt)
			t.out.chunk(map[string]any{"type": "text-start", "id": t.text})
		}
		t.out.chunk(map[string]any{"type": "text-delta", "id": t.text, "delta": b.Delta})
	case agent.EventArgs:
		var b agent.ArgsDelta
		_ = json.Unmarshal(ev.Data, &b)
		if b.Call == "" {
			return
		}
		t.startTool(b.Call, b.Tool)
		if b.Delta != "" {
			t.out.chunk(map[string]any{"type": "tool-input-delta", "toolCallId": b.Call, "inputTextDelta": b.Delta})
		}
	case agent.EventRetry:
		// What the turn streamed is void: reset-step takes it back.
		t.closeText()
		t.out.chunk(map[string]any{"type": "reset-step"})
		t.attempt++
		clear(t.started)
	case agent.EventTurnEnd:
		var b agent.TurnEnd
		_ = json.Unmarshal(ev.Data, &b)
		t.closeText()
		for _, c := range b.Calls {
			t.startTool(c.ID, c.Name)
			var input any = string(c.Args) // not JSON: the toolkit tells the model, the UI shows the text
			if json.Valid(c.Args) {
				input = json.RawMessage(c.Args)
			}
			t.out.chunk(map[string]any{"type": "tool-input-available", "toolCallId": c.ID, "toolName": c.Name, "input": input, "dynamic": true})
		}
	case events.TypeProgress:
		t.out.chunk(map[string]any{"type": "data-" + dataProgress, "id": "progress-" + ev.Call, "transient": true,
			"data": progressData{Call: ev.Call, Tool: ev.Tool, Progress: *ev.Progress}})
	case events.TypeDelta:
		r := t.reassembler(ev.Call)
		if r.Add(ev) != nil || r.Pending() {
			return // a chunk of a part not whole yet (or a broken run of chunks: the result says it all)
		}
		if !t.outputs[ev.Call] {
			t.outputs[ev.Call] = true
			t.held = append(t.held, heldOutput{ev.Call, toolOutput(r.Content())})
			return
		}
		t.release(ev.Call, false)
		t.preliminary(ev.Call, toolOutput(r.Content()))
	case interceptors.ApprovalEvent:
		if ev.Call == "" {
			t.data(ev)
			return
		}
		var req interceptors.ApprovalRequest
		if json.Unmarshal(ev.Data, &req) != nil || req.Status != "pending" {
			return // the outcome shows in the call's result
		}
		req.CallID = ev.Call
		t.approvalRequest(req)
	case events.TypeResult:
		res := ev.Result
		content := res.Content
		if res.ContentOmitted {
			content = t.reassembler(ev.Call).Content()
		}
		delete(t.content, ev.Call)
		switch res.State {
		case events.StateSuccess:
			t.out.chunk(map[string]any{"type": "tool-output-available", "toolCallId": ev.Call, "output": toolOutput(content), "dynamic": true})
		case events.StateDenied:
			t.out.chunk(map[string]any{"type": "tool-output-denied", "toolCallId": ev.Call})
		default:
			msg := res.Error
			if msg == "" {
				msg = string(res.State)
			}
			t.out.chunk(map[string]any{"type": "tool-output-error", "toolCallId": ev.Call, "errorText": msg, "dynamic": true})
		}
	case "groups", "skills":
		if ev.Call != "" {
			t.data(ev)
			return
		}
		name := dataGroups
		if ev.Type == "skills" {
			name = dataSkills
		}
		t.out.chunk(map[string]any{"type": "data-" + name, "id": string(ev.Type), "data": ev.Data})
	case events.TypeStart, events.TypeSuspend, agent.EventAnswer, agent.EventError, thread.MarkEvent, thread.AnswersEvent:
		// start and suspend show in the tool part's states; the run's end
		// comes with the response's end (finish).
	default:
		t.data(ev)
	}
}

// data passes an event the protocol has no part for as a transient
// data-toolstream-<type> part holding the envelope.
func (t *translator) data(ev *events.Event) {
	t.out.chunk(map[string]any{"type": "data-toolstream-" + string(ev.Type), "transient": true, "data": ev})
}

func (t *translator) reassembler(call string) *events.Reassembler {
	r := t.content[call]
	if r == nil {
		r = &events.Reassembler{}
		t.content[call] = r
	}
	return r
}

func (t *translator) approvalRequest(req interceptors.ApprovalRequest) {
	t.asked[req.CallID] = true
	c := map[string]any{"type": "tool-approval-request", "approvalId": req.CallID, "toolCallId": req.CallID}
	if req.Reason != "" {
		c["reason"] = req.Reason
	}
	t.out.chunk(c)
}

func (t *translator) startTool(id, name string) {
	if t.started[id] {
		return
	}
	t.started[id] = true
	t.out.chunk(map[string]any{"type": "tool-input-start", "toolCallId": id, "toolName": name, "dynamic": true})
}

func (t *translator) closeText() {
	if t.text != "" {
		t.out.chunk(map[string]any{"type": "text-end", "id": t.text})
		t.text = ""
	}
}

// finish ends the message as the response ended.
func (t *translator) finish(end *thread.End) {
	t.out.chunk(map[string]any{"type": "finish", "finishReason": t.end(end)})
}

// between ends a response that a later one of the same run continues, in
// one stream (a resume sends the run's message from its start): what the
// live response sent at its end but the finish chunk.
func (t *translator) between(end *thread.End) {
	t.end(end)
	clear(t.asked) // per response, as live
	clear(t.outputs)
}

// end closes what the response leaves open and says why it ended; it
// returns the finish reason.
func (t *translator) end(end *thread.End) string {
	for _, h := range t.held { // calls the response ends without a result for
		t.preliminary(h.call, h.output)
	}
	t.held = nil
	t.closeText()
	if t.step {
		t.out.chunk(map[string]any{"type": "finish-step"})
		t.step = false
	}
	reason := "stop"
	switch end.Kind {
	case thread.EndAnswer:
		if end.Answer != nil && end.Answer.Truncated {
			reason = "length" // cut at the output token limit: not a whole answer
		}
	case thread.EndPaused:
		reason = "tool-calls" // the approvals wait: the next request answers them
		// Every call the run waits for is asked for here, also one whose
		// request went to a response no client read (it asked after the
		// response before was cut), as AG-UI's interrupts list them all.
		for _, req := range end.Approvals {
			if !t.asked[req.CallID] {
				t.approvalRequest(req)
			}
		}
	case thread.EndError:
		reason = "error"
		msg := "the run failed"
		if end.Error != nil {
			msg = end.Error.Error
		}
		t.out.chunk(map[string]any{"type": "error", "errorText": msg})
	}
	return reason
}

// toolOutput renders model-visible content as a tool part's output: a string
// when it is all text (the usual case), otherwise the parts as toolstream
// writes them (docs/events.md).
func toolOutput(content []events.Part) any {
	var text strings.Builder
	for _, p := range content {
		if p.Type != events.PartText {
			return content
		}
		text.WriteString(p.Text)
	}
	return text.String()
}
