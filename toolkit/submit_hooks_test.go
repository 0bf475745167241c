//go:build toolstream_testhooks

package toolkit_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// TestSubmitAsWaitEnds: a Submit that takes the call just as its wait times
// out wins: Submit returning nil means the call's result is what was
// submitted, never a timeout with the submitted content lost.
func TestSubmitAsWaitEnds(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, externalTool(t, toolkit.Spec{Name: "ask", Timeout: 20 * time.Millisecond}))
	s := testutil.Session(t, tk, "s")
	run := s.Start(context.Background(), []toolkit.Call{testutil.Call("ext", "ask", `{"question":"?"}`)})
	taken := make(chan struct{})
	// Submit, having taken the call, waits until the wait ended: the batch
	// is done (the result was lost) or the wait found the call taken.
	toolkit.SetSubmitHooksForTest(func() {
		select {
		case <-run.Done():
		case <-taken:
		}
	}, func() { close(taken) })
	defer toolkit.SetSubmitHooksForTest(nil, nil)
	for r := range run.Results() {
		if r.State == events.StateSuspended {
			if err := s.Submit("ext", []events.Part{events.Text("answer")}, nil); err != nil {
				t.Fatalf("Submit: %v", err)
			}
			break
		}
	}
	if r := run.Wait()[0]; r.State != events.StateSuccess || r.Text() != "answer" {
		t.Fatalf("Submit returned nil, but the call ended %s %q", r.State, r.Text())
	}
}
