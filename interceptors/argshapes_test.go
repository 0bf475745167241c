package interceptors_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// argShapes are the forms of one call's arguments that the argument
// pipeline accepts and turns into the same thing for the handler:
// {"path":"/etc/passwd","mode":"read","limit":100,"owner":"ops"} (mode has
// a default, limit is an integer, owner is a preset the model cannot set).
var argShapes = []struct{ name, args string }{
	{"plain", `{"path":"/etc/passwd","mode":"read","limit":100}`},
	{"double-encoded", `"{\"path\":\"/etc/passwd\",\"mode\":\"read\",\"limit\":100}"`},
	{"default filled", `{"path":"/etc/passwd","limit":100}`},
	{"optional null dropped", `{"path":"/etc/passwd","mode":null,"limit":100}`},
	{"integer as 1e2", `{"path":"/etc/passwd","mode":"read","limit":1e2}`},
	{"integer as 100.0", `{"path":"/etc/passwd","mode":"read","limit":100.0}`},
	{"preset overrides the model", `{"path":"/etc/passwd","mode":"read","limit":100,"owner":"root"}`},
	{"double-encoded with everything", `"{\"path\":\"/etc/passwd\",\"mode\":null,\"limit\":1e2,\"owner\":\"root\"}"`},
}

// readIn is the input of the tool the shapes call.
type readIn struct {
	Path  string `json:"path"`
	Mode  string `json:"mode,omitempty" tool:"enum=read|stat,default=read"`
	Limit int    `json:"limit"`
	Owner string `json:"owner,omitempty"`
}

// argsSeen records the arguments an interceptor saw and those the handler
// got, per call.
type argsSeen struct {
	mu      sync.Mutex
	ic      map[string]json.RawMessage
	handler map[string]readIn
}

func (a *argsSeen) interceptor() toolkit.Interceptor {
	return toolkit.Interceptor{Name: "record-args", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		a.mu.Lock()
		a.ic[inv.Call.ID] = inv.Call.Args
		a.mu.Unlock()
		return next(ctx, inv)
	}}
}

func shapesKit(t *testing.T, ics ...toolkit.Interceptor) (*toolkit.Toolkit, *argsSeen) {
	t.Helper()
	seen := &argsSeen{ic: map[string]json.RawMessage{}, handler: map[string]readIn{}}
	tk := icKit(t, nil, append([]toolkit.Interceptor{seen.interceptor()}, ics...)...)
	tool, err := toolkit.NewTool(toolkit.Spec{Name: "read_file", ReadOnly: true, Presets: map[string]any{"owner": "ops"}},
		func(ctx context.Context, in readIn) (string, error) {
			info, _ := toolkit.CallInfoFrom(ctx)
			seen.mu.Lock()
			seen.handler[info.CallID] = in
			seen.mu.Unlock()
			return "contents of " + in.Path, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Add(t, tk, tool)
	return tk, seen
}

var wantArgs = readIn{Path: "/etc/passwd", Mode: "read", Limit: 100, Owner: "ops"}

// TestInterceptorsSeeWhatTheHandlerGets: for every argument shape, the
// arguments interceptors see are exactly those the handler receives.
func TestInterceptorsSeeWhatTheHandlerGets(t *testing.T) {
	tk, seen := shapesKit(t)
	s := testutil.Session(t, tk, "s")
	for _, shape := range argShapes {
		r := icRun(t, s, testutil.Call(shape.name, "read_file", shape.args))
		if r.State != events.StateSuccess {
			t.Fatalf("%s: %s %q", shape.name, r.State, r.Text())
		}
		var fromIC readIn
		dec := json.NewDecoder(bytes.NewReader(seen.ic[shape.name]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&fromIC); err != nil {
			t.Fatalf("%s: interceptor saw %s: %v", shape.name, seen.ic[shape.name], err)
		}
		if fromIC != wantArgs || seen.handler[shape.name] != wantArgs {
			t.Errorf("%s: interceptor saw %s (%+v), handler got %+v; want %+v", shape.name, seen.ic[shape.name], fromIC, seen.handler[shape.name], wantArgs)
		}
	}
}

// TestPermissionsCannotBeBypassed: a deny rule on an argument holds for
// every shape of the same arguments (before, a double-encoded call slipped
// past it), and a rule on a preset sees the preset, not what the model sent.
func TestPermissionsCannotBeBypassed(t *testing.T) {
	perm := interceptors.NewPermissions(interceptors.WithMode(interceptors.AllowAll), interceptors.WithRules(
		interceptors.Rule{Tool: "read_file", When: interceptors.ArgMatches("path", regexp.MustCompile(`^/etc/`)), Decision: interceptors.Deny},
		interceptors.Rule{Tool: "read_file", When: interceptors.ArgMatches("owner", regexp.MustCompile(`^root$`)), Decision: interceptors.Allow},
	))
	tk, seen := shapesKit(t, perm.Interceptor())
	s := testutil.Session(t, tk, "s")
	for _, shape := range argShapes {
		r := icRun(t, s, testutil.Call(shape.name, "read_file", shape.args))
		if r.State != events.StateDenied {
			t.Errorf("%s: %s %q, want denied", shape.name, r.State, r.Text())
		}
		if _, ran := seen.handler[shape.name]; ran {
			t.Errorf("%s: the handler ran", shape.name)
		}
	}
	// Invalid arguments never reach a permission decision.
	r := icRun(t, s, testutil.Call("bad", "read_file", `"{\"path\":\"/etc/passwd\",\"limit\":\"many\"}"`))
	if r.State != events.StateError || !strings.Contains(r.Text(), "limit: must be an integer") {
		t.Errorf("invalid arguments: %s %q", r.State, r.Text())
	}
	if _, asked := seen.ic["bad"]; asked {
		t.Error("a call with invalid arguments reached the interceptors")
	}
}

// TestPermissionEditedArgumentsAreChecked: arguments a person edits in an
// approval are prepared and validated again before the tool runs.
func TestPermissionEditedArgumentsAreChecked(t *testing.T) {
	perm := interceptors.NewPermissions(interceptors.WithMode(interceptors.AskAll))
	tk, seen := shapesKit(t, perm.Interceptor())
	s := testutil.Session(t, tk, "s")
	for _, tc := range []struct {
		edit  string
		state events.State
		want  readIn
	}{
		{`"{\"path\":\"/tmp/x\",\"limit\":5}"`, events.StateSuccess, readIn{Path: "/tmp/x", Mode: "read", Limit: 5, Owner: "ops"}},
		{`{"path":"/tmp/x","limit":"five"}`, events.StateError, readIn{}},
	} {
		run := s.Start(context.Background(), []toolkit.Call{testutil.Call("e", "read_file", argShapes[0].args)})
		deadline := time.Now().Add(10 * time.Second)
		for len(perm.Pending("s")) == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if err := perm.Approve("s", "e", interceptors.WithArgs(json.RawMessage(tc.edit))); err != nil {
			t.Fatal(err)
		}
		r := run.Wait()[0]
		seen.mu.Lock()
		got := seen.handler["e"]
		delete(seen.handler, "e")
		seen.mu.Unlock()
		if r.State != tc.state || got != tc.want {
			t.Errorf("edit %s: %s %q, handler got %+v; want %s, %+v", tc.edit, r.State, r.Text(), got, tc.state, tc.want)
		}
	}
}

// TestEditedArgumentsCannotLiftDenyRules: arguments a person edits in an
// approval meet the deny rules as they will run (prepared), so an edit
// cannot reach what a rule denies, in any shape; an edit the rules allow
// runs.
func TestEditedArgumentsCannotLiftDenyRules(t *testing.T) {
	perm := interceptors.NewPermissions(interceptors.WithMode(interceptors.AskAll), interceptors.WithRules(
		interceptors.Rule{Tool: "read_file", When: interceptors.ArgMatches("path", regexp.MustCompile(`^/etc/`)), Decision: interceptors.Deny, Reason: "system files are off limits"}))
	tk, seen := shapesKit(t, perm.Interceptor())
	s := testutil.Session(t, tk, "s")
	var decisions []interceptors.ApprovalRequest
	var mu sync.Mutex
	tk.ObserveInline(toolkit.ObserverFunc(func(ev *events.Event) {
		if ev.Type != interceptors.ApprovalEvent {
			return
		}
		var r interceptors.ApprovalRequest
		if err := json.Unmarshal(ev.Data, &r); err == nil && r.Status != "pending" {
			mu.Lock()
			decisions = append(decisions, r)
			mu.Unlock()
		}
	}))
	for i, tc := range []struct {
		edit  string
		state events.State
	}{
		{`{"path":"/etc/shadow","limit":5}`, events.StateDenied},
		{`"{\"path\":\"/etc/shadow\",\"limit\":5}"`, events.StateDenied},
		{`{"path":"/tmp/x","limit":5}`, events.StateSuccess},
	} {
		id := fmt.Sprint("e", i)
		run := s.Start(context.Background(), []toolkit.Call{testutil.Call(id, "read_file", `{"path":"/tmp/y","limit":1}`)})
		deadline := time.Now().Add(10 * time.Second)
		for len(perm.Pending("s")) == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if err := perm.Approve("s", id, interceptors.WithArgs(json.RawMessage(tc.edit))); err != nil {
			t.Fatal(err)
		}
		r := run.Wait()[0]
		seen.mu.Lock()
		got, ran := seen.handler[id]
		seen.mu.Unlock()
		if r.State != tc.state || ran != (tc.state == events.StateSuccess) {
			t.Errorf("edit %s: %s %q, handler ran %v with %+v; want %s", tc.edit, r.State, r.Text(), ran, got, tc.state)
		}
		if tc.state == events.StateDenied && (!errors.Is(r.Err, interceptors.ErrDenied) || !strings.Contains(r.Text(), "system files are off limits")) {
			t.Errorf("edit %s: error %v, text %q: want ErrDenied with the rule's reason", tc.edit, r.Err, r.Text())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var statuses []string
	for _, d := range decisions {
		statuses = append(statuses, d.Status)
	}
	if want := []string{"denied", "denied", "approved"}; !slices.Equal(statuses, want) {
		t.Errorf("approval decisions %v, want %v", statuses, want)
	}
}

// TestLoopGuardSeesOneCallInEveryShape: the same call in different shapes
// is the same call to the loop guard.
func TestLoopGuardSeesOneCallInEveryShape(t *testing.T) {
	tk, _ := shapesKit(t, interceptors.LoopGuard(3, 0))
	s := testutil.Session(t, tk, "s")
	var states []events.State
	for _, shape := range argShapes[:4] {
		states = append(states, icRun(t, s, testutil.Call(shape.name, "read_file", shape.args)).State)
	}
	if states[0] != events.StateSuccess || states[1] != events.StateSuccess || states[2] != events.StateError || states[3] != events.StateError {
		t.Errorf("states %v: the third shape of one call should be refused as a loop", states)
	}
}

// TestAuditAndEmulatorSeePreparedArguments: what the audit log records and
// what an emulated tool is asked are the prepared arguments.
func TestAuditAndEmulatorSeePreparedArguments(t *testing.T) {
	var logged bytes.Buffer
	var mu sync.Mutex
	var prompts []string
	model := generator(func(ctx context.Context, prompt string) (string, error) {
		mu.Lock()
		prompts = append(prompts, prompt)
		mu.Unlock()
		return "emulated", nil
	})
	em := interceptors.Emulate(model)
	em.Tools = []string{"read_file"}
	tk, _ := shapesKit(t, interceptors.Audit(zerolog.New(&syncWriter{w: &logged}), interceptors.AuditArgs()), em)
	s := testutil.Session(t, tk, "s")
	r := icRun(t, s, testutil.Call("1", "read_file", argShapes[len(argShapes)-1].args))
	if r.Text() != "emulated" {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	for what, text := range map[string]string{"audit log": logged.String(), "emulator prompt": strings.Join(prompts, "")} {
		if !strings.Contains(text, `ops`) || strings.Contains(text, "root") || !strings.Contains(text, `100`) || strings.Contains(text, `1e2`) {
			t.Errorf("%s does not show the prepared arguments: %s", what, text)
		}
	}
}

// syncWriter serializes writes of a logger used from several goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// generator adapts a function to interceptors.Model.
type generator func(ctx context.Context, prompt string) (string, error)

func (g generator) Generate(ctx context.Context, prompt string) (string, error) {
	return g(ctx, prompt)
}
