package interceptors_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// suggestFixture is permFixture with two more tools: "copy" (two paths)
// and "run" (a command).
func suggestFixture(t *testing.T, opts ...interceptors.PermissionOption) *permFixture {
	t.Helper()
	f := newPermFixture(t, opts...)
	f.tk.Add(toolkit.MustTool(toolkit.Spec{Name: "copy", ConcurrencySafe: true}, func(ctx context.Context, in struct {
		Src string `json:"src"`
		Dst string `json:"dst"`
	}) (string, error) {
		return "copied", nil
	}))
	f.tk.Add(toolkit.MustTool(toolkit.Spec{Name: "run", ConcurrencySafe: true}, func(ctx context.Context, in struct {
		Command string `json:"command"`
		Timeout int    `json:"timeout,omitempty"`
	}) (string, error) {
		return "ran " + in.Command, nil
	}))
	return f
}

// outcome runs one call and answers a request it makes with answer (or
// rejects it); it reports whether the call asked and its result.
func (f *permFixture) outcome(t *testing.T, session string, c toolkit.Call, answer func(interceptors.ApprovalRequest)) (asked bool, r toolkit.Result) {
	t.Helper()
	run := f.start(session, c)
	select {
	case <-run.Done():
		return false, run.Wait()[0]
	case req := <-f.asks:
		if req.CallID != c.ID {
			t.Fatalf("request for %q while %q ran", req.CallID, c.ID)
		}
		if answer == nil {
			if err := f.perms.Reject(req.Session, req.CallID, "test: not this one"); err != nil {
				t.Fatal(err)
			}
		} else {
			answer(req)
		}
		return true, run.Wait()[0]
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: neither a result nor a request", c.ID)
		return false, toolkit.Result{}
	}
}

func suggestionByPrefix(t *testing.T, req interceptors.ApprovalRequest, prefix string) interceptors.Suggestion {
	t.Helper()
	for _, s := range req.Suggestions {
		if strings.HasPrefix(s.ID, prefix) {
			return s
		}
	}
	t.Fatalf("no %q suggestion in %+v", prefix, req.Suggestions)
	return interceptors.Suggestion{}
}

// TestSuggestedPathRule: accepting "allow write on paths under ./notes"
// lets later writes inside ./notes run without a request; every path that
// only looks like it is inside (../, a sibling with the same prefix, a
// backslash, another case, an absolute path, a NUL) still asks, and so
// does another tool and another session.
func TestSuggestedPathRule(t *testing.T) {
	f := suggestFixture(t)
	asked, r := f.outcome(t, "s", permCall("w1", "write", `{"path":"./notes/a.md"}`), func(req interceptors.ApprovalRequest) {
		var labels []string
		for _, s := range req.Suggestions {
			labels = append(labels, s.Label)
		}
		want := []string{
			"Allow write again with exactly these arguments",
			"Allow write on paths under ./notes in this session",
			"Always allow write in this session",
		}
		if !slices.Equal(labels, want) {
			t.Errorf("labels %q, want %q", labels, want)
		}
		s := suggestionByPrefix(t, req, "path-")
		if s.Grant.Tool != "write" || s.Grant.Under != "notes" || s.Grant.Args != nil {
			t.Errorf("grant %+v", s.Grant)
		}
		if err := f.perms.Approve(req.Session, req.CallID, interceptors.WithSuggestion(s.ID)); err != nil {
			t.Fatal(err)
		}
	})
	if !asked || r.State != events.StateSuccess {
		t.Fatalf("first write: asked %v, %s %q", asked, r.State, r.Text())
	}
	for _, p := range []string{"notes/b.md", "./notes/sub/c.md", "notes//d.md", "./notes/./e.md", "notes/x/../f.md", "notes"} {
		args, _ := json.Marshal(map[string]string{"path": p})
		if asked, r := f.outcome(t, "s", permCall("ok", "write", string(args)), nil); asked || r.State != events.StateSuccess {
			t.Errorf("%q: asked %v, %s %q; want it allowed by the rule", p, asked, r.State, r.Text())
		}
	}
	for _, p := range []string{
		"./notes/../etc/passwd", "notes/../../etc/passwd", "./notes-evil/x", "notes-evil", "notesx/a",
		`notes\..\..\etc\passwd`, `notes\a.md`, "Notes/a.md", "NOTES/a.md", "/notes/a.md", "/etc/notes/a.md",
		"~/notes/a.md", "notes/a.md\x00", "other/notes/a.md", "./notes/sub/../../x", "",
	} {
		args, _ := json.Marshal(map[string]string{"path": p})
		if asked, r := f.outcome(t, "s", permCall("hostile", "write", string(args)), nil); !asked || r.State != events.StateDenied {
			t.Errorf("%q: asked %v, %s %q; want a request", p, asked, r.State, r.Text())
		}
	}
	if asked, _ := f.outcome(t, "other", permCall("o", "write", `{"path":"notes/a.md"}`), nil); !asked {
		t.Error("the rule of session s allowed a call in session other")
	}
	if asked, _ := f.outcome(t, "s", permCall("c", "copy", `{"src":"notes/a","dst":"notes/b"}`), nil); !asked {
		t.Error("the rule for write allowed copy")
	}
	if w := f.writes(); len(w) != 7 {
		t.Errorf("writes %q, want the first and the six allowed ones", w)
	}
}

// TestSuggestedPathRuleCoversEveryPath: a path rule holds only when every
// path argument is inside the folder: copying from /etc into ./notes asks.
func TestSuggestedPathRuleCoversEveryPath(t *testing.T) {
	f := suggestFixture(t)
	f.outcome(t, "s", permCall("c1", "copy", `{"src":"notes/a","dst":"notes/sub/b"}`), func(req interceptors.ApprovalRequest) {
		s := suggestionByPrefix(t, req, "path-")
		if s.Label != "Allow copy on paths under ./notes in this session" {
			t.Errorf("label %q", s.Label)
		}
		f.perms.Approve(req.Session, req.CallID, interceptors.WithSuggestion(s.ID))
	})
	if asked, r := f.outcome(t, "s", permCall("c2", "copy", `{"src":"notes/x","dst":"notes/y"}`), nil); asked || r.State != events.StateSuccess {
		t.Errorf("inside: asked %v %s", asked, r.State)
	}
	for _, args := range []string{`{"src":"/etc/passwd","dst":"notes/y"}`, `{"src":"notes/x","dst":"../y"}`, `{"src":"notes/x","dst":""}`} {
		if asked, _ := f.outcome(t, "s", permCall("c3", "copy", args), nil); !asked {
			t.Errorf("%s: allowed without a request", args)
		}
	}
}

// TestSuggestedExactCommand: "allow this exact command" covers the same
// arguments in any spelling, and nothing else.
func TestSuggestedExactCommand(t *testing.T) {
	f := suggestFixture(t)
	f.outcome(t, "s", permCall("r1", "run", `{"command":"ls -la","timeout":5}`), func(req interceptors.ApprovalRequest) {
		s := suggestionByPrefix(t, req, "args-")
		if s.Label != "Allow this exact command for run: ls -la" {
			t.Errorf("label %q", s.Label)
		}
		if slices.ContainsFunc(req.Suggestions, func(s interceptors.Suggestion) bool { return strings.HasPrefix(s.ID, "path-") }) {
			t.Errorf("a path suggestion for a command: %+v", req.Suggestions)
		}
		f.perms.Approve(req.Session, req.CallID, interceptors.WithSuggestion(s.ID))
	})
	for _, args := range []string{`{"command":"ls -la","timeout":5}`, `{ "timeout": 5, "command": "ls -la" }`, `"{\"command\":\"ls -la\",\"timeout\":5}"`} {
		if asked, r := f.outcome(t, "s", permCall("same", "run", args), nil); asked || r.State != events.StateSuccess {
			t.Errorf("%s: asked %v %s", args, asked, r.State)
		}
	}
	for _, args := range []string{`{"command":"ls -la; rm -rf /","timeout":5}`, `{"command":"ls -la"}`, `{"command":"ls -la","timeout":6}`, `{"command":"ls  -la","timeout":5}`} {
		if asked, _ := f.outcome(t, "s", permCall("other", "run", args), nil); !asked {
			t.Errorf("%s: allowed without a request", args)
		}
	}
}

// TestUnknownSuggestion: an id the request did not offer is a clear error,
// and the call still waits for a decision.
func TestUnknownSuggestion(t *testing.T) {
	f := suggestFixture(t)
	asked, r := f.outcome(t, "s", permCall("w", "write", `{"path":"notes/a"}`), func(req interceptors.ApprovalRequest) {
		err := f.perms.Approve(req.Session, req.CallID, interceptors.WithSuggestion("path-000000000000"))
		if !errors.Is(err, interceptors.ErrUnknownSuggestion) || !strings.Contains(err.Error(), "Always allow write in this session") ||
			!strings.Contains(err.Error(), "still waits") {
			t.Fatalf("error %v", err)
		}
		if p := f.perms.Pending("s"); len(p) != 1 {
			t.Fatalf("pending after a bad id: %+v", p)
		}
		if err := f.perms.Approve(req.Session, req.CallID, interceptors.WithSuggestion(req.Suggestions[0].ID)); err != nil {
			t.Fatal(err)
		}
	})
	if !asked || r.State != events.StateSuccess {
		t.Fatalf("asked %v %s %q", asked, r.State, r.Text())
	}
}

// TestSuggestionsAreStable: the same call gets the same ids; the path
// suggestion of a hostile path says where it really points; calls with no
// folder worth a rule get none.
func TestSuggestionsAreStable(t *testing.T) {
	spec := toolkit.Spec{Name: "write"}
	a := interceptors.DefaultSuggestions(spec, json.RawMessage(`{"path":"notes/a.md"}`))
	b := interceptors.DefaultSuggestions(spec, json.RawMessage(`{"path":"notes/a.md"}`))
	if !slices.EqualFunc(a, b, func(x, y interceptors.Suggestion) bool { return x.ID == y.ID }) {
		t.Fatalf("ids differ: %+v %+v", a, b)
	}
	ids := map[string]bool{}
	for _, s := range a {
		ids[s.ID] = true
	}
	if len(ids) != 3 {
		t.Fatalf("ids %v", ids)
	}
	under := func(args string) string {
		for _, s := range interceptors.DefaultSuggestions(spec, json.RawMessage(args)) {
			if s.Grant.Under != "" {
				return s.Grant.Under
			}
		}
		return ""
	}
	for args, want := range map[string]string{
		`{"path":"notes/../../etc/passwd"}`:           "../etc",
		`{"path":"/var/log/x.log"}`:                   "/var/log",
		`{"path":"a.md"}`:                             "",
		`{"path":"/x"}`:                               "",
		`{"path":"../x"}`:                             "",
		`{"path":"notes\\a.md"}`:                      "",
		`{"paths":["notes/a/x","notes/b/y"]}`:         "notes",
		`{"src":"notes/a","dst":"/tmp/b"}`:            "",
		`{"opts":{"file":"notes/deep/x"},"n":1}`:      "notes/deep",
		`{"title":"folder overview","text":"a note"}`: "",
	} {
		if got := under(args); got != want {
			t.Errorf("%s: under %q, want %q", args, got, want)
		}
	}
	if s := interceptors.DefaultSuggestions(toolkit.Spec{Name: "ping"}, json.RawMessage(`{}`)); len(s) != 1 || s[0].Label != "Always allow ping in this session" {
		t.Errorf("no arguments: %+v", s)
	}
}

// TestGrantsNeverOverrideDenyRules: a person's "always allow" does not
// lift a deny rule the code set.
func TestGrantsNeverOverrideDenyRules(t *testing.T) {
	f := suggestFixture(t, interceptors.WithRules(interceptors.Rule{Tool: "write", When: func(a map[string]any) bool { return a["path"] == "/etc/hosts" }, Decision: interceptors.Deny}))
	f.outcome(t, "s", permCall("w1", "write", `{"path":"a"}`), func(req interceptors.ApprovalRequest) {
		f.perms.Approve(req.Session, req.CallID, interceptors.AlwaysAllow())
	})
	if asked, r := f.outcome(t, "s", permCall("w2", "write", `{"path":"/etc/hosts"}`), nil); asked || r.State != events.StateDenied || !errors.Is(r.Err, interceptors.ErrDenied) {
		t.Fatalf("asked %v %s %q", asked, r.State, r.Text())
	}
	if asked, r := f.outcome(t, "s", permCall("w3", "write", `{"path":"b"}`), nil); asked || r.State != events.StateSuccess {
		t.Fatalf("always-allowed: asked %v %s", asked, r.State)
	}
}
