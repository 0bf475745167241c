package interceptors_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// askAbout runs one call through a session and reports whether a person
// was asked to approve it (the call waited for approval; it is rejected
// then, so that the test never waits for the approval's timeout).
func askAbout(t *testing.T, tk *toolkit.Toolkit, perms *interceptors.Permissions, session string, c toolkit.Call, approve bool) (toolkit.Result, bool) {
	t.Helper()
	s, err := tk.Session(session)
	if err != nil {
		t.Fatal(err)
	}
	asked := false
	b := s.Start(context.Background(), []toolkit.Call{c})
	for r := range b.Results() {
		if r.Final() {
			continue
		}
		asked = true
		if p := perms.Pending(session); len(p) != 1 || p[0].CallID != c.ID {
			t.Fatalf("pending %+v", p)
		}
		if approve {
			err = perms.Approve(session, c.ID)
		} else {
			err = perms.Reject(session, c.ID, "the test says no")
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return b.Wait()[0], asked
}

// TestPermissionsUnknownToolNotAsked: Permissions installed with Unknown set
// sees calls of tools nobody registered. A call that certainly cannot run
// (no resolver supplied a tool, and no Unknown interceptor inside
// Permissions may answer it or point it at one) is not put to a person, who
// would spend time approving a call that fails anyway: the model gets the
// unknown-tool answer at once. Where an inner Unknown interceptor may make
// it run (an alias, a proxy), the person is still asked, since Permissions
// is then the only check the call goes through.
func TestPermissionsUnknownToolNotAsked(t *testing.T) {
	del := toolkit.MustTool(toolkit.Spec{Name: "delete_files"}, func(ctx context.Context, in struct {
		Path string `json:"path"`
	}) (string, error) {
		return "deleted " + in.Path, nil
	})
	nobody := toolkit.WithToolResolver(func(context.Context, *toolkit.Session, toolkit.Call) (*toolkit.Tool, error) { return nil, nil })
	newPerms := func() (*interceptors.Permissions, toolkit.Interceptor) {
		p := interceptors.NewPermissions(interceptors.WithMode(interceptors.AskAll), interceptors.WithApprovalTimeout(time.Minute))
		ic := p.Interceptor()
		ic.Unknown = true
		return p, ic
	}
	call := toolkit.Call{ID: "c1", Name: "delete_everything", Args: json.RawMessage(`{"path":"/"}`)}

	for _, opts := range [][]toolkit.Option{nil, {nobody}} {
		perms, ic := newPerms()
		tk := icKit(t, opts, ic)
		tk.Add(del)
		r, asked := askAbout(t, tk, perms, "s", call, false)
		if asked {
			t.Errorf("resolver %v: a person was asked to approve a call of a tool that does not exist", opts != nil)
		}
		if r.State != events.StateError || !isErr[*toolkit.UnknownToolError](r.Err) || !strings.Contains(r.Text(), `unknown tool "delete_everything"`) {
			t.Errorf("resolver %v: %s %v %q, want the unknown-tool answer", opts != nil, r.State, r.Err, r.Text())
		}
		// A known tool is still asked about.
		if _, asked := askAbout(t, tk, perms, "s", toolkit.Call{ID: "c2", Name: "delete_files", Args: json.RawMessage(`{"path":"x"}`)}, false); !asked {
			t.Errorf("resolver %v: a known tool was not asked about", opts != nil)
		}
	}

	// An Unknown interceptor inside Permissions may make the call run: ask.
	perms, ic := newPerms()
	alias := toolkit.Interceptor{Name: "aliases", Unknown: true,
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
			if inv.Unknown() && inv.Call.Name == "delete_everything" {
				inv.Tool = del
			}
			return next(ctx, inv)
		}}
	tk := icKit(t, nil, ic, alias)
	tk.Add(del)
	r, asked := askAbout(t, tk, perms, "s", call, true)
	if !asked || r.State != events.StateSuccess || r.Text() != "deleted /" {
		t.Errorf("aliased inside Permissions: asked %v, %s %q", asked, r.State, r.Text())
	}
	// An alias outside it: Permissions sees the tool that runs, and asks.
	perms, ic = newPerms()
	tk = icKit(t, nil, alias, ic)
	tk.Add(del)
	if r, asked := askAbout(t, tk, perms, "s", call, true); !asked || r.Text() != "deleted /" {
		t.Errorf("aliased outside Permissions: asked %v, %s %q", asked, r.State, r.Text())
	}
}
