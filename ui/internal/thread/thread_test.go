package thread_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/leak"
	"github.com/toolstream/toolstream/toolkit"
	"github.com/toolstream/toolstream/ui/internal/thread"
	"github.com/toolstream/toolstream/ui/internal/uitest"
)

func TestMain(m *testing.M) { leak.VerifyTestMain(m) }

// read returns a response's events and its end.
func read(t *testing.T, l *thread.Log) ([]*events.Event, *thread.End) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var all []*events.Event
	for {
		evs, end, err := l.Next(ctx, len(all))
		if err != nil {
			t.Fatalf("the response did not end: %v (%d events)", err, len(all))
		}
		all = append(all, evs...)
		if end != nil {
			return all, end
		}
	}
}

func user(id, text string) thread.Input {
	return thread.Input{Messages: []thread.IDMessage{{ID: id, Message: agentUser(text)}}}
}

// A call that waits for approval pauses the run only once the calls
// running beside it are done: count's result is in the paused response.
func TestPauseWaitsForRunningCalls(t *testing.T) {
	a := uitest.New(t)
	th, err := a.Threads.Thread("both")
	if err != nil {
		t.Fatal(err)
	}
	l, err := th.Begin(user("u1", "both"))
	if err != nil {
		t.Fatal(err)
	}
	evs, end := read(t, l)
	if end.Kind != thread.EndPaused || len(end.Approvals) != 1 || end.Approvals[0].CallID != "b2_1" {
		t.Fatalf("end %+v", end)
	}
	var counted bool
	for _, ev := range evs {
		counted = counted || ev.Type == events.TypeResult && ev.Call == "b1_1" && ev.Result.State == events.StateSuccess
	}
	if !counted {
		t.Fatal("the response paused before count's result")
	}
	if got := th.Paused(); len(got) != 1 {
		t.Fatalf("Paused() = %v", got)
	}
	if _, err := th.Begin(thread.Input{}); !errors.Is(err, thread.ErrNothingToRun) {
		t.Errorf("an empty request to a paused thread: %v", err)
	}
	l, err = th.Begin(thread.Input{Answers: []thread.Answer{{Call: "b2_1", Approve: true}}})
	if err != nil {
		t.Fatal(err)
	}
	evs, end = read(t, l)
	if end.Kind != thread.EndAnswer || end.Answer.Text != "Done." {
		t.Fatalf("end %+v", end)
	}
	// The answers' note first (the calls answered), then the decision.
	if evs[0].Type != thread.AnswersEvent || !strings.Contains(string(evs[0].Data), `"calls":["b2_1"]`) || evs[1].Type != "approval" || evs[1].Call != "b2_1" {
		t.Errorf("the resumed response begins with %s %s %s, %s %s", evs[0].Type, evs[0].Call, evs[0].Data, evs[1].Type, evs[1].Call)
	}
}

// A request while a response streams is refused; so are answers to no
// waiting call.
func TestBusy(t *testing.T) {
	a := uitest.New(t)
	th, _ := a.Threads.Thread("busy")
	l, err := th.Begin(user("u1", "gate"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := th.Begin(user("u2", "hi")); !errors.Is(err, thread.ErrBusy) {
		t.Errorf("a second request while streaming: %v", err)
	}
	if th.Streaming() != l {
		t.Error("Streaming() is not the response in progress")
	}
	close(a.Gate)
	if _, end := read(t, l); end.Kind != thread.EndAnswer {
		t.Fatalf("end %+v", end)
	}
	if _, err := th.Begin(thread.Input{Answers: []thread.Answer{{Call: "x", Approve: true}}}); err == nil {
		t.Error("an answer to no waiting call was taken")
	}
	l, err = th.Begin(user("u2", "hi"))
	if err != nil {
		t.Fatalf("the next message after the end: %v", err)
	}
	if _, end := read(t, l); end.Kind != thread.EndAnswer || end.Answer.Text != "Hello." {
		t.Fatalf("end %+v", end)
	}
}

// Forget cancels a paused run and lets the thread go; the id starts over.
func TestForget(t *testing.T) {
	a := uitest.New(t)
	th, _ := a.Threads.Thread("f")
	l, err := th.Begin(user("u1", "note"))
	if err != nil {
		t.Fatal(err)
	}
	if _, end := read(t, l); end.Kind != thread.EndPaused {
		t.Fatalf("end %+v", end)
	}
	a.Host.Forget("f")
	if a.Threads.Lookup("f") != nil || len(a.Perms.Pending("")) != 0 {
		t.Fatalf("the thread or its approval is still there: %v", a.Perms.Pending(""))
	}
	th2, _ := a.Threads.Thread("f")
	if th2 == th || th2.Seen("u1") {
		t.Fatal("the id did not start over")
	}
	l, err = th2.Begin(user("u1", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	if _, end := read(t, l); end.Kind != thread.EndAnswer || end.Answer.Text != "Hello." {
		t.Fatalf("end %+v", end)
	}
}

// pauseTwo starts the "two" task on a new thread and returns it paused,
// with its two approvals.
func pauseTwo(t *testing.T, a *uitest.Agent, id string) (*thread.Thread, []string) {
	t.Helper()
	th, _ := a.Threads.Thread(id)
	l, err := th.Begin(user("u1", "two"))
	if err != nil {
		t.Fatal(err)
	}
	if _, end := read(t, l); end.Kind != thread.EndPaused {
		t.Fatalf("end %+v", end)
	}
	return th, a.WaitPaused(t, id, 2)
}

// Answers are checked against the interceptor's pending approvals, not
// only the thread's view (which comes from events that may be on their
// way): when one of them no longer waits, none is given.
func TestAnswerForAnApprovalNoLongerPending(t *testing.T) {
	a := uitest.New(t)
	th, calls := pauseTwo(t, a, "stale")
	if err := a.Perms.Reject(th.Session().ID(), calls[1], "decided elsewhere"); err != nil {
		t.Fatal(err)
	}
	_, err := th.Begin(thread.Input{Answers: []thread.Answer{{Call: calls[0], Approve: true}, {Call: calls[1], Approve: true}}})
	if !errors.Is(err, interceptors.ErrNotPending) || !strings.Contains(err.Error(), calls[1]) {
		t.Fatalf("Begin: %v, want ErrNotPending naming %s", err, calls[1])
	}
	if p := a.Perms.Pending(th.Session().ID()); len(p) != 1 || p[0].CallID != calls[0] {
		t.Fatalf("pending after the refused request: %v (%s was given)", p, calls[0])
	}
	// Once the thread saw the other call's decision, the answer is taken.
	// (Answered before, the run could pause again on that call: a decision
	// made outside the thread is invisible to it until its event comes.)
	a.WaitPaused(t, "stale", 1)
	l, err := th.Begin(thread.Input{Answers: []thread.Answer{{Call: calls[0], Approve: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, end := read(t, l); end.Kind != thread.EndAnswer {
		t.Fatalf("end %+v", end)
	}
}

// A request that approves both waiting calls gets the rest of the run in
// its response, to the answer: the response used to end paused again on
// the second call (its approval event still on its way when the first
// call's result asked for a mark), asking about a call already answered.
// TestTrackerAnsweredCallsRun holds the rule without timing.
func TestAnswerTwoCallsInOneRequest(t *testing.T) {
	a := uitest.New(t)
	for i := range 10 {
		th, calls := pauseTwo(t, a, fmt.Sprint("both-", i))
		l, err := th.Begin(thread.Input{Answers: []thread.Answer{{Call: calls[0], Approve: true}, {Call: calls[1], Approve: true}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, end := read(t, l); end.Kind != thread.EndAnswer || end.Answer.Text != "Done." {
			t.Fatalf("round %d: the response ends %s %v", i, end.Kind, end.Approvals)
		}
	}
}

// A request that got its thread before Host.Forget let it go is refused
// with ErrForgotten: it used to start a run on the closed session (the
// model asked, for a conversation nobody keeps), whose response Forget
// had already ended.
func TestBeginAfterForget(t *testing.T) {
	a := uitest.New(t)
	th, _ := a.Threads.Thread("gone")
	a.Host.Forget("gone")
	if l, err := th.Begin(user("u1", "hi")); !errors.Is(err, thread.ErrForgotten) || l != nil {
		t.Fatalf("Begin after Forget: %v, %v; want ErrForgotten", l, err)
	}
	if got := thread.UserTexts(th); len(got) != 0 {
		t.Errorf("the forgotten conversation took %q", got)
	}
}

// A request for a thread's id while Forget is ending it (made from a batch
// hook's After on the paused batch Forget cancelled: Forget waits for that
// run to end) is refused with ErrForgotten, and once Forget returned
// the id starts over on a new session. The request used to get a new
// thread on the old session, still open, which Forget then closed under
// it: the new thread's tool calls failed (the session is closed).
func TestThreadWhileForgetting(t *testing.T) {
	a := uitest.New(t)
	var forgetting, asked atomic.Bool
	if err := a.TK.Use(toolkit.Interceptor{Name: "ask-while-forgetting",
		AfterBatch: func(context.Context, *toolkit.Batch, []toolkit.Result) {
			if !forgetting.Load() || asked.Swap(true) {
				return
			}
			if th2, err := a.Threads.Thread("ff"); !errors.Is(err, thread.ErrForgotten) {
				t.Errorf("Host.Thread while Forget ends the thread: %v, %v; want ErrForgotten", th2, err)
			}
		}}); err != nil {
		t.Fatal(err)
	}
	th, _ := a.Threads.Thread("ff")
	l, err := th.Begin(user("u1", "note"))
	if err != nil {
		t.Fatal(err)
	}
	if _, end := read(t, l); end.Kind != thread.EndPaused {
		t.Fatalf("end %+v", end)
	}
	forgetting.Store(true)
	a.Host.Forget("ff")
	forgetting.Store(false)
	if !asked.Load() {
		t.Fatal("Forget ended the paused run without its batch's After: the thread was not asked for in the window")
	}
	th2, err := a.Threads.Thread("ff")
	if err != nil || th2 == th {
		t.Fatalf("after Forget: %v, %v", th2, err)
	}
	l, err = th2.Begin(user("u1", "groups"))
	if err != nil {
		t.Fatal(err)
	}
	evs, end := read(t, l)
	if end.Kind != thread.EndAnswer {
		t.Fatalf("the new thread's response ends %+v", end)
	}
	for _, ev := range evs {
		if ev.Type == events.TypeResult && ev.Result.State != events.StateSuccess {
			t.Errorf("call %s of the new thread: %s %s", ev.Call, ev.Result.State, ev.Result.Error)
		}
	}
}

// A request that brings two messages with one id is refused, nothing
// taken: the thread takes in each id once, and which of the two a client
// meant is not the server's guess. Both used to go into the conversation.
func TestSameIDTwiceInOneRequest(t *testing.T) {
	a := uitest.New(t)
	th, _ := a.Threads.Thread("dup")
	in := thread.Input{Messages: []thread.IDMessage{{ID: "u1", Message: agentUser("hi")}, {ID: "u1", Message: agentUser("hi again")}}}
	if l, err := th.Begin(in); err == nil || !strings.Contains(err.Error(), `"u1"`) {
		if l != nil {
			read(t, l)
		}
		t.Fatalf("Begin with id u1 twice: %v; the conversation's user messages: %q", err, thread.UserTexts(th))
	}
	if th.Seen("u1") || len(thread.UserTexts(th)) != 0 {
		t.Fatalf("the refused request was taken in: %q", thread.UserTexts(th))
	}
	l, err := th.Begin(user("u1", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	if _, end := read(t, l); end.Kind != thread.EndAnswer {
		t.Fatalf("end %+v", end)
	}
}
