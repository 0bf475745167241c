package interceptors_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// TestPathsAsObjectKeys: a tool that takes a map of path to content
// ({"files": {"notes/a.md": "..."}}) names files by object keys. A path
// rule granted for ./notes must not cover a call whose map writes
// /etc/cron.d/x, and DangerousFiles must ask about a map key
// ~/.ssh/authorized_keys. Both read only values, and the calls ran.
func TestPathsAsObjectKeys(t *testing.T) {
	var wrote []string
	tool := toolkit.MustTool(toolkit.Spec{Name: "write_files"}, func(ctx context.Context, in struct {
		Path  string            `json:"path,omitempty"`
		Files map[string]string `json:"files,omitempty"`
	}) (string, error) {
		if in.Path != "" {
			wrote = append(wrote, in.Path)
		}
		for p := range in.Files {
			wrote = append(wrote, p)
		}
		return "ok", nil
	})
	perms := interceptors.NewPermissions(interceptors.WithMode(interceptors.AskAll), interceptors.WithApprovalTimeout(500*time.Millisecond),
		interceptors.WithRules(interceptors.DangerousFiles()...))
	tk := icKit(t, nil, perms.Interceptor())
	tk.Add(tool)
	s, _ := tk.Session("s")

	// A person accepts "write_files on paths under ./notes".
	b := s.Start(context.Background(), []toolkit.Call{{ID: "1", Name: "write_files", Args: json.RawMessage(`{"path":"notes/a.md","files":{"notes/z.md":"x"}}`)}})
	for r := range b.Results() {
		if r.Final() {
			continue
		}
		req := perms.Pending("s")[0]
		id := ""
		for _, sg := range req.Suggestions {
			if sg.Grant.Under == "notes" {
				id = sg.ID
			}
		}
		if id == "" {
			t.Errorf("no path rule offered: %+v", req.Suggestions)
			perms.Approve("s", "1")
			continue
		}
		if err := perms.Approve("s", "1", interceptors.WithSuggestion(id)); err != nil {
			t.Fatal(err)
		}
	}
	b.Wait()
	wrote = nil
	if sg := interceptors.DefaultSuggestions(tool.Spec(), json.RawMessage(`{"files":{"notes/a.md":"x","notes/b.md":"y"}}`)); len(sg) != 3 || sg[1].Grant.Under != "notes" {
		t.Errorf("suggestions for a map of paths under ./notes: %+v", sg)
	}
	if r := icRun(t, s, toolkit.Call{ID: "2", Name: "write_files", Args: json.RawMessage(`{"files":{"notes/b.md":"y"}}`)}); r.State != events.StateSuccess {
		t.Errorf("inside ./notes: %s %q", r.State, r.Text())
	}
	for i, args := range []string{
		`{"path":"notes/c.md","files":{"/etc/cron.d/x":"* * * * * root sh -c x"}}`,
		`{"files":{"notes/d.md":"y","../.bashrc":"curl x | sh"}}`,
		`{"files":{"notes/e.md":"y","other/f.md":"z"}}`,
	} {
		r := icRun(t, s, toolkit.Call{ID: string(rune('a' + i)), Name: "write_files", Args: json.RawMessage(args)})
		if !errors.Is(r.Err, interceptors.ErrNoDecision) {
			t.Errorf("%s, with a rule for ./notes only: %s %q, want asked (no decision)", args, r.State, r.Text())
		}
	}
	if len(wrote) != 1 || wrote[0] != "notes/b.md" {
		t.Errorf("wrote %v, want only notes/b.md", wrote)
	}

	// The dangerous-file rule reads the keys too, and says why it asks.
	var m map[string]any
	json.Unmarshal([]byte(`{"files":{"~/.ssh/authorized_keys":"ssh-rsa AAAA user@host"}}`), &m)
	rule := interceptors.DangerousFiles()[0]
	if !rule.When(m) {
		t.Error("DangerousFiles: a map key ~/.ssh/authorized_keys is not dangerous")
	}
}
