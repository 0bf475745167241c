//go:build toolstream_testhooks

package interceptors_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// TestDecisionAsTheApprovalExpires: a person decides at the moment the
// approval's time is up, after the timer fired and before the request was
// withdrawn. Approve and Reject return nil there, so the call must follow
// the decision: approved, it runs; rejected, it is rejected, not expired.
// Before the fix the call expired and the decision Approve had accepted was
// lost without a word.
func TestDecisionAsTheApprovalExpires(t *testing.T) {
	for _, approve := range []bool{true, false} {
		name := map[bool]string{true: "approve", false: "reject"}[approve]
		t.Run(name, func(t *testing.T) {
			f := newPermFixture(t, interceptors.WithApprovalTimeout(50*time.Millisecond))
			decided := make(chan error, 1)
			defer interceptors.SetExpiryHook(func() {
				if approve {
					decided <- f.perms.Approve("s", "w")
				} else {
					decided <- f.perms.Reject("s", "w", "not now")
				}
			})()
			r := f.start("s", permCall("w", "write", `{"path":"x"}`)).Wait()[0]
			if err := <-decided; err != nil {
				t.Fatalf("the decision in the window: %v", err)
			}
			switch {
			case approve && (r.State != events.StateSuccess || r.Text() != "wrote x"):
				t.Fatalf("approved in time, the call ended %s %q", r.State, r.Text())
			case !approve && (r.State != events.StateDenied || !errors.Is(r.Err, interceptors.ErrRejected)):
				t.Fatalf("rejected in time, the call ended %s %q (err %v)", r.State, r.Text(), r.Err)
			}
			if approve {
				waitStatus(t, f, "approved", "")
			} else {
				waitStatus(t, f, "rejected", "not now")
			}
			if p := f.perms.Pending(""); len(p) != 0 {
				t.Fatalf("still pending: %+v", p)
			}
		})
	}
}

// TestBatchDecisionAsTheApprovalExpires: the same for a batch's request.
func TestBatchDecisionAsTheApprovalExpires(t *testing.T) {
	f := newPermFixture(t, interceptors.WithApprovalTimeout(50*time.Millisecond))
	if err := f.tk.Use(f.perms.BatchApproval()); err != nil {
		t.Fatal(err)
	}
	sess, _ := f.tk.Session("s")
	decided := make(chan error, 1)
	var b *toolkit.Batch
	ready := make(chan struct{})
	defer interceptors.SetExpiryHook(func() {
		<-ready
		decided <- f.perms.Approve("s", b.ID())
	})()
	b = sess.Start(context.Background(), []toolkit.Call{permCall("w1", "write", `{"path":"a"}`), permCall("w2", "write", `{"path":"b"}`)})
	close(ready)
	rs := b.Wait()
	if err := <-decided; err != nil {
		t.Fatalf("the decision in the window: %v", err)
	}
	for _, r := range rs {
		if r.State != events.StateSuccess {
			t.Fatalf("approved in time, %s ended %s %q", r.Call.ID, r.State, r.Text())
		}
	}
	if p := f.perms.Pending(""); len(p) != 0 {
		t.Fatalf("still pending: %+v", p)
	}
}
