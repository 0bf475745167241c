package durable_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/durable"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

// edits records the runs of the "edit" tool (it asks for approval: it is
// neither read-only nor idempotent), with the path each ran with.
var edits struct {
	sync.Mutex
	paths []string
}

func editsRun() []string {
	edits.Lock()
	defer edits.Unlock()
	return append([]string(nil), edits.paths...)
}

// approvalProcess is one life of an agent's process whose calls of "edit"
// wait for a person's approval.
type approvalProcess struct {
	*agentProcess
	perms *interceptors.Permissions
	asked atomic.Int64 // pending approval requests sent
	notes chan string  // decision events' notes
}

func startApprovals(t *testing.T, js jetstream.JetStream, opts ...interceptors.PermissionOption) *approvalProcess {
	t.Helper()
	ctx := context.Background()
	st := newStore(t, js)
	// A call asked about again fails the test in seconds, not minutes.
	opts = append([]interceptors.PermissionOption{interceptors.WithApprovalTimeout(3 * time.Second)}, opts...)
	p := &approvalProcess{perms: interceptors.NewPermissions(opts...), notes: make(chan string, 16)}
	count := toolkit.ObserverFunc(func(ev *events.Event) {
		if ev.Type != interceptors.ApprovalEvent {
			return
		}
		if bytes.Contains(ev.Data, []byte(`"status":"pending"`)) {
			p.asked.Add(1)
		} else {
			p.notes <- string(ev.Data)
		}
	})
	tk := toolkit.New(toolkit.WithInlineObserver(count))
	if err := tk.Add(
		toolkit.MustTool(toolkit.Spec{Name: "edit"}, func(ctx context.Context, in struct {
			Path string `json:"path"`
		}) (string, error) {
			edits.Lock()
			defer edits.Unlock()
			edits.paths = append(edits.paths, in.Path)
			if in.Path == "block" && len(edits.paths) == 1 {
				edits.Unlock()
				<-ctx.Done()
				edits.Lock()
				return "", ctx.Err()
			}
			return "edited " + in.Path, nil
		}),
	); err != nil {
		t.Fatal(err)
	}
	if err := tk.Use(st.Interceptor(), p.perms.Interceptor()); err != nil {
		t.Fatal(err)
	}
	stop, err := st.Deliver(ctx, tk, durable.WithPermissions(p.perms))
	if err != nil {
		t.Fatal(err)
	}
	sess, err := tk.Session("conv")
	if err != nil {
		t.Fatal(err)
	}
	p.agentProcess = &agentProcess{tk: tk, sess: sess, store: st, stop: stop}
	t.Cleanup(p.close)
	return p
}

// pendingApproval starts the call in a first life of the process, waits
// until the bucket has it waiting for approval, and ends that life.
func pendingApproval(t *testing.T, js jetstream.JetStream, call toolkit.Call) {
	t.Helper()
	first := startApprovals(t, js)
	batch := first.sess.Start(context.Background(), []toolkit.Call{call})
	waitSuspended(t, first.store, call.ID)
	// The request is pending before its event reaches the observers: wait
	// for both.
	for deadline := time.Now().Add(5 * time.Second); (len(first.perms.Pending("conv")) == 0 || first.asked.Load() == 0) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if first.asked.Load() != 1 {
		t.Fatalf("first life: %d approval requests", first.asked.Load())
	}
	first.close()
	if r := batch.Wait()[0]; r.State != events.StateInterrupted {
		t.Fatalf("first life: %s %q", r.State, r.Text())
	}
	pending, err := first.store.Pending(context.Background(), "conv")
	if err != nil || len(pending) == 0 {
		t.Fatalf("pending after the stop: %+v %v", pending, err)
	}
	if last := pending[len(pending)-1]; last.Call.ID != call.ID || last.Reason != "approval" || last.Decision != nil {
		t.Fatalf("pending after the stop: %+v", last)
	}
}

// TestApprovalSurvivesRestart: an approval (with edited arguments) given
// while no process runs the call is applied when the call runs again,
// without asking anyone, and the call then never runs twice.
func TestApprovalSurvivesRestart(t *testing.T) {
	js := natstest.JetStream(t)
	edits.paths = nil
	ctx := context.Background()
	call := testutil.Call("p1", "edit", `{"path":"a.txt"}`)
	pendingApproval(t, js, call)

	// No process runs: the person approves, editing the path.
	st := newStore(t, js)
	if err := st.Approve(ctx, "conv", "p1", []byte(`{"path":"b.txt"}`)); err != nil {
		t.Fatal(err)
	}
	if err := st.Reject(ctx, "conv", "p1", "too late"); err == nil {
		t.Fatal("a second decision was taken")
	}

	second := startApprovals(t, js)
	// The agent re-issues the turn's calls (as durable.Resume does).
	r := second.sess.Run(ctx, []toolkit.Call{call})[0]
	if r.State != events.StateSuccess || r.Text() != "edited b.txt" || r.Meta["approved"] != true {
		t.Fatalf("after the restart: %s %q %v", r.State, r.Text(), r.Meta)
	}
	if n := second.asked.Load(); n != 0 || len(second.perms.Pending("")) != 0 {
		t.Fatalf("asked again: %d requests", n)
	}
	if note := <-second.notes; !strings.Contains(note, `"status":"approved"`) || !strings.Contains(note, "decided before a restart; arguments edited") {
		t.Fatalf("decision event %s", note)
	}
	if got := editsRun(); len(got) != 1 || got[0] != "b.txt" {
		t.Fatalf("runs %v", got)
	}
	r = second.sess.Run(ctx, []toolkit.Call{call})[0]
	if r.Text() != "edited b.txt" || r.Meta[durable.MetaReplayed] != true || len(editsRun()) != 1 || second.asked.Load() != 0 {
		t.Fatalf("p1 again: %q %v, runs %v", r.Text(), r.Meta, editsRun())
	}
}

// TestRejectionSurvivesRestart: a rejection given while no process runs the
// call ends it denied, with the person's reason, when it runs again.
func TestRejectionSurvivesRestart(t *testing.T) {
	js := natstest.JetStream(t)
	edits.paths = nil
	ctx := context.Background()
	call := testutil.Call("p2", "edit", `{"path":"a.txt"}`)
	pendingApproval(t, js, call)
	st := newStore(t, js)
	if err := st.Reject(ctx, "conv", "p2", "not that file"); err != nil {
		t.Fatal(err)
	}

	second := startApprovals(t, js)
	r := second.sess.Run(ctx, []toolkit.Call{call})[0]
	if r.State != events.StateDenied || !errors.Is(r.Err, interceptors.ErrRejected) || !strings.Contains(r.Text(), "not that file") {
		t.Fatalf("after the restart: %s %q %v", r.State, r.Text(), r.Err)
	}
	if second.asked.Load() != 0 || len(editsRun()) != 0 {
		t.Fatalf("asked %d, runs %v", second.asked.Load(), editsRun())
	}
	rec, err := st.Get(ctx, "conv", "p2")
	if err != nil || rec.State != durable.Done || rec.Result.State != events.StateDenied {
		t.Fatalf("stored %+v %v", rec, err)
	}
}

// TestApprovedFinishedCallNotRunAgain: a call approved through the store
// while it waits in a running process (Deliver passes the decision on) runs
// once; after a restart, running it again returns its stored result and
// asks nobody.
func TestApprovedFinishedCallNotRunAgain(t *testing.T) {
	js := natstest.JetStream(t)
	edits.paths = nil
	ctx := context.Background()
	call := testutil.Call("p3", "edit", `{"path":"a.txt"}`)
	first := startApprovals(t, js)
	batch := first.sess.Start(ctx, []toolkit.Call{call})
	waitSuspended(t, first.store, "p3")
	if err := first.store.Approve(ctx, "conv", "p3", nil); err != nil {
		t.Fatal(err)
	}
	if r := batch.Wait()[0]; r.State != events.StateSuccess || r.Text() != "edited a.txt" {
		t.Fatalf("first life: %s %q", r.State, r.Text())
	}
	first.close()

	second := startApprovals(t, js)
	r := second.sess.Run(ctx, []toolkit.Call{call})[0]
	if r.Text() != "edited a.txt" || r.Meta[durable.MetaReplayed] != true {
		t.Fatalf("after the restart: %s %q %v", r.State, r.Text(), r.Meta)
	}
	if got := editsRun(); len(got) != 1 || second.asked.Load() != 0 {
		t.Fatalf("runs %v, asked %d", got, second.asked.Load())
	}
}

// TestStoredApprovalNeverLiftsDeny: a stored approval answers only the
// question Permissions asks. A process restarted with a rule that denies
// the call denies it; a call re-issued with other arguments than the ones
// the person approved is asked about again.
func TestStoredApprovalNeverLiftsDeny(t *testing.T) {
	js := natstest.JetStream(t)
	edits.paths = nil
	ctx := context.Background()
	st := newStore(t, js)
	for _, c := range []toolkit.Call{testutil.Call("p4", "edit", `{"path":"/etc/hosts"}`), testutil.Call("p5", "edit", `{"path":"a.txt"}`)} {
		pendingApproval(t, js, c)
		if err := st.Approve(ctx, "conv", c.ID, nil); err != nil {
			t.Fatal(err)
		}
	}
	second := startApprovals(t, js, interceptors.WithRules(interceptors.Rule{Tool: "edit", When: func(a map[string]any) bool { return a["path"] == "/etc/hosts" }, Decision: interceptors.Deny}))
	r := second.sess.Run(ctx, []toolkit.Call{testutil.Call("p4", "edit", `{"path":"/etc/hosts"}`)})[0]
	if r.State != events.StateDenied || !errors.Is(r.Err, interceptors.ErrDenied) {
		t.Fatalf("p4: %s %q", r.State, r.Text())
	}
	batch := second.sess.Start(ctx, []toolkit.Call{testutil.Call("p5", "edit", `{"path":"c.txt"}`)})
	for deadline := time.Now().Add(5 * time.Second); len(second.perms.Pending("conv")) == 0 || second.asked.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("p5 with other arguments never asked about")
		}
	}
	if second.asked.Load() != 1 || len(editsRun()) != 0 {
		t.Fatalf("p5 with other arguments: asked %d, runs %v", second.asked.Load(), editsRun())
	}
	if err := second.perms.Reject("conv", "p5", "no"); err != nil {
		t.Fatal(err)
	}
	if r := batch.Wait()[0]; r.State != events.StateDenied {
		t.Fatalf("p5: %s %q", r.State, r.Text())
	}
}

// TestApprovedCallInterruptedKeepsDecision: an approved call interrupted
// while it runs goes back to pending with its decision; run again after
// the next restart, it runs without asking.
func TestApprovedCallInterruptedKeepsDecision(t *testing.T) {
	js := natstest.JetStream(t)
	edits.paths = nil
	ctx := context.Background()
	call := testutil.Call("p6", "edit", `{"path":"block"}`)
	pendingApproval(t, js, call)
	st := newStore(t, js)
	if err := st.Approve(ctx, "conv", "p6", nil); err != nil {
		t.Fatal(err)
	}
	second := startApprovals(t, js)
	batch := second.sess.Start(ctx, []toolkit.Call{call})
	for deadline := time.Now().Add(5 * time.Second); len(editsRun()) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("p6 never ran")
		}
	}
	second.close()
	if r := batch.Wait()[0]; r.State != events.StateInterrupted {
		t.Fatalf("second life: %s %q", r.State, r.Text())
	}
	rec, err := st.Get(ctx, "conv", "p6")
	if err != nil || rec.State != durable.Suspended || rec.Decision == nil || !rec.Decision.Approve {
		t.Fatalf("after the interruption: %+v %v", rec, err)
	}
	third := startApprovals(t, js)
	r := third.sess.Run(ctx, []toolkit.Call{call})[0]
	if r.State != events.StateSuccess || third.asked.Load() != 0 || len(editsRun()) != 2 {
		t.Fatalf("third life: %s %q, asked %d, runs %v", r.State, r.Text(), third.asked.Load(), editsRun())
	}
}

// TestDecisionFollowsTheArgumentsAsked: a decided call run again with other
// arguments is asked about again, and the record then holds those arguments:
// Pending shows the person what they are asked now, and a decision given
// through the store about them applies after the next restart (before, the
// record kept the first arguments, so Pending showed the old ones and every
// later decision was dropped as being about other arguments).
func TestDecisionFollowsTheArgumentsAsked(t *testing.T) {
	js := natstest.JetStream(t)
	edits.paths = nil
	ctx := context.Background()
	pendingApproval(t, js, testutil.Call("p7", "edit", `{"path":"a.txt"}`))
	st := newStore(t, js)
	if err := st.Approve(ctx, "conv", "p7", nil); err != nil {
		t.Fatal(err)
	}

	// The call comes back with other arguments: the person is asked again.
	second := startApprovals(t, js)
	batch := second.sess.Start(ctx, []toolkit.Call{testutil.Call("p7", "edit", `{"path":"c.txt"}`)})
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		rec, err := st.Get(ctx, "conv", "p7")
		if err == nil && rec.State == durable.Suspended && rec.Decision == nil && second.asked.Load() == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never asked again: %+v %v, asked %d", rec, err, second.asked.Load())
		}
	}
	second.close()
	if r := batch.Wait()[0]; r.State != events.StateInterrupted {
		t.Fatalf("second life: %s %q", r.State, r.Text())
	}
	pending, err := st.Pending(ctx, "conv")
	if err != nil || len(pending) != 1 || !strings.Contains(string(pending[0].Call.Args), "c.txt") {
		t.Fatalf("pending shows %+v %v, want the arguments asked about (c.txt)", pending, err)
	}
	if err := st.Approve(ctx, "conv", "p7", nil); err != nil {
		t.Fatal(err)
	}

	third := startApprovals(t, js)
	r := third.sess.Run(ctx, []toolkit.Call{testutil.Call("p7", "edit", `{"path":"c.txt"}`)})[0]
	if r.State != events.StateSuccess || r.Text() != "edited c.txt" || third.asked.Load() != 0 {
		t.Fatalf("third life: %s %q, asked %d", r.State, r.Text(), third.asked.Load())
	}
}
