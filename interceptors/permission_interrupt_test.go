//go:build toolstream_testhooks

package interceptors_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// TestAlwaysAllowAsTheCallIsInterrupted: a person approves with
// AlwaysAllow (or a suggested rule) at the moment the waiting call is
// interrupted, after the interruption and before the request was
// withdrawn. The call does not run (the interruption won), but Approve
// returned nil: the decision was taken, so the rule the person added for
// the session stands, and an "approved" event says the call did not run.
// Before the fix the grant was dropped without a word: the next call of
// the tool asked again.
func TestAlwaysAllowAsTheCallIsInterrupted(t *testing.T) {
	for _, how := range []string{"always", "suggestion"} {
		t.Run(how, func(t *testing.T) {
			f := newPermFixture(t, interceptors.WithApprovalTimeout(time.Second))
			var req interceptors.ApprovalRequest
			decided := make(chan error, 1)
			defer interceptors.SetInterruptHook(func() {
				opt := interceptors.AlwaysAllow()
				if how == "suggestion" {
					opt = interceptors.WithSuggestion(req.Suggestions[len(req.Suggestions)-1].ID) // the whole tool
				}
				decided <- f.perms.Approve("s", "w", opt)
			})()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sess, _ := f.tk.Session("s")
			b := sess.Start(ctx, []toolkit.Call{permCall("w", "write", `{"path":"a"}`)})
			req = f.nextAsk(t)
			cancel()
			if r := b.Wait()[0]; r.State != events.StateInterrupted {
				t.Fatalf("interrupted while it waited, the call ended %s %q", r.State, r.Text())
			}
			if err := <-decided; err != nil {
				t.Fatalf("Approve in the window: %v (it was still pending)", err)
			}
			r := f.start("s", permCall("w2", "write", `{"path":"b"}`)).Wait()[0]
			if r.State != events.StateSuccess || r.Text() != "wrote b" {
				t.Fatalf("after an approval with %s that Approve accepted, the next write ended %s %q; it must run without asking", how, r.State, r.Text())
			}
			if w := f.writes(); len(w) != 1 || w[0] != "b" {
				t.Fatalf("writes %v, want only b: the interrupted call must not run", w)
			}
			waitStatus(t, f, "approved", "the call was interrupted before it could run; allowed for the rest of the session: write")
		})
	}
}

// TestRejectAsTheCallIsInterrupted: a rejection Reject accepted in the
// same window is reported too: the call ends interrupted, the event says
// rejected, with the person's reason.
func TestRejectAsTheCallIsInterrupted(t *testing.T) {
	f := newPermFixture(t, interceptors.WithApprovalTimeout(time.Second))
	decided := make(chan error, 1)
	defer interceptors.SetInterruptHook(func() { decided <- f.perms.Reject("s", "w", "not now") })()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sess, _ := f.tk.Session("s")
	b := sess.Start(ctx, []toolkit.Call{permCall("w", "write", `{"path":"a"}`)})
	f.nextAsk(t)
	cancel()
	if r := b.Wait()[0]; r.State != events.StateInterrupted {
		t.Fatalf("the call ended %s %q", r.State, r.Text())
	}
	if err := <-decided; err != nil {
		t.Fatal(err)
	}
	waitStatus(t, f, "rejected", "the call was interrupted before it could run; not now")
}

// TestBatchAlwaysAllowAsTheBatchIsCancelled: the same for a batch's
// request.
func TestBatchAlwaysAllowAsTheBatchIsCancelled(t *testing.T) {
	f := newPermFixture(t, interceptors.WithApprovalTimeout(time.Second))
	if err := f.tk.Use(f.perms.BatchApproval()); err != nil {
		t.Fatal(err)
	}
	sess, _ := f.tk.Session("s")
	decided := make(chan error, 1)
	var b *toolkit.Batch
	ready := make(chan struct{})
	defer interceptors.SetInterruptHook(func() {
		<-ready
		decided <- f.perms.Approve("s", b.ID(), interceptors.AlwaysAllow())
	})()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b = sess.Start(ctx, []toolkit.Call{permCall("w1", "write", `{"path":"a"}`), permCall("w2", "write", `{"path":"b"}`)})
	close(ready)
	f.nextAsk(t)
	cancel()
	for _, r := range b.Wait() {
		if r.State != events.StateInterrupted {
			t.Fatalf("cancelled while the batch waited, %s ended %s %q", r.Call.ID, r.State, r.Text())
		}
	}
	if err := <-decided; err != nil {
		t.Fatalf("Approve in the window: %v (it was still pending)", err)
	}
	r := f.start("s", permCall("w3", "write", `{"path":"c"}`)).Wait()[0]
	if r.State != events.StateSuccess || r.Text() != "wrote c" {
		t.Fatalf("after an approval with AlwaysAllow that Approve accepted, the next write ended %s %q; it must run without asking", r.State, r.Text())
	}
	if w := f.writes(); len(w) != 1 || w[0] != "c" {
		t.Fatalf("writes %v, want only c", w)
	}
	waitStatus(t, f, "approved", "the batch was interrupted before its calls could run; allowed for the rest of the session: write")
}
