package mcpbridge_test

import (
	"strings"
	"testing"

	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/mcpbridge"
)

// TestClientTrustHintsPerServer connects two servers that both say their
// echo tool is read-only to one toolkit, trusting the hints of one only
// (TrustHints on its Connect): under a permission mode that lets only
// read-only tools run, the trusted server's tool runs and the untrusted
// one's is denied, its readOnlyHint ignored though Client.Tools still shows it.
func TestClientTrustHintsPerServer(t *testing.T) {
	tk := testutil.Kit(t)
	perms := interceptors.NewPermissions(interceptors.WithMode(interceptors.StrictReadOnly))
	tk.Use(perms.Interceptor())
	trusted := connect(t, tk, "ours", newTestServer(t).endpoint(), mcpbridge.TrustHints())
	untrusted := connect(t, tk, "theirs", newTestServer(t).endpoint())

	for _, c := range []*mcpbridge.Client{trusted, untrusted} {
		for _, ti := range c.Tools() {
			if ti.Tool == "echo" && (ti.Annotations == nil || !ti.Annotations.ReadOnlyHint) {
				t.Errorf("%s: the hints as sent should stay visible: %+v", c.Name(), ti.Annotations)
			}
		}
	}
	if tl, _ := tk.Tool("mcp__ours__echo"); !tl.Spec().ReadOnly || !tl.Spec().ConcurrencySafe {
		t.Errorf("trusted server's echo: ReadOnly %v ConcurrencySafe %v", tl.Spec().ReadOnly, tl.Spec().ConcurrencySafe)
	}
	if tl, _ := tk.Tool("mcp__theirs__echo"); tl.Spec().ReadOnly || tl.Spec().ConcurrencySafe {
		t.Errorf("untrusted server's echo: ReadOnly %v ConcurrencySafe %v", tl.Spec().ReadOnly, tl.Spec().ConcurrencySafe)
	}

	res := testutil.Run(t, tk, "s",
		testutil.Call("ours", "mcp__ours__echo", `{"text":"a"}`),
		testutil.Call("theirs", "mcp__theirs__echo", `{"text":"b"}`),
	)
	if r := testutil.ResultByID(res, "ours"); r.IsError() || r.Text() != "echo: a" {
		t.Errorf("trusted read-only tool under StrictReadOnly: %v %q", r.State, r.Text())
	}
	if r := testutil.ResultByID(res, "theirs"); !r.IsError() || !strings.Contains(r.Text(), "mcp__theirs__echo") {
		t.Errorf("untrusted tool under StrictReadOnly should be denied: %v %q", r.State, r.Text())
	}
}
