package interceptors_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// dangerous reports whether the DangerousFiles rule matches args.
func dangerous(t *testing.T, args string) bool {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(args), &m); err != nil {
		t.Fatalf("%s: %v", args, err)
	}
	rules := interceptors.DangerousFiles()
	if len(rules) != 1 || !rules[0].Firm || rules[0].Decision != interceptors.Ask || rules[0].Tool != "" {
		t.Fatalf("rules %+v: want one firm ask for every tool", rules)
	}
	return rules[0].When(m)
}

// TestDangerousFilesHostileSpellings: every spelling that opens a
// dangerous file somewhere (another case, backslashes, "..", Windows'
// trailing dots and streams, a NUL, nested arguments, inside a command)
// is caught; ordinary paths and prose are not.
func TestDangerousFilesHostileSpellings(t *testing.T) {
	for args, want := range map[string]string{
		`{"path":".env"}`:                                         "secrets",
		`{"path":".ENV"}`:                                         "secrets",
		`{"path":"./app/.env.local"}`:                             "secrets",
		`{"path":"config\\.env"}`:                                 "secrets",
		`{"path":"./a/../.env"}`:                                  "secrets",
		`{"path":"notes/../.Env"}`:                                "secrets",
		`{"path":".env."}`:                                        "secrets",
		`{"path":".env .."}`:                                      "secrets",
		`{"path":".env::$DATA"}`:                                  "secrets",
		`{"path":"a/.env\u0000.txt"}`:                             "secrets",
		`{"file":"/home/u/.netrc"}`:                               "secrets",
		`{"path":"/home/u/.aws/credentials"}`:                     "secrets",
		`{"path":"/home/u/.aws/config"}`:                          "cloud",
		`{"path":"~/.ssh/id_rsa"}`:                                "key",
		`{"path":"C:\\Users\\me\\.SSH\\config"}`:                  "cloud",
		`{"path":"keys/server.PEM"}`:                              "key",
		`{"path":"tls/site.key"}`:                                 "key",
		`{"path":"id_ed25519"}`:                                   "key",
		`{"path":"backup/id_rsa.old"}`:                            "key",
		`{"path":"repo/.git/hooks/pre-commit"}`:                   "git",
		`{"path":"repo/.GIT/config"}`:                             "git",
		`{"path":".git"}`:                                         "git",
		`{"path":".git/"}`:                                        "git",
		`{"dir":"x/.git/.."}`:                                     "git",
		`{"path":"/root/.gitconfig"}`:                             "git",
		`{"path":"~/.bashrc"}`:                                    "shell",
		`{"path":"/home/u/.ZSHRC"}`:                               "shell",
		`{"path":".profile"}`:                                     "shell",
		`{"path":"/home/u/.config/fish/config.fish"}`:             "shell",
		`{"path":".vscode/tasks.json"}`:                           "editor",
		`{"path":".idea\\workspace.xml"}`:                         "editor",
		`{"command":"cat ~/.ssh/id_rsa"}`:                         "key",
		`{"command":"echo x>>~/.zshrc"}`:                          "shell",
		`{"cmd":"cp a .git/hooks/pre-commit"}`:                    "git",
		`{"script":"source .env;run"}`:                            "secrets",
		`{"command":"tool --config=.env"}`:                        "secrets",
		`{"files":[{"name":"secrets/.env"}]}`:                     "secrets",
		`{"title":".bashrc"}`:                                     "shell",
		`{"paths":["ok.txt","x/.npmrc"]}`:                         "secrets",
		`{"path":"notes/a.md"}`:                                   "",
		`{"path":".environment"}`:                                 "",
		`{"path":".gitignore"}`:                                   "",
		`{"path":"envs/dev.yaml"}`:                                "",
		`{"path":"keyboard.md"}`:                                  "",
		`{"path":"docs/ssh.md"}`:                                  "",
		`{"text":"remember to edit your .bashrc and .env later"}`: "",
		`{"command":"ls -la notes"}`:                              "",
		`{"limit":5,"path":"profile.txt"}`:                        "",
	} {
		if got := dangerous(t, args); got != (want != "") {
			t.Errorf("%s: dangerous %v, want %v", args, got, want != "")
		}
		// A single path: DangerousPath says which kind.
		var m map[string]any
		json.Unmarshal([]byte(args), &m)
		if p, ok := m["path"].(string); ok && len(m) == 1 {
			reason, bad := interceptors.DangerousPath(p)
			words := map[string]string{"secrets": "secrets", "key": "private key", "cloud": "cloud credentials", "git": "git's own files", "shell": "shell startup", "editor": "editor"}
			if bad != (want != "") || want != "" && !strings.Contains(reason, words[want]) {
				t.Errorf("DangerousPath(%q): %v %q, want %s", p, bad, reason, want)
			}
		}
	}
	if r, ok := interceptors.DangerousPath(`C:\Users\ME\.Ssh\id_ed25519`); !ok || r == "" {
		t.Errorf("DangerousPath: %v %q", ok, r)
	}
	if _, ok := interceptors.DangerousPath("notes/ssh-keys.md"); ok {
		t.Error("DangerousPath: notes/ssh-keys.md")
	}
}

// TestDangerousFilesAskEveryTime: the presets ask even for a read-only
// tool under AllowAll, after the person allowed the tool for the session,
// and when the tool's own check allows; their requests offer no
// suggestions (nothing could silence them).
func TestDangerousFilesAskEveryTime(t *testing.T) {
	f := suggestFixture(t, interceptors.WithMode(interceptors.AllowAll), interceptors.WithRules(
		append([]interceptors.Rule{{Tool: "write", Decision: interceptors.Allow}}, interceptors.DangerousFiles()...)...))
	f.tk.Add(toolkit.MustTool(toolkit.Spec{Name: "read_file", ReadOnly: true, ConcurrencySafe: true,
		CheckPermission: func(context.Context, json.RawMessage) toolkit.Permission {
			return toolkit.Permission{Decision: toolkit.PermissionAllow, Reason: "reading is harmless"}
		}}, func(ctx context.Context, in struct {
		Path string `json:"path"`
	}) (string, error) {
		return "secret=1", nil
	}))
	if asked, r := f.outcome(t, "s", permCall("r0", "read_file", `{"path":"README.md"}`), nil); asked || r.State != events.StateSuccess {
		t.Fatalf("ordinary read: asked %v %s", asked, r.State)
	}
	asked, r := f.outcome(t, "s", permCall("r1", "read_file", `{"path":"./.ENV"}`), func(req interceptors.ApprovalRequest) {
		if len(req.Suggestions) != 0 || !strings.Contains(req.Reason, "secrets") {
			t.Errorf("request %+v", req)
		}
		if err := f.perms.Approve(req.Session, req.CallID, interceptors.AlwaysAllow()); err != nil {
			t.Fatal(err)
		}
	})
	if !asked || r.State != events.StateSuccess {
		t.Fatalf("first read of .env: asked %v %s", asked, r.State)
	}
	// The "always" grant holds for ordinary reads, never for .env.
	if asked, _ := f.outcome(t, "s", permCall("r2", "read_file", `{"path":".env"}`), nil); !asked {
		t.Error("a grant silenced a dangerous-file rule")
	}
	// Spelled with JSON escapes, or with a Kelvin sign that lower-cases to k.
	for _, args := range []string{`{"path":"\u002eenv"}`, `{"path":"tls/server.\u212aey"}`, `{"path":"tls/server.` + "\u212a" + `ey"}`, `{"path":"A\\.GiT\\config"}`} {
		if asked, _ := f.outcome(t, "s", permCall("esc", "read_file", args), nil); !asked {
			t.Errorf("%s: read without a request", args)
		}
	}
	// An earlier allow rule for write does not skip them either.
	if asked, _ := f.outcome(t, "s", permCall("w", "write", `{"path":"/home/u/.bashrc"}`), nil); !asked {
		t.Error("an allow rule listed before the presets let .bashrc be written")
	}
	if len(f.writes()) != 0 {
		t.Errorf("writes %v", f.writes())
	}
}

// TestToolOwnPermissionCheck: a tool's own check is consulted first and
// sees exactly the arguments the handler receives, in every shape; its
// deny is final, its ask asks (with its reason), its allow beats the mode
// but not a deny rule.
func TestToolOwnPermissionCheck(t *testing.T) {
	perm := interceptors.NewPermissions(interceptors.WithMode(interceptors.DenyAll),
		interceptors.WithRules(
			interceptors.Rule{Tool: "read_file", When: func(a map[string]any) bool { return a["path"] == "/etc/shadow" || a["path"] == "/tmp/secret" }, Decision: interceptors.Deny},
			interceptors.Rule{Tool: "read_file", Decision: interceptors.Allow}, // the check's Deny beats it
		))
	seenByCheck := map[string]json.RawMessage{}
	var handlerGot *readIn
	tk := icKit(t, nil, perm.Interceptor())
	tool, err := toolkit.NewTool(toolkit.Spec{Name: "read_file", ReadOnly: true, Presets: map[string]any{"owner": "ops"},
		CheckPermission: func(ctx context.Context, args json.RawMessage) toolkit.Permission {
			info, _ := toolkit.CallInfoFrom(ctx)
			seenByCheck[info.CallID] = args
			var in readIn
			json.Unmarshal(args, &in)
			switch {
			case in.Path == "/etc/passwd" && in.Owner == "ops" && in.Mode == "read":
				return toolkit.Permission{Decision: toolkit.PermissionDeny, Reason: "read_file: /etc is off limits for ops"}
			case strings.HasPrefix(in.Path, "/tmp/"):
				return toolkit.Permission{Decision: toolkit.PermissionAllow}
			}
			return toolkit.Permission{}
		}},
		func(ctx context.Context, in readIn) (string, error) {
			handlerGot = &in
			return "read " + in.Path, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Add(t, tk, tool)
	s := testutil.Session(t, tk, "s")
	for _, shape := range argShapes {
		r := icRun(t, s, testutil.Call(shape.name, "read_file", shape.args))
		if r.State != events.StateDenied || !errors.Is(r.Err, interceptors.ErrDenied) || !strings.Contains(r.Text(), "/etc is off limits for ops") {
			t.Errorf("%s: %s %q, want the check's deny", shape.name, r.State, r.Text())
		}
		var got readIn
		if err := json.Unmarshal(seenByCheck[shape.name], &got); err != nil || got != wantArgs {
			t.Errorf("%s: the check saw %s, want %+v", shape.name, seenByCheck[shape.name], wantArgs)
		}
	}
	if handlerGot != nil {
		t.Fatal("a denied call ran")
	}
	// The check's allow beats DenyAll ...
	if r := icRun(t, s, testutil.Call("tmp", "read_file", `{"path":"/tmp/x","limit":1}`)); r.State != events.StateSuccess {
		t.Errorf("allowed by the check: %s %q", r.State, r.Text())
	}
	// ... and the handler got what the check saw.
	var checkSaw readIn
	if err := json.Unmarshal(seenByCheck["tmp"], &checkSaw); err != nil || handlerGot == nil || checkSaw != *handlerGot ||
		checkSaw != (readIn{Path: "/tmp/x", Mode: "read", Limit: 1, Owner: "ops"}) {
		t.Errorf("check saw %s, handler got %+v", seenByCheck["tmp"], handlerGot)
	}
	// No opinion: the rules decide (allow here), and a deny rule the check
	// does not know about still denies.
	if r := icRun(t, s, testutil.Call("pass", "read_file", `{"path":"/srv/x","limit":1}`)); r.State != events.StateSuccess {
		t.Errorf("pass then allow rule: %s %q", r.State, r.Text())
	}
	if r := icRun(t, s, testutil.Call("shadow", "read_file", `{"path":"/etc/shadow","limit":1}`)); r.State != events.StateDenied {
		t.Errorf("deny rule: %s %q", r.State, r.Text())
	}
	// The check's allow does not lift a deny rule.
	if r := icRun(t, s, testutil.Call("secret", "read_file", `{"path":"/tmp/secret","limit":1}`)); r.State != events.StateDenied {
		t.Errorf("check allows, deny rule: %s %q", r.State, r.Text())
	}
}

// TestToolOwnCheckAsks: the check's ask suspends the call with its
// reason and the usual suggestions; a grant the person accepts silences
// the check's later asks for the calls it covers.
func TestToolOwnCheckAsks(t *testing.T) {
	f := suggestFixture(t, interceptors.WithMode(interceptors.AllowAll))
	f.tk.Add(toolkit.MustTool(toolkit.Spec{Name: "delete", ConcurrencySafe: true,
		CheckPermission: func(_ context.Context, args json.RawMessage) toolkit.Permission {
			var in struct{ Count int }
			json.Unmarshal(args, &in)
			if in.Count > 10 {
				return toolkit.Permission{Decision: toolkit.PermissionAsk, Reason: "deleting more than 10 files"}
			}
			return toolkit.Permission{}
		}}, func(ctx context.Context, in struct {
		Count int `json:"count"`
	}) (string, error) {
		return "deleted", nil
	}))
	if asked, r := f.outcome(t, "s", permCall("d1", "delete", `{"count":3}`), nil); asked || r.State != events.StateSuccess {
		t.Fatalf("small delete: asked %v %s", asked, r.State)
	}
	asked, r := f.outcome(t, "s", permCall("d2", "delete", `{"count":50}`), func(req interceptors.ApprovalRequest) {
		if req.Reason != "deleting more than 10 files" || len(req.Suggestions) == 0 {
			t.Errorf("request %+v", req)
		}
		f.perms.Approve(req.Session, req.CallID, interceptors.WithSuggestion(suggestionByPrefix(t, req, "args-").ID))
	})
	if !asked || r.State != events.StateSuccess {
		t.Fatalf("big delete: asked %v %s", asked, r.State)
	}
	if asked, _ := f.outcome(t, "s", permCall("d3", "delete", `{"count":50}`), nil); asked {
		t.Error("the accepted exact-call rule did not hold")
	}
	if asked, _ := f.outcome(t, "s", permCall("d4", "delete", `{"count":51}`), nil); !asked {
		t.Error("the exact-call rule covered other arguments")
	}
}
