package toolkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// Tests of Session.Submit's second look: Submit finds the call, checks the
// content outside the session's lock (an output schema may take a while),
// then takes the call only if the same wait is still there. The tests run
// the two looks apart (SubmitInTwoForTest, export_test.go) while something
// else happens to the call in between.

// suspendedKit starts a batch with one call of an external tool (with an
// output schema, so that Submit checks the content) and returns once the
// call waits.
func suspendedKit(t *testing.T, timeout time.Duration) (*toolkit.Toolkit, *toolkit.Session, *toolkit.Batch) {
	tk := testutil.Kit(t)
	tool, err := toolkit.NewExternalTool(toolkit.Spec{Name: "ask", OutputSchema: json.RawMessage(colourOut), Timeout: timeout},
		[]byte(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	testutil.Add(t, tk, tool)
	s := testutil.Session(t, tk, "s")
	b := s.Start(context.Background(), []toolkit.Call{testutil.Call("x", "ask", `{}`)})
	waitSuspended(t, b)
	return tk, s, b
}

// waitSuspended waits for the batch's first suspension notice.
func waitSuspended(t *testing.T, b *toolkit.Batch) {
	t.Helper()
	for r := range b.Results() {
		if r.State == events.StateSuspended {
			return
		}
	}
	t.Fatal("the batch ended without a suspension")
}

func submitted(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("Submit did not return within 5 s")
		return nil
	}
}

// TestSubmitTwiceAtOnce: two Submits for one call that both passed the
// first look and the check: the one that takes the call first wins, the
// other gets ErrUnknownCall and never blocks, and the call's result is the
// winner's content (a nil from Submit is never a result nobody gets).
func TestSubmitTwiceAtOnce(t *testing.T) {
	_, s, b := suspendedKit(t, 0)
	first := toolkit.SubmitInTwoForTest(s, "x", []events.Part{jsonPart(`{"colour":"red"}`)}, nil)
	if err := s.Submit("x", []events.Part{jsonPart(`{"colour":"blue"}`)}, nil); err != nil {
		t.Fatalf("the second Submit: %v", err)
	}
	if err := submitted(t, submitSecondLook(first)); !errors.Is(err, toolkit.ErrUnknownCall) {
		t.Errorf("the first Submit: %v, want ErrUnknownCall", err)
	}
	testutil.WaitFor(t, b.Done(), "the batch to end")
	if r := b.Wait()[0]; r.State != events.StateSuccess || r.Text() != `{"colour":"blue"}` {
		t.Errorf("the call: %s %q, want the second Submit's content", r.State, r.Text())
	}
}

// TestSubmitAsWaitTimesOut: the call's wait times out while Submit is
// between its looks: the second look finds it gone, Submit reports
// ErrUnknownCall, and the call's result is the timeout (nothing submitted
// reaches it).
func TestSubmitAsWaitTimesOut(t *testing.T) {
	_, s, b := suspendedKit(t, 50*time.Millisecond)
	second := toolkit.SubmitInTwoForTest(s, "x", []events.Part{jsonPart(`{"colour":"red"}`)}, nil)
	await(t, b.Done(), "the call's timeout")
	if err := submitted(t, submitSecondLook(second)); !errors.Is(err, toolkit.ErrUnknownCall) {
		t.Errorf("Submit: %v, want ErrUnknownCall", err)
	}
	if r := b.Wait()[0]; r.State != events.StateTimeout || !errors.Is(r.Err, toolkit.ErrTimeout) {
		t.Errorf("the call: %s %v", r.State, r.Err)
	}
}

// TestSubmitAsSessionCloses: Session.Close comes while Submit is between
// its looks: Submit reports ErrClosed (not "unknown"), and the call is
// interrupted by the Close.
func TestSubmitAsSessionCloses(t *testing.T) {
	_, s, b := suspendedKit(t, 0)
	second := toolkit.SubmitInTwoForTest(s, "x", []events.Part{jsonPart(`{"colour":"red"}`)}, nil)
	s.Close()
	if err := submitted(t, submitSecondLook(second)); !errors.Is(err, toolkit.ErrClosed) {
		t.Errorf("Submit: %v, want ErrClosed", err)
	}
	testutil.WaitFor(t, b.Done(), "the batch to end")
	if r := b.Wait()[0]; r.State != events.StateInterrupted || !errors.Is(r.Err, toolkit.ErrClosed) {
		t.Errorf("the call: %s %v", r.State, r.Err)
	}
}

// TestSubmitToACallThatLeftAndCameBack: while Submit is between its looks,
// the call it found times out and a call of a new batch waits under the
// same id. Submit does not hand the new call content it checked for the
// old one: it reports ErrUnknownCall (there was a moment during Submit
// when no call with that id waited), and the new call still waits for a
// Submit of its own.
func TestSubmitToACallThatLeftAndCameBack(t *testing.T) {
	_, s, b := suspendedKit(t, 50*time.Millisecond)
	second := toolkit.SubmitInTwoForTest(s, "x", []events.Part{jsonPart(`{"colour":"red"}`)}, nil)
	await(t, b.Done(), "the first call's timeout")
	next := s.Start(context.Background(), []toolkit.Call{testutil.Call("x", "ask", `{}`)})
	waitSuspended(t, next)
	if err := submitted(t, submitSecondLook(second)); !errors.Is(err, toolkit.ErrUnknownCall) {
		t.Errorf("Submit: %v, want ErrUnknownCall", err)
	}
	if r := b.Wait()[0]; r.State != events.StateTimeout {
		t.Errorf("the first call: %s %v", r.State, r.Err)
	}
	if got := s.Suspended(); len(got) != 1 || got[0].ID != "x" {
		t.Fatalf("Suspended() = %v; the new call should still wait", got)
	}
	if err := s.Submit("x", []events.Part{jsonPart(`{"colour":"blue"}`)}, nil); err != nil {
		t.Fatalf("Submit to the new call: %v", err)
	}
	testutil.WaitFor(t, next.Done(), "the new batch to end")
	if r := next.Wait()[0]; r.State != events.StateSuccess || r.Text() != `{"colour":"blue"}` {
		t.Errorf("the new call: %s %q", r.State, r.Text())
	}
}

// submitSecondLook runs a Submit's second look on a goroutine: a second
// look that blocks fails the test (submitted) instead of hanging it.
func submitSecondLook(second func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- second() }()
	return done
}
