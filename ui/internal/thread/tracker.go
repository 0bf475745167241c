package thread

import (
	"encoding/json"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
)

// MarkEvent is the session-level event a thread sends at its response
// boundaries (body Mark). It carries nothing a UI shows: it is how a
// replay of the session's events from the durable stream cuts them into
// the same responses as the live handler did.
const MarkEvent events.Type = "ui_mark"

// Mark is the body of a ui_mark event: response Response of thread
// Thread begins here, if the response before it may end here.
type Mark struct {
	Thread   string `json:"thread"`
	Response int    `json:"response"`
}

// AnswersEvent is the session-level event a thread sends just before it
// gives a request's answers to approvals (body AnswerCalls). From there the
// calls answered count as running: a response must not end paused on a
// call whose decision is on its way (its own approval event comes from
// the call's goroutine, maybe after the mark). A replay reads the same
// event, so it cuts the same way. Like MarkEvent, nothing a UI shows.
const AnswersEvent events.Type = "ui_answers"

// AnswerCalls is the body of a ui_answers event: thread Thread (its
// nonce) gives answers for these calls now.
type AnswerCalls struct {
	Thread string   `json:"thread"`
	Calls  []string `json:"calls"`
}

// EndKind says how a response ended.
type EndKind string

// The ways a response ends.
const (
	// EndAnswer: the run is over with an answer (agent.EventAnswer).
	EndAnswer EndKind = "answer"
	// EndError: the run ended with an error (agent.EventError).
	EndError EndKind = "error"
	// EndPaused: the run waits for people to approve calls and nothing else
	// runs; the next request answers them and the run goes on.
	EndPaused EndKind = "paused"
)

// End is how a response ended.
type End struct {
	Kind EndKind
	// Answer is the run's answer (EndAnswer).
	Answer *agent.Answer
	// Error is the run's error (EndError).
	Error *agent.RunError
	// Approvals are the calls that wait for a decision (EndPaused), in the
	// order they asked.
	Approvals []interceptors.ApprovalRequest
	// Closed says the host closed (Host.Close) or forgot (Host.Forget) the
	// thread while the response went on (Kind EndError): it ended without
	// a mark, so a replay of the durable stream never finds this end; the
	// response kept in memory has it (Log.End).
	Closed bool
}

// callState is where a call of the current run is.
type callState uint8

const (
	callRunning  callState = iota + 1 // started or answered, not final, not waiting for a person
	callAwaiting                      // waits for an approval
)

// tracker cuts a thread's events into responses. It reads only the
// events, in the order the session's observers get them (and NATS keeps
// them), so that the live handler and a replay from the durable stream cut
// them at the same places.
//
// A response ends at a mark when, at that mark, the run is over (an
// answer or run_error since the response began) or paused (some call waits
// for an approval and no started call runs; a call that a request
// answered runs from its ui_answers event). The thread asks for a mark
// (want) as soon as that holds; the condition is checked again when the
// mark arrives, since events keep coming while it travels.
type tracker struct {
	thread  string // the thread's nonce (Mark.Thread)
	synced  bool   // the thread's first mark was seen
	resp    int    // the current response, from 1
	run     int    // the current loop run, from 1
	over    *End   // the run ended in this response
	calls   map[string]callState
	waiting []interceptors.ApprovalRequest // in the order they asked
	asked   bool                           // a mark was asked for and has not come
}

func newTracker(thread string) *tracker {
	return &tracker{thread: thread, calls: map[string]callState{}}
}

// step is what the tracker made of one event.
type step struct {
	keep bool // the event belongs to the current response
	want int  // ask for a mark opening this response (0: none)
	end  *End // the current response ended at this event (a mark)
}

// add takes the next event of the session.
func (tr *tracker) add(ev *events.Event) step {
	if ev.Type == MarkEvent {
		var m Mark
		if json.Unmarshal(ev.Data, &m) != nil || m.Thread != tr.thread {
			return step{}
		}
		if !tr.synced {
			if m.Response == 1 {
				tr.synced, tr.resp, tr.run = true, 1, 1
			}
			return step{}
		}
		if m.Response != tr.resp+1 {
			return step{}
		}
		tr.asked = false
		end := tr.ending()
		if end == nil {
			return step{}
		}
		tr.resp++
		if tr.over != nil {
			tr.run++
			tr.over = nil
			clear(tr.calls)
			tr.waiting = nil
		}
		return step{end: end}
	}
	if !tr.synced {
		return step{}
	}
	tr.follow(ev)
	s := step{keep: true}
	if !tr.asked && tr.ending() != nil {
		tr.asked = true
		s.want = tr.resp + 1
	}
	return s
}

// follow updates what runs and what waits.
func (tr *tracker) follow(ev *events.Event) {
	switch ev.Type {
	case AnswersEvent:
		var a AnswerCalls
		if json.Unmarshal(ev.Data, &a) != nil || a.Thread != tr.thread {
			return
		}
		for _, c := range a.Calls {
			if tr.calls[c] == callAwaiting {
				tr.calls[c] = callRunning
				tr.unwait(c)
			}
		}
	case events.TypeStart:
		if _, ok := tr.calls[ev.Call]; !ok {
			tr.calls[ev.Call] = callRunning
		}
	case events.TypeResult:
		delete(tr.calls, ev.Call)
		tr.unwait(ev.Call)
	case interceptors.ApprovalEvent:
		if ev.Call == "" {
			return // a batch's request (Permissions.BatchApproval): not mapped, see docs/ui-protocols.md
		}
		var req interceptors.ApprovalRequest
		if json.Unmarshal(ev.Data, &req) != nil {
			return
		}
		if req.Status == "pending" {
			tr.calls[ev.Call] = callAwaiting
			tr.unwait(ev.Call)
			tr.waiting = append(tr.waiting, req)
		} else {
			tr.calls[ev.Call] = callRunning
			tr.unwait(ev.Call)
		}
	case agent.EventAnswer:
		var a agent.Answer
		_ = json.Unmarshal(ev.Data, &a)
		tr.over = &End{Kind: EndAnswer, Answer: &a}
	case agent.EventError:
		var e agent.RunError
		_ = json.Unmarshal(ev.Data, &e)
		tr.over = &End{Kind: EndError, Error: &e}
	}
}

func (tr *tracker) unwait(call string) {
	for i, r := range tr.waiting {
		if r.CallID == call {
			tr.waiting = append(tr.waiting[:i:i], tr.waiting[i+1:]...)
			return
		}
	}
}

// ending returns how the current response would end now, or nil.
func (tr *tracker) ending() *End {
	if tr.over != nil {
		return tr.over
	}
	if len(tr.waiting) == 0 {
		return nil
	}
	for _, st := range tr.calls {
		if st == callRunning {
			return nil
		}
	}
	return &End{Kind: EndPaused, Approvals: append([]interceptors.ApprovalRequest(nil), tr.waiting...)}
}
