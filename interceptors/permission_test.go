package interceptors_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// permFixture: a toolkit publishing to an embedded NATS server, with a
// read-only tool, a writing tool and the permissions interceptor.
type permFixture struct {
	tk    *toolkit.Toolkit
	bus   *natsbus.Bus
	perms *interceptors.Permissions
	mu    sync.Mutex
	wrote []string
	asks  chan interceptors.ApprovalRequest
	all   chan interceptors.ApprovalRequest
}

func newPermFixture(t *testing.T, opts ...interceptors.PermissionOption) *permFixture {
	t.Helper()
	ctx := context.Background()
	bus, err := natsbus.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bus.Close(context.Background()) })
	f := &permFixture{bus: bus, perms: interceptors.NewPermissions(opts...),
		asks: make(chan interceptors.ApprovalRequest, 16), all: make(chan interceptors.ApprovalRequest, 64)}
	// Approval requests as a UI would see them: from NATS.
	sub, err := bus.Subscribe("toolstream.*.*.approval", func(ev *events.Event) {
		var req interceptors.ApprovalRequest
		if err := json.Unmarshal(ev.Data, &req); err != nil {
			t.Error(err)
			return
		}
		f.all <- req
		if req.Status == "pending" {
			f.asks <- req
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	bus.Conn().Flush()
	f.tk = toolkit.New(toolkit.WithInlineObserver(bus.Publisher()))
	t.Cleanup(func() { f.tk.Close(context.Background()) })
	f.tk.Add(toolkit.MustTool(toolkit.Spec{Name: "read", ReadOnly: true, ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (string, error) {
		return "read ok", nil
	}))
	f.tk.Add(toolkit.MustTool(toolkit.Spec{Name: "write", ConcurrencySafe: true, Timeout: 200 * time.Millisecond}, func(ctx context.Context, in struct {
		Path string `json:"path"`
	}) (string, error) {
		f.mu.Lock()
		f.wrote = append(f.wrote, in.Path)
		f.mu.Unlock()
		return "wrote " + in.Path, nil
	}))
	if err := f.tk.Use(f.perms.Interceptor()); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *permFixture) writes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.wrote...)
}

func (f *permFixture) nextAsk(t *testing.T) interceptors.ApprovalRequest {
	t.Helper()
	select {
	case req := <-f.asks:
		return req
	case <-time.After(10 * time.Second):
		t.Fatal("no approval request on NATS")
		return interceptors.ApprovalRequest{}
	}
}

func (f *permFixture) start(session string, calls ...toolkit.Call) *toolkit.Batch {
	s, _ := f.tk.Session(session)
	return s.Start(context.Background(), calls)
}

func permCall(id, name, args string) toolkit.Call {
	return toolkit.Call{ID: id, Name: name, Args: json.RawMessage(args)}
}

// TestApproveWithEditedArguments: the write asks; the request reaches NATS;
// a person approves with a safer path; the tool runs with it. The read-only
// call of the same batch ran meanwhile.
func TestApproveWithEditedArguments(t *testing.T) {
	f := newPermFixture(t) // default mode: read-only allowed, the rest asks
	run := f.start("s", permCall("w", "write", `{"path":"/etc/passwd"}`), permCall("r", "read", `{}`))
	req := f.nextAsk(t)
	if req.Tool != "write" || req.CallID != "w" || req.Session != "s" || string(req.Args) != `{"path":"/etc/passwd"}` || req.Expires.IsZero() {
		t.Fatalf("request %+v", req)
	}
	if p := f.perms.Pending("s"); len(p) != 1 || p[0].CallID != "w" {
		t.Fatalf("pending %+v", p)
	}
	time.Sleep(300 * time.Millisecond) // longer than write's timeout: the wait must not count
	if err := f.perms.Approve("s", "w", interceptors.WithArgs(json.RawMessage(`{"path":"/tmp/safe"}`))); err != nil {
		t.Fatal(err)
	}
	rs := run.Wait()
	if rs[0].State != events.StateSuccess || rs[0].Text() != "wrote /tmp/safe" || rs[0].Meta["approved"] != true {
		t.Fatalf("write: %s %q", rs[0].State, rs[0].Text())
	}
	if rs[1].State != events.StateSuccess {
		t.Fatalf("read: %s", rs[1].State)
	}
	if w := f.writes(); len(w) != 1 || w[0] != "/tmp/safe" {
		t.Fatalf("writes %v", w)
	}
	if err := f.perms.Approve("s", "w"); !errors.Is(err, interceptors.ErrNotPending) {
		t.Fatalf("second approval: %v", err)
	}
	// The decision went out too.
	deadline := time.After(10 * time.Second)
	for {
		select {
		case req := <-f.all:
			if req.Status == "approved" {
				if req.Note != "arguments edited" {
					t.Fatalf("note %q", req.Note)
				}
				return
			}
		case <-deadline:
			t.Fatal("no approved event")
		}
	}
}

func TestRejectAndAlwaysAllow(t *testing.T) {
	f := newPermFixture(t)
	run := f.start("s", permCall("w1", "write", `{"path":"a"}`))
	req := f.nextAsk(t)
	f.perms.Reject(req.Session, req.CallID, "not on a Friday")
	r := run.Wait()[0]
	if r.State != events.StateDenied || !errors.Is(r.Err, interceptors.ErrRejected) ||
		!strings.Contains(r.Text(), `the user rejected this call of "write": not on a Friday`) {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	if len(f.writes()) != 0 {
		t.Fatal("a rejected call ran")
	}
	// Approve once with "always": later writes in this session run without asking.
	run = f.start("s", permCall("w2", "write", `{"path":"b"}`))
	req = f.nextAsk(t)
	f.perms.Approve(req.Session, req.CallID, interceptors.AlwaysAllow())
	if r := run.Wait()[0]; r.State != events.StateSuccess {
		t.Fatalf("%s", r.State)
	}
	s, _ := f.tk.Session("s")
	if r := s.Run(context.Background(), []toolkit.Call{permCall("w3", "write", `{"path":"c"}`)})[0]; r.State != events.StateSuccess {
		t.Fatalf("always-allowed write: %s %q", r.State, r.Text())
	}
	// Another session still asks.
	run = f.start("other", permCall("w4", "write", `{"path":"d"}`))
	req = f.nextAsk(t)
	if req.Session != "other" {
		t.Fatalf("%+v", req)
	}
	f.perms.Reject("other", "w4", "")
	run.Wait()
}

func TestApprovalTimeout(t *testing.T) {
	f := newPermFixture(t, interceptors.WithApprovalTimeout(50*time.Millisecond))
	run := f.start("s", permCall("w", "write", `{"path":"x"}`))
	f.nextAsk(t)
	r := run.Wait()[0]
	if r.State != events.StateDenied || !errors.Is(r.Err, interceptors.ErrNoDecision) || !strings.Contains(r.Text(), "within 50ms") {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	if len(f.perms.Pending("")) != 0 {
		t.Fatal("an expired request is still pending")
	}
}

func TestRulesAndModes(t *testing.T) {
	f := newPermFixture(t,
		interceptors.WithMode(interceptors.AllowAll),
		interceptors.WithRules(
			interceptors.Rule{Tool: "write", When: interceptors.ArgMatches("path", regexp.MustCompile(`^/etc/`)), Decision: interceptors.Deny, Reason: "system files are off limits"},
			interceptors.Rule{Tool: "read", Decision: interceptors.Deny},
		))
	s, _ := f.tk.Session("s")
	rs := s.Run(context.Background(), []toolkit.Call{
		permCall("1", "write", `{"path":"/etc/hosts"}`), permCall("2", "write", `{"path":"/tmp/x"}`), permCall("3", "read", `{}`),
	})
	if rs[0].State != events.StateDenied || !errors.Is(rs[0].Err, interceptors.ErrDenied) || !strings.Contains(rs[0].Text(), "system files are off limits") {
		t.Fatalf("rule deny: %s %q", rs[0].State, rs[0].Text())
	}
	if rs[1].State != events.StateSuccess || rs[2].State != events.StateDenied {
		t.Fatalf("allow-all mode %s, deny rule %s", rs[1].State, rs[2].State)
	}
	if w := f.writes(); len(w) != 1 || w[0] != "/tmp/x" {
		t.Fatalf("writes %v", w)
	}
	// Deny everything without a rule.
	g := newPermFixture(t, interceptors.WithMode(interceptors.DenyAll), interceptors.WithRules(interceptors.Rule{Tool: "read", Decision: interceptors.Allow}))
	s2, _ := g.tk.Session("s")
	rs = s2.Run(context.Background(), []toolkit.Call{permCall("1", "read", `{}`), permCall("2", "write", `{"path":"x"}`)})
	if rs[0].State != events.StateSuccess || rs[1].State != events.StateDenied {
		t.Fatalf("deny-all: %s %s", rs[0].State, rs[1].State)
	}
}

// TestApprovalInterrupted: cancelling the run ends the wait.
func TestApprovalInterrupted(t *testing.T) {
	f := newPermFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, _ := f.tk.Session("s")
	run := s.Start(ctx, []toolkit.Call{permCall("w", "write", `{"path":"x"}`)})
	f.nextAsk(t)
	cancel()
	if r := run.Wait()[0]; r.State != events.StateInterrupted || !errors.Is(r.Err, context.Canceled) {
		t.Fatalf("%s %v", r.State, r.Err)
	}
}

// TestSerialCallWaitsForApproval: a serial call after an asked one waits for
// the decision; concurrency-safe calls before it run.
func TestSerialCallWaitsForApproval(t *testing.T) {
	f := newPermFixture(t)
	f.tk.Add(toolkit.MustTool(toolkit.Spec{Name: "after", ReadOnly: true}, func(ctx context.Context, _ struct{}) (string, error) {
		return "after ran", nil
	}))
	run := f.start("s", permCall("w", "write", `{"path":"x"}`), permCall("a", "after", `{}`))
	req := f.nextAsk(t)
	select {
	case <-run.Done():
		t.Fatal("the run ended while a call waited for approval")
	case <-time.After(50 * time.Millisecond):
	}
	f.perms.Approve(req.Session, req.CallID)
	rs := run.Wait()
	if rs[0].State != events.StateSuccess || rs[1].Text() != "after ran" {
		t.Fatalf("%s %q", rs[0].State, rs[1].Text())
	}
}
