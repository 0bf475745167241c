package interceptors_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

func TestPermissionModesReadHints(t *testing.T) {
	specs := []toolkit.Spec{
		{Name: "read", ReadOnly: true},
		{Name: "append", Destructive: new(false)},
		{Name: "delete"},                            // nothing declared: destructive, as in MCP
		{Name: "overwrite", Destructive: new(true)}, // declared
	}
	cases := []struct {
		mode interceptors.Mode
		name string
		want map[string]events.State
	}{
		{interceptors.StrictReadOnly, "StrictReadOnly", map[string]events.State{
			"read": events.StateSuccess, "append": events.StateDenied, "delete": events.StateDenied, "overwrite": events.StateDenied}},
		{interceptors.AskDestructive, "AskDestructive", map[string]events.State{
			"read": events.StateSuccess, "append": events.StateSuccess, "delete": events.StateDenied, "overwrite": events.StateDenied}},
	}
	for _, c := range cases {
		perms := interceptors.NewPermissions(interceptors.WithMode(c.mode), interceptors.WithApprovalTimeout(20*time.Millisecond))
		tk := icKit(t, nil, perms.Interceptor())
		ran := map[string]bool{}
		for _, s := range specs {
			testutil.Add(t, tk, icTool(t, s, func(ctx context.Context) (string, error) {
				c, _ := toolkit.CallInfoFrom(ctx)
				ran[c.Tool] = true
				return "done", nil
			}))
		}
		sess := testutil.Session(t, tk, "s")
		for _, s := range specs {
			r := icRun(t, sess, testutil.Call("c-"+s.Name, s.Name, `{}`))
			if want := c.want[s.Name]; r.State != want || ran[s.Name] != (want == events.StateSuccess) {
				t.Errorf("%s, %s: %s %q (ran %v), want %s", c.name, s.Name, r.State, r.Text(), ran[s.Name], want)
			}
			if r.State != events.StateDenied {
				continue
			}
			// Strict denies at once; AskDestructive asked, and nobody answered.
			asked := errors.Is(r.Err, interceptors.ErrNoDecision)
			if asked != (c.name == "AskDestructive") {
				t.Errorf("%s, %s: %v: asked = %v", c.name, s.Name, r.Err, asked)
			}
			why := "it is not read-only" // as before for tools that declare nothing
			if s.Name == "overwrite" {
				why = "it is declared destructive"
			}
			if !asked && !strings.Contains(r.Text(), why) {
				t.Errorf("%s, %s: the reason does not say why: %q", c.name, s.Name, r.Text())
			}
		}
	}
}

// timeoutErr looks like a network timeout: IsTransient says true.
type timeoutErr struct{}

func (timeoutErr) Error() string { return "i/o timeout" }
func (timeoutErr) Timeout() bool { return true }

func TestRetryHonoursIdempotentHint(t *testing.T) {
	cases := []struct {
		name string
		spec toolkit.Spec
		err  error
		runs int
	}{
		{"nothing declared, timeout: as before", toolkit.Spec{}, timeoutErr{}, 3},
		{"idempotent, timeout", toolkit.Spec{Idempotent: new(true)}, timeoutErr{}, 3},
		{"read-only, timeout", toolkit.Spec{ReadOnly: true, Idempotent: new(false)}, timeoutErr{}, 3},
		{"not idempotent, timeout: may have done the work", toolkit.Spec{Idempotent: new(false)}, timeoutErr{}, 1},
		{"not idempotent, marked by the tool", toolkit.Spec{Idempotent: new(false)}, interceptors.Transient(errors.New("busy, nothing done")), 3},
	}
	for _, c := range cases {
		noSleep := interceptors.RetrySleep(func(context.Context, time.Duration) error { return nil })
		tk := icKit(t, nil, interceptors.Retry(noSleep))
		var n icCounter
		c.spec.Name = "send"
		testutil.Add(t, tk, icTool(t, c.spec, func(context.Context) (string, error) {
			n.inc()
			return "", c.err
		}))
		r := icRun(t, testutil.Session(t, tk, "s"), testutil.Call("c1", "send", `{}`))
		if r.State != events.StateError || n.get() != c.runs {
			t.Errorf("%s: %s, ran %d times, want %d", c.name, r.State, n.get(), c.runs)
		}
	}
}
