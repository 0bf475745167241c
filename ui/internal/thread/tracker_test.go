package thread

import (
	"encoding/json"
	"testing"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
)

// trackerFeed builds a session's events for a tracker of thread "n".
type trackerFeed struct{ t *testing.T }

func (f trackerFeed) ev(typ events.Type, call string, data any) *events.Event {
	ev := &events.Event{Type: typ, Session: "s", Call: call}
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			f.t.Fatal(err)
		}
		ev.Data = b
	}
	return ev
}

func (f trackerFeed) mark(n int) *events.Event {
	return f.ev(MarkEvent, "", Mark{Thread: "n", Response: n})
}

func (f trackerFeed) approval(call, status string) *events.Event {
	return f.ev(interceptors.ApprovalEvent, call, interceptors.ApprovalRequest{CallID: call, Tool: "ask", Status: status})
}

func (f trackerFeed) result(call string) *events.Event {
	ev := f.ev(events.TypeResult, call, nil)
	ev.Result = &events.Result{State: events.StateSuccess}
	return ev
}

// A request answers two waiting calls: the first one's decision and result
// come before the second's decision (each call's events come from its own
// goroutine). A mark then must not end the response paused on the second
// call, whose answer is on its way: the ui_answers event the thread sends
// before answering says so, live and in a replay. The response used to end
// there, and the client was asked again about a call it had answered.
func TestTrackerAnsweredCallsRun(t *testing.T) {
	f := trackerFeed{t}
	tr := newTracker("n")
	for _, ev := range []*events.Event{
		f.mark(1), f.ev(events.TypeStart, "a1", nil), f.ev(events.TypeStart, "a2", nil),
		f.approval("a1", "pending"), f.approval("a2", "pending"),
	} {
		if s := tr.add(ev); s.end != nil {
			t.Fatalf("%s %s ended the response", ev.Type, ev.Call)
		}
	}
	if s := tr.add(f.mark(2)); s.end == nil || s.end.Kind != EndPaused || len(s.end.Approvals) != 2 {
		t.Fatalf("the pause: %+v", s.end)
	}
	for _, ev := range []*events.Event{
		f.ev(AnswersEvent, "", AnswerCalls{Thread: "n", Calls: []string{"a1", "a2"}}),
		f.approval("a1", "approved"), f.result("a1"),
	} {
		if s := tr.add(ev); s.want != 0 {
			t.Errorf("%s %s asks for a mark: the run is not paused", ev.Type, ev.Call)
		}
	}
	if s := tr.add(f.mark(3)); s.end != nil {
		t.Fatalf("the response ended %s (%v) while the answer to a2 was on its way", s.end.Kind, s.end.Approvals)
	}
	tr.add(f.approval("a2", "approved"))
	tr.add(f.result("a2"))
	if s := tr.add(f.ev(agent.EventAnswer, "", agent.Answer{Text: "Done."})); s.want != 3 {
		t.Errorf("the answer asks for mark %d, want 3", s.want)
	}
	if s := tr.add(f.mark(3)); s.end == nil || s.end.Kind != EndAnswer {
		t.Fatalf("the run's end: %+v", s.end)
	}
	// Another thread's answers are not this one's.
	tr = newTracker("n")
	for _, ev := range []*events.Event{f.mark(1), f.ev(events.TypeStart, "a1", nil), f.approval("a1", "pending"),
		f.ev(AnswersEvent, "", AnswerCalls{Thread: "other", Calls: []string{"a1"}})} {
		tr.add(ev)
	}
	if e := tr.ending(); e == nil || e.Kind != EndPaused {
		t.Errorf("another thread's answers moved this one: %+v", e)
	}
}
