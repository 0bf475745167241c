package interceptors_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// TestDangerousFilesShellQuoting: in a command argument, a word is read as
// the shell reads it too, its quotes and backslashes removed: `.e”nv`,
// `.s"s"h` and `.e\nv` are .env and .ssh to sh. The words were split at
// the quotes and checked in pieces (".e", "nv"), none of them dangerous.
func TestDangerousFilesShellQuoting(t *testing.T) {
	for _, args := range []string{
		`{"command":"cat ~/.s's'h/id_rsa"}`,
		`{"command":"cat .e\"\"nv"}`,
		`{"command":"cat .e\\nv"}`,
		`{"cmd":"vim ~/.ba''shrc"}`,
		`{"script":"cp x .g\"i\"t/hooks/pre-commit"}`,
		`{"command":"cat 'my dir'/.e'nv'"}`,
		`{"command":"echo x >> ~/.z\\shrc"}`,
	} {
		if !dangerous(t, args) {
			t.Errorf("%s: not dangerous", args)
		}
	}
	// Through Permissions, whose shortcut skips decoding arguments that
	// cannot name a dangerous file: it must not skip these.
	perms := interceptors.NewPermissions(interceptors.WithMode(interceptors.AllowAll),
		interceptors.WithRules(interceptors.DangerousFiles()...), interceptors.WithApprovalTimeout(time.Millisecond))
	tk := icKit(t, nil, perms.Interceptor())
	tk.Add(icTool(t, toolkit.Spec{Name: "run"}, func(context.Context) (string, error) { return "ran", nil }))
	s, _ := tk.Session("s")
	for i, args := range []string{`{"command":"cat .e''nv"}`, `{"cmd":"cat .e\"\"nv"}`, `{"script":"cat .e\\nv"}`} {
		r := icRun(t, s, toolkit.Call{ID: string(rune('a' + i)), Name: "run", Args: json.RawMessage(args)})
		if !errors.Is(r.Err, interceptors.ErrNoDecision) {
			t.Errorf("%s through Permissions: %s %q, want asked (and no decision)", args, r.State, r.Text())
		}
	}
	for _, args := range []string{
		`{"command":"echo 'env is set'"}`,
		`{"command":"grep -r \"ssh\" docs/"}`,
		`{"command":"ls -la notes"}`,
	} {
		if dangerous(t, args) {
			t.Errorf("%s: dangerous", args)
		}
	}
}
