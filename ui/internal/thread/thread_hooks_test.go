//go:build toolstream_testhooks

package thread_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/ui/internal/thread"
	"github.com/toolstream/toolstream/ui/internal/uitest"
)

// An approval that stops waiting after the request's answers were checked
// and before its own is given (it expires just then; here another party
// decides it, which the interceptor tells the same way): the other answer
// is given all the same, and Begin returns the response with an
// *AnswersError that names what took effect and what did not. The
// response shows both calls' outcomes. Begin used to fail with the first
// answer already given: the run went on, unread.
func TestAnswerRefusedAfterTheCheck(t *testing.T) {
	a := uitest.New(t)
	th, calls := pauseTwo(t, a, "partly")
	a.RejectInTheWindow(t, "partly", 1, calls[1])
	l, err := th.Begin(thread.Input{Answers: []thread.Answer{{Call: calls[0], Approve: true}, {Call: calls[1], Approve: true}}})
	var partly *thread.AnswersError
	if !errors.As(err, &partly) || !errors.Is(err, thread.ErrPartlyAnswered) || l == nil {
		t.Fatalf("Begin: %v (response %v), want an *AnswersError with the response", err, l)
	}
	if len(partly.Given) != 1 || partly.Given[0].Call != calls[0] || len(partly.Refused) != 1 || partly.Refused[0].Call != calls[1] ||
		!errors.Is(partly.Refused[0].Err, interceptors.ErrNotPending) {
		t.Errorf("given %+v, refused %+v", partly.Given, partly.Refused)
	}
	if msg := err.Error(); !strings.Contains(msg, "1 of 2 answers were given") || !strings.Contains(msg, calls[0]) || !strings.Contains(msg, calls[1]) {
		t.Errorf("the error says %q", msg)
	}
	evs, end := read(t, l)
	if end.Kind != thread.EndAnswer || end.Answer.Text != "Done." {
		t.Fatalf("end %+v", end)
	}
	got := map[string]events.State{}
	for _, ev := range evs {
		if ev.Type == events.TypeResult {
			got[ev.Call] = ev.Result.State
		}
	}
	if got[calls[0]] != events.StateSuccess || got[calls[1]] != events.StateDenied {
		t.Errorf("results %v", got)
	}
}

// A request answers one of two waiting calls; the other stops waiting
// (decided elsewhere, or expired) and the run pauses again on the first
// before the answer is announced (the hook holds Begin there until the
// thread waits for the first call alone). Begin returns the response the
// answer goes to, which runs to the end. It used to return the response
// read at the start, which had ended meanwhile, paused on the very call
// the request answered, while the run went on in a response nobody read.
func TestAnswerWhileTheRunPausesAgain(t *testing.T) {
	a := uitest.New(t)
	th, calls := pauseTwo(t, a, "again")
	thread.SetAnswersHook(func() {
		if err := a.Perms.Reject(th.Session().ID(), calls[1], "decided elsewhere"); err != nil {
			t.Errorf("rejecting %s: %v", calls[1], err)
		}
		if p := a.WaitPaused(t, "again", 1); p[0] != calls[0] {
			t.Errorf("the thread waits for %v", p)
		}
	})
	t.Cleanup(func() { thread.SetAnswersHook(nil) })
	l, err := th.Begin(thread.Input{Answers: []thread.Answer{{Call: calls[0], Approve: true}}})
	if err != nil {
		t.Fatal(err)
	}
	evs, end := read(t, l)
	if end.Kind != thread.EndAnswer || end.Answer.Text != "Done." {
		t.Fatalf("the response ends %s %v", end.Kind, end.Approvals)
	}
	var asked bool
	for _, ev := range evs {
		asked = asked || ev.Type == events.TypeResult && ev.Call == calls[0] && ev.Result.State == events.StateSuccess
	}
	if !asked {
		t.Errorf("the response does not show %s's result", calls[0])
	}
}

// Runs started back to back, as fast as the thread takes them, each get
// a response of their own: nothing of the next run lands in the response
// of the one before, whose end (the answer) is its last event.
func TestBackToBackRuns(t *testing.T) {
	thread.SetMarkDelay(2 * time.Millisecond) // a response's end is decided well before it is cut
	t.Cleanup(func() { thread.SetMarkDelay(0) })
	a := uitest.New(t)
	th, _ := a.Threads.Thread("b2b")
	var logs []*thread.Log
	for i := range 40 {
		for {
			l, err := th.Begin(user(fmt.Sprint("u", i), "hi"))
			if errors.Is(err, thread.ErrBusy) {
				runtime.Gosched()
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			logs = append(logs, l)
			break
		}
	}
	for i, l := range logs {
		evs, end := read(t, l)
		if end.Kind != thread.EndAnswer || evs[len(evs)-1].Type != "answer" || evs[0].Type != "turn_start" {
			t.Fatalf("response %d (of run %d): %s ... %s, end %+v", i, l.Run, evs[0].Type, evs[len(evs)-1].Type, end)
		}
	}
}

// A request that is about to start a run when Host.Close begins is
// refused with ErrClosed: the host is asked under the lock Close takes
// before it waits for the runs. It used to start the run after Close's
// wait had begun (the host's context read before Close cancelled it), a
// goroutine Close did not wait for, on a session Close was closing.
func TestBeginWhileTheHostCloses(t *testing.T) {
	a := uitest.New(t)
	th, _ := a.Threads.Thread("closing")
	closed := make(chan struct{})
	thread.SetStartHook(func() {
		go func() {
			a.Host.Close()
			close(closed)
		}()
		// Close has begun once the host refuses new threads.
		for {
			if _, err := a.Threads.Thread("another"); errors.Is(err, thread.ErrClosed) {
				return
			}
			runtime.Gosched()
		}
	})
	t.Cleanup(func() { thread.SetStartHook(nil) })
	l, err := th.Begin(user("u1", "hi"))
	if !errors.Is(err, thread.ErrClosed) || l != nil {
		t.Errorf("Begin while the host closes: %v, %v; want ErrClosed", l, err)
	}
	<-closed
}

// Two requests that bring the same new message to a paused run both
// cancel it; the message is taken in once. The second request waits
// (the hook) until the first one's run is over, then finds nothing new:
// it used to add the message again from what it read before waiting, and
// run the conversation with it twice.
func TestSameMessageTwiceWhilePaused(t *testing.T) {
	a := uitest.New(t)
	th, _ := a.Threads.Thread("twice")
	l, err := th.Begin(user("u1", "note"))
	if err != nil {
		t.Fatal(err)
	}
	if _, end := read(t, l); end.Kind != thread.EndPaused {
		t.Fatalf("end %+v", end)
	}
	in2, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	thread.SetMovedOnHook(func() {
		if calls.Add(1) == 1 {
			<-in2 // the other request read the thread too: both are in the window
			return
		}
		close(in2)
		<-release
	})
	t.Cleanup(func() { thread.SetMovedOnHook(nil) })
	let := sync.OnceFunc(func() { close(release) })
	t.Cleanup(let) // if the test fails before
	type begun struct {
		l   *thread.Log
		err error
	}
	in := thread.Input{Messages: []thread.IDMessage{{ID: "u1", Message: agentUser("note")}, {ID: "u2", Message: agentUser("hi")}}}
	results := make(chan begun, 2)
	for range 2 {
		go func() {
			l, err := th.Begin(in)
			results <- begun{l, err}
		}()
	}
	first := <-results
	if first.err != nil {
		t.Fatalf("the first request: %v", first.err)
	}
	if _, end := read(t, first.l); end.Kind != thread.EndAnswer || end.Answer.Text != "Hello." {
		t.Fatalf("the first request's response ends %+v", end)
	}
	// The run is over and has returned: Begin waits for it.
	if _, err := th.Begin(thread.Input{}); !errors.Is(err, thread.ErrNothingToRun) {
		t.Fatalf("an empty request after the run: %v", err)
	}
	let()
	second := <-results
	if !errors.Is(second.err, thread.ErrNothingToRun) {
		if second.l != nil {
			evs, _ := read(t, second.l)
			t.Fatalf("the second request took the message again: a run of %d events (error %v)", len(evs), second.err)
		}
		t.Fatalf("the second request: %v, want ErrNothingToRun", second.err)
	}
	if got := thread.UserTexts(th); fmt.Sprint(got) != "[note hi]" {
		t.Errorf("the conversation's user messages %q, want [note hi]", got)
	}
}
