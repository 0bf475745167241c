package agui

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/ui/internal/thread"
)

// activityType is the activityType of the activity message that shows a
// call's progress and streamed result (callActivity is its content).
const activityType = "toolstream_call"

// callActivity is the content of a call's activity message. Deltas are the
// call's result deltas since its last reset, as they came (adjacent
// text parts are not joined: JSON Patch can only append them); the
// model-visible result is their concatenation and comes whole in
// TOOL_CALL_RESULT.
type callActivity struct {
	ToolCallID string                        `json:"toolCallId"`
	Tool       string                        `json:"tool"`
	State      string                        `json:"state"` // running, waiting, or the result's state
	Progress   *events.Progress              `json:"progress,omitempty"`
	Deltas     []events.Part                 `json:"deltas"`
	Approval   *interceptors.ApprovalRequest `json:"approval,omitempty"`
	Error      string                        `json:"error,omitempty"`
}

// translator turns one response's events into one AG-UI run's events,
// keeping the verifier's rules: every message, call and step opened is
// closed before the run ends.
type translator struct {
	out           *writer
	thread, runID string
	// ids begins the text messages' ids: the thread's nonce and the loop
	// run's number, so that ids never repeat in a thread whatever runIds
	// the client sends (HttpAgent finds messages by id).
	ids string

	step     string // the open step ("" for none)
	text     string // the open text message's id
	turn     int
	attempt  int
	open     []string        // tool calls started and not ended, in order
	opened   map[string]bool // tool calls started in this run
	activity map[string]*callActivity
}

func newTranslator(out *writer, thread, runID string) *translator {
	return &translator{out: out, thread: thread, runID: runID, ids: runID, opened: map[string]bool{}, activity: map[string]*callActivity{}}
}

func (t *translator) event(ev *events.Event) {
	switch ev.Type {
	case agent.EventTurnStart:
		var b agent.TurnStart
		_ = json.Unmarshal(ev.Data, &b)
		t.closeAll()
		t.turn, t.attempt = b.Turn, 0
		t.step = fmt.Sprintf("turn %d", b.Turn)
		t.out.event(map[string]any{"type": "STEP_STARTED", "stepName": t.step})
	case agent.EventText:
		var b agent.TextDelta
		_ = json.Unmarshal(ev.Data, &b)
		if b.Delta == "" {
			return
		}
		if t.text == "" {
			t.text = fmt.Sprintf("msg-%s-%d-%d", t.ids, t.turn, t.attempt)
			t.out.event(map[string]any{"type": "TEXT_MESSAGE_START", "messageId": t.text, "role": "assistant"})
		}
		t.out.event(map[string]any{"type": "TEXT_MESSAGE_CONTENT", "messageId": t.text, "delta": b.Delta})
	case agent.EventArgs:
		var b agent.ArgsDelta
		_ = json.Unmarshal(ev.Data, &b)
		if b.Call == "" {
			return
		}
		t.startCall(b.Call, b.Tool)
		if b.Delta != "" && t.isOpen(b.Call) {
			t.out.event(map[string]any{"type": "TOOL_CALL_ARGS", "toolCallId": b.Call, "delta": b.Delta})
		}
	case agent.EventRetry:
		// What the turn streamed is void; AG-UI cannot take it back, so the
		// open message and calls end here and the client is told why.
		t.closeText()
		t.endCalls()
		t.attempt++
		t.custom(ev)
	case agent.EventTurnEnd:
		var b agent.TurnEnd
		_ = json.Unmarshal(ev.Data, &b)
		t.closeText()
		for _, c := range b.Calls {
			if !t.opened[c.ID] {
				t.startCall(c.ID, c.Name)
				if args := argsText(c.Args); args != "" {
					t.out.event(map[string]any{"type": "TOOL_CALL_ARGS", "toolCallId": c.ID, "delta": args})
				}
			}
		}
		t.endCalls()
	case events.TypeStart:
		t.activityFor(ev).State = "running"
		t.snapshot(ev.Call)
	case events.TypeProgress:
		a, fresh := t.touch(ev)
		p := *ev.Progress
		a.Progress = &p
		t.update(ev.Call, fresh, patchOp{Op: "add", Path: "/progress", Value: a.Progress})
	case events.TypeDelta:
		if ev.Delta == nil {
			return // chunks come only from NATS; this handler reads the toolkit
		}
		a, fresh := t.touch(ev)
		if ev.Reset {
			a.Deltas = a.Deltas[:0]
			if !emptyPart(*ev.Delta) {
				a.Deltas = append(a.Deltas, *ev.Delta)
			}
			t.snapshot(ev.Call)
			return
		}
		a.Deltas = append(a.Deltas, *ev.Delta)
		t.update(ev.Call, fresh, patchOp{Op: "add", Path: "/deltas/-", Value: ev.Delta})
	case events.TypeSuspend:
		a, fresh := t.touch(ev)
		a.State = "waiting"
		t.update(ev.Call, fresh, patchOp{Op: "replace", Path: "/state", Value: a.State})
	case interceptors.ApprovalEvent:
		if ev.Call == "" {
			t.custom(ev)
			return
		}
		var req interceptors.ApprovalRequest
		if json.Unmarshal(ev.Data, &req) != nil {
			return
		}
		a, fresh := t.touch(ev)
		a.Approval = &req
		if req.Status != "pending" {
			a.State = "running"
		}
		t.update(ev.Call, fresh, patchOp{Op: "add", Path: "/approval", Value: a.Approval}, patchOp{Op: "replace", Path: "/state", Value: a.State})
	case events.TypeResult:
		a, fresh := t.touch(ev)
		a.State, a.Error = string(ev.Result.State), ev.Result.Error
		ops := []patchOp{{Op: "replace", Path: "/state", Value: a.State}}
		if a.Error != "" { // as in a snapshot (omitempty): no error field for a success
			ops = append(ops, patchOp{Op: "add", Path: "/error", Value: a.Error})
		}
		t.update(ev.Call, fresh, ops...)
		content := ev.Result.Content
		if ev.Result.ContentOmitted {
			content = events.Concat(a.Deltas...)
		}
		t.out.event(map[string]any{"type": "TOOL_CALL_RESULT", "messageId": "result-" + ev.Call, "toolCallId": ev.Call,
			"content": resultText(content), "role": "tool"})
	case "groups", "skills":
		if ev.Call != "" {
			t.custom(ev)
			return
		}
		t.out.event(map[string]any{"type": "STATE_DELTA", "delta": []patchOp{{Op: "add", Path: "/" + string(ev.Type), Value: ev.Data}}})
	case agent.EventAnswer, agent.EventError, thread.MarkEvent, thread.AnswersEvent:
		// The run's end comes with the response's end (finish).
	default:
		t.custom(ev)
	}
}

// custom passes an event AG-UI has no word for as CUSTOM
// {name: "toolstream.<type>", value: <the envelope>}.
func (t *translator) custom(ev *events.Event) {
	t.out.event(map[string]any{"type": "CUSTOM", "name": "toolstream." + string(ev.Type), "value": ev})
}

func (t *translator) isOpen(call string) bool {
	for _, c := range t.open {
		if c == call {
			return true
		}
	}
	return false
}

func (t *translator) startCall(id, name string) {
	if t.isOpen(id) {
		return
	}
	t.opened[id] = true
	t.open = append(t.open, id)
	ev := map[string]any{"type": "TOOL_CALL_START", "toolCallId": id, "toolCallName": name}
	if t.text != "" {
		ev["parentMessageId"] = t.text
	}
	t.out.event(ev)
}

func (t *translator) endCalls() {
	for _, id := range t.open {
		t.out.event(map[string]any{"type": "TOOL_CALL_END", "toolCallId": id})
	}
	t.open = t.open[:0]
}

func (t *translator) closeText() {
	if t.text != "" {
		t.out.event(map[string]any{"type": "TEXT_MESSAGE_END", "messageId": t.text})
		t.text = ""
	}
}

func (t *translator) closeStep() {
	if t.step != "" {
		t.out.event(map[string]any{"type": "STEP_FINISHED", "stepName": t.step})
		t.step = ""
	}
}

// closeAll ends whatever is open, for the run's end or the next turn.
func (t *translator) closeAll() {
	t.closeText()
	t.endCalls()
	t.closeStep()
}

func (t *translator) activityFor(ev *events.Event) *callActivity {
	a := t.activity[ev.Call]
	if a == nil {
		a = &callActivity{ToolCallID: ev.Call, Tool: ev.Tool, State: "running", Deltas: []events.Part{}}
		t.activity[ev.Call] = a
	}
	return a
}

// touch returns the call's activity; fresh says this run has not shown
// it yet (a call that began in the run before an approval): the caller
// sends it whole (snapshot) instead of a patch.
func (t *translator) touch(ev *events.Event) (*callActivity, bool) {
	if a := t.activity[ev.Call]; a != nil {
		return a, false
	}
	return t.activityFor(ev), true
}

func (t *translator) snapshot(call string) {
	t.out.event(map[string]any{"type": "ACTIVITY_SNAPSHOT", "messageId": "activity-" + call, "activityType": activityType,
		"content": t.activity[call], "replace": true})
}

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// update sends a call's activity whole when this run has not shown it,
// else the patch.
func (t *translator) update(call string, fresh bool, ops ...patchOp) {
	if fresh {
		t.snapshot(call)
		return
	}
	t.patch(call, ops...)
}

func (t *translator) patch(call string, ops ...patchOp) {
	t.out.event(map[string]any{"type": "ACTIVITY_DELTA", "messageId": "activity-" + call, "activityType": activityType, "patch": ops})
}

// finish ends the run as the response ended.
func (t *translator) finish(end *thread.End) {
	t.closeAll()
	switch end.Kind {
	case thread.EndPaused:
		interrupts := make([]map[string]any, 0, len(end.Approvals))
		for _, a := range end.Approvals {
			in := map[string]any{
				"id": a.CallID, "reason": "tool_call", "toolCallId": a.CallID, "message": a.Reason,
				"responseSchema": approvalSchema,
				"metadata":       map[string]any{"tool": a.Tool, "args": a.Args, "suggestions": a.Suggestions},
			}
			if e := expiresAt(a.Expires); e != "" {
				in["expiresAt"] = e
			}
			interrupts = append(interrupts, in)
		}
		t.out.event(map[string]any{"type": "RUN_FINISHED", "threadId": t.thread, "runId": t.runID,
			"outcome": map[string]any{"type": "interrupt", "interrupts": interrupts}})
	case thread.EndAnswer:
		ev := map[string]any{"type": "RUN_FINISHED", "threadId": t.thread, "runId": t.runID, "outcome": map[string]any{"type": "success"}}
		if end.Answer != nil {
			ev["result"] = end.Answer
		}
		t.out.event(ev)
	default:
		msg, code := "the run failed", "run_error"
		if end.Error != nil {
			msg = end.Error.Error
			if end.Error.Canceled {
				code = "canceled"
			}
		}
		t.out.event(map[string]any{"type": "RUN_ERROR", "message": msg, "code": code})
	}
}

// approvalSchema is the responseSchema of approval interrupts: what a
// resume entry's payload holds.
var approvalSchema = json.RawMessage(`{"type":"object","properties":{"approved":{"type":"boolean"},"reason":{"type":"string","description":"why not: the model reads it"},"args":{"type":"object","description":"approve with these arguments instead"}},"required":["approved"],"additionalProperties":false}`)

// resultText renders model-visible content as the one string TOOL_CALL_RESULT
// carries: text as it is, JSON parts as their JSON text, binary parts as
// a data: URL.
func resultText(content []events.Part) string {
	var b strings.Builder
	for _, p := range content {
		switch p.Type {
		case events.PartText:
			b.WriteString(p.Text)
		case events.PartJSON:
			b.Write(p.JSON)
		default:
			fmt.Fprintf(&b, "data:%s;base64,%s", p.MediaType, base64.StdEncoding.EncodeToString(p.Data))
		}
	}
	return b.String()
}

func emptyPart(p events.Part) bool {
	return p.Type == events.PartText && p.Text == "" || p.Type == events.PartBinary && len(p.Data) == 0
}

// argsText is a call's arguments as the model wrote them. turn_end carries
// arguments that are not JSON as a JSON string of their text (arguments are
// an object otherwise), and the client shows TOOL_CALL_ARGS as written.
func argsText(args json.RawMessage) string {
	var text string
	if len(args) > 0 && args[0] == '"' && json.Unmarshal(args, &text) == nil {
		return text
	}
	return string(args)
}
