package interceptors_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

// wire collects the events a subscriber of its own connection gets from a
// bus, as they are on the wire, each checked against the schema.
type wire struct {
	mu     sync.Mutex
	byCall map[string][]*events.Event
	raw    []string
	ended  chan string // a call's result arrived
}

func watchWire(t *testing.T, bus *natsbus.Bus) *wire {
	t.Helper()
	nc, err := nats.Connect("", nats.InProcessServer(bus.Server()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	w := &wire{byCall: map[string][]*events.Event{}, ended: make(chan string, 64)}
	if _, err := nc.Subscribe(bus.Subjects().All(), func(m *nats.Msg) {
		testutil.CheckEvent(t, m.Data)
		ev, err := events.Decode(m.Data)
		if err != nil {
			t.Error(err)
			return
		}
		w.mu.Lock()
		w.byCall[ev.Call] = append(w.byCall[ev.Call], ev)
		w.raw = append(w.raw, string(m.Data))
		w.mu.Unlock()
		if ev.Type == events.TypeResult {
			w.ended <- ev.Call
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return w
}

// wait waits for the results of n calls.
func (w *wire) wait(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-w.ended:
		case <-time.After(10 * time.Second):
			t.Fatal("a result did not reach the subscriber")
		}
	}
}

// args returns the bodies of a call's args events, and the call's event types.
func (w *wire) args(t *testing.T, call string) ([]events.Args, []events.Type) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []events.Args
	var types []events.Type
	for _, ev := range w.byCall[call] {
		types = append(types, ev.Type)
		if ev.Type == events.TypeArgs {
			var a events.Args
			if err := json.Unmarshal(ev.Data, &a); err != nil {
				t.Fatalf("args event of %s: %s: %v", call, ev.Data, err)
			}
			out = append(out, a)
		}
	}
	return out, types
}

// writeTool is a tool with a preset token that reports the path it wrote.
func writeTool(t *testing.T, wrote chan<- string) *toolkit.Tool {
	t.Helper()
	type in struct {
		Path  string `json:"path"`
		Token string `json:"token"`
	}
	tool, err := toolkit.NewTool(toolkit.Spec{Name: "write", ConcurrencySafe: true, Presets: map[string]any{"token": "s3cret-preset"}},
		func(ctx context.Context, in in) (string, error) {
			if in.Token != "s3cret-preset" {
				return "", errBadToken
			}
			wrote <- in.Path
			return "wrote " + in.Path, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

var errBadToken = errors.New("the preset token did not reach the tool")

// confine rewrites paths under /etc to /tmp, and denies the path "deny"
// without running the tool; it rewrites on every attempt, each time into
// a new slice.
func confine() toolkit.Interceptor {
	return toolkit.Interceptor{Name: "confine", Tools: []string{"write"},
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
			var in map[string]any
			if err := json.Unmarshal(inv.Call.Args, &in); err != nil {
				return toolkit.Failure(events.StateError, err)
			}
			switch p, _ := in["path"].(string); {
			case p == "deny":
				return toolkit.Failure(events.StateDenied, interceptors.ErrDenied)
			case strings.HasPrefix(p, "/etc/"):
				in["path"] = "/tmp/" + strings.TrimPrefix(p, "/etc/")
				inv.Call.Args, _ = json.Marshal(in)
			}
			return next(ctx, inv)
		}}
}

// twice runs the tool twice (a retry that always retries once).
func twice() toolkit.Interceptor {
	return toolkit.Interceptor{Name: "twice", Order: -10,
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
			next(ctx, inv)
			return next(ctx, inv)
		}}
}

// TestArgsEventRecordsRewrittenArguments: when an interceptor rewrites a
// call's arguments, a NATS subscriber gets one args event with those the
// tool ran with, presets left out, after the start (which keeps the
// model's) and before any delta; a retry that rewrites them the same way
// again adds none. A call left as it was and a call denied before its tool
// ran have none. Before the args event, nothing on the wire said what the
// rewritten call ran with.
func TestArgsEventRecordsRewrittenArguments(t *testing.T) {
	bus := natstest.Bus(t)
	w := watchWire(t, bus)
	wrote := make(chan string, 16)
	tk := icKit(t, []toolkit.Option{toolkit.WithInlineObserver(bus.Publisher())}, twice(), confine())
	testutil.Add(t, tk, writeTool(t, wrote))
	rs := testutil.Run(t, tk, "s",
		testutil.Call("moved", "write", `{"path":"/etc/passwd"}`),
		testutil.Call("kept", "write", `{"path":"/home/a"}`),
		testutil.Call("denied", "write", `{"path":"deny"}`))
	w.wait(t, 3)
	if r := testutil.ResultByID(rs, "moved"); r.State != events.StateSuccess || r.Text() != "wrote /tmp/passwd" {
		t.Fatalf("moved: %s %q", r.State, r.Text())
	}
	if r := testutil.ResultByID(rs, "denied"); r.State != events.StateDenied {
		t.Fatalf("denied: %s %q", r.State, r.Text())
	}

	got, types := w.args(t, "moved")
	if len(got) != 1 || string(got[0].Args) != `{"path":"/tmp/passwd"}` || got[0].ArgsOmitted {
		t.Fatalf("moved: args events %+v, want one with {\"path\":\"/tmp/passwd\"} (events %v)", got, types)
	}
	if types[0] != events.TypeStart || types[1] != events.TypeArgs {
		t.Fatalf("moved: events %v, want start then args before any delta", types)
	}
	w.mu.Lock()
	start := w.byCall["moved"][0].Start
	w.mu.Unlock()
	if string(start.Args) != `{"path":"/etc/passwd"}` {
		t.Fatalf("start carries %s, want the model's arguments", start.Args)
	}
	for _, call := range []string{"kept", "denied"} {
		if got, types := w.args(t, call); len(got) != 0 {
			t.Fatalf("%s: args events %+v (events %v), want none", call, got, types)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, raw := range w.raw {
		if strings.Contains(raw, "s3cret-preset") {
			t.Fatalf("a preset reached the wire: %s", raw)
		}
	}
}

// TestArgsEventRecordsEditedApproval: a person approves a call with edited
// arguments: an args event with them follows the approval, before the
// tool's output. A call approved as it was has none. Before, only the
// approval's note ("arguments edited") said that they had changed.
func TestArgsEventRecordsEditedApproval(t *testing.T) {
	f := newPermFixture(t)
	w := watchWire(t, f.bus)
	run := f.start("s", permCall("edited", "write", `{"path":"/etc/passwd"}`), permCall("as-is", "write", `{"path":"/tmp/a"}`))
	for range 2 {
		req := f.nextAsk(t)
		var opts []interceptors.ApproveOption
		if req.CallID == "edited" {
			opts = append(opts, interceptors.WithArgs(json.RawMessage(`{"path":"/tmp/safe"}`)))
		}
		if err := f.perms.Approve("s", req.CallID, opts...); err != nil {
			t.Fatal(err)
		}
	}
	if rs := run.Wait(); rs[0].Text() != "wrote /tmp/safe" || rs[1].Text() != "wrote /tmp/a" {
		t.Fatalf("results %q, %q", rs[0].Text(), rs[1].Text())
	}
	w.wait(t, 2)
	got, types := w.args(t, "edited")
	if len(got) != 1 || string(got[0].Args) != `{"path":"/tmp/safe"}` {
		t.Fatalf("edited: args events %+v (events %v), want one with the edited arguments", got, types)
	}
	approval, args, delta := lastIndex(types, "approval"), slices.Index(types, events.TypeArgs), slices.Index(types, events.TypeDelta)
	if approval < 0 || args < approval || delta < args {
		t.Fatalf("edited: events %v, want the args event after the approval and before the output", types)
	}
	if got, types := w.args(t, "as-is"); len(got) != 0 {
		t.Fatalf("as-is: args events %+v (events %v), want none", got, types)
	}
}

func lastIndex(types []events.Type, typ events.Type) int {
	for i := len(types) - 1; i >= 0; i-- {
		if types[i] == typ {
			return i
		}
	}
	return -1
}

// TestAuditLogsArgumentsTheToolRanWith: with AuditArgs, the line of a call
// whose arguments an interceptor inside Audit rewrote has them as ran_args
// (presets left out), beside args as they reached Audit; a call left as
// it was has no ran_args. Before, the line held only the arguments as they
// reached Audit.
func TestAuditLogsArgumentsTheToolRanWith(t *testing.T) {
	buf := &auditBuf{}
	wrote := make(chan string, 16)
	tk := icKit(t, nil, interceptors.Audit(zerolog.New(buf), interceptors.AuditArgs()), confine())
	testutil.Add(t, tk, writeTool(t, wrote))
	testutil.Run(t, tk, "s", testutil.Call("moved", "write", `{"path":"/etc/hosts"}`),
		testutil.Call("kept", "write", `{"path":"/home/a"}`), testutil.Call("denied", "write", `{"path":"deny"}`))
	byCall := map[string]map[string]any{}
	for _, l := range buf.lines(t) {
		byCall[l["call"].(string)] = l
	}
	moved := byCall["moved"]
	args, _ := moved["args"].(map[string]any)
	ran, _ := moved["ran_args"].(map[string]any)
	if args["path"] != "/etc/hosts" || ran["path"] != "/tmp/hosts" || len(ran) != 1 {
		t.Fatalf("moved: %v, want args with /etc/hosts and ran_args {path: /tmp/hosts} only", moved)
	}
	for _, call := range []string{"kept", "denied"} {
		if _, ok := byCall[call]["ran_args"]; ok || byCall[call] == nil {
			t.Fatalf("%s: %v, want a line without ran_args", call, byCall[call])
		}
	}
}

// TestArgsEventRecordsAliasedArguments: an Unknown interceptor that points
// a call of a renamed tool at the new one and renames an argument on the
// way makes an args event with the arguments the new tool ran with; an
// alias that keeps the model's arguments makes none.
func TestArgsEventRecordsAliasedArguments(t *testing.T) {
	bus := natstest.Bus(t)
	w := watchWire(t, bus)
	wrote := make(chan string, 16)
	var tk *toolkit.Toolkit
	alias := toolkit.Interceptor{Name: "alias", Unknown: true,
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
			if inv.Unknown() && inv.Call.Name == "old_write" {
				inv.Tool, _ = tk.Tool("write")
				var in struct {
					File string `json:"file"`
				}
				if json.Unmarshal(inv.Call.Args, &in) == nil && in.File != "" {
					inv.Call.Args, _ = json.Marshal(map[string]string{"path": in.File})
				}
			}
			return next(ctx, inv)
		}}
	tk = icKit(t, []toolkit.Option{toolkit.WithInlineObserver(bus.Publisher())}, alias)
	testutil.Add(t, tk, writeTool(t, wrote))
	rs := testutil.Run(t, tk, "s",
		testutil.Call("renamed", "old_write", `{"file":"/tmp/r"}`),
		testutil.Call("same", "old_write", `{"path":"/tmp/s"}`))
	w.wait(t, 2)
	if rs[0].Text() != "wrote /tmp/r" || rs[1].Text() != "wrote /tmp/s" {
		t.Fatalf("results %q, %q", rs[0].Text(), rs[1].Text())
	}
	if got, types := w.args(t, "renamed"); len(got) != 1 || string(got[0].Args) != `{"path":"/tmp/r"}` {
		t.Fatalf("renamed: args events %+v (events %v), want one with {\"path\":\"/tmp/r\"}", got, types)
	}
	if got, types := w.args(t, "same"); len(got) != 0 {
		t.Fatalf("same: args events %+v (events %v), want none", got, types)
	}
}
