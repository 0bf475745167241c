package groups_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/toolkit"
)

// FuzzResetTools: whatever bytes the model sends as reset_tools' arguments
// (duplicate keys, nulls, other types, unknown groups, not JSON), the call
// ends with a result or a readable refusal, never a panic. A refusal
// changes nothing; a result says which groups are active, the manager
// agrees, and the session's tool list is exactly the basic tools, those of
// the active groups and reset_tools. The CodeOnly group audit (on by
// default) stays on, and no result names it.
func FuzzResetTools(f *testing.F) {
	for _, seed := range []string{
		`{"files": true}`, `{}`, `{"files": true, "files": false}`, `{"files": "x", "files": true}`,
		`{"files": null}`, `{"basic": true}`, `{"fils": true}`, `{"files": 1}`, `null`, `[]`, `"files"`,
		`{"files": true, "web": true, "search": true}`, `{"files":true}x`, ``, `{"\u0000": true}`,
		`{"files": {"a": true}}`, `{"files": [true]}`, `{"reset_tools": true}`, `{"web": false}`,
		`"{\"files\": true}"`, `{"FILES": true}`, `{"files ": true}`,
		`{"audit": true}`, `{"audit": false}`, `{"files": true, "audit": false}`,
	} {
		f.Add(seed)
	}
	fx := newFixture(f)
	addAudit(f, fx, true)
	s, _ := fx.tk.Session("fuzz")
	ctx := context.Background()
	member := map[string][]string{}
	for _, g := range fx.m.Groups() {
		member[g.Name] = g.Tools
	}
	f.Fuzz(func(t *testing.T, args string) {
		before, err := fx.m.Active(ctx, "fuzz")
		if err != nil {
			t.Fatal(err)
		}
		r := s.Run(ctx, []toolkit.Call{{ID: "f", Name: groups.MetaTool, Args: json.RawMessage(args)}})[0]
		after, err := fx.m.Active(ctx, "fuzz")
		if err != nil {
			t.Fatal(err)
		}
		text := r.Text()
		if !slices.Contains(after, "audit") {
			t.Fatalf("%q switched the code-only group off: %v", args, after)
		}
		switch r.State {
		case events.StateError:
			if strings.TrimSpace(strings.TrimPrefix(text, "Error:")) == "" {
				t.Fatalf("%q: an error with no message", args)
			}
			if !slices.Equal(before, after) {
				t.Fatalf("%q refused (%q) but the groups changed: %v -> %v", args, text, before, after)
			}
		case events.StateSuccess:
			shown := slices.DeleteFunc(slices.Clone(after), func(g string) bool { return g == "audit" })
			want := "All tool groups are now inactive." // not "only the basic tools": purge remains
			if len(shown) > 0 {
				want = "Active tool groups: " + strings.Join(shown, ", ") + "."
			}
			if !strings.HasPrefix(text, want) || revealsAudit(text) {
				t.Fatalf("%q: the manager says %v, the result %q", args, after, text)
			}
		default:
			t.Fatalf("%q: state %s %q", args, r.State, text)
		}
		defs, err := s.Definitions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range defs {
			got = append(got, d.Name)
		}
		wantTools := []string{}
		for _, name := range []string{"read_file", "list_dir", "web_get", "grep", "now", "purge"} {
			grouped, on := false, false
			for g, tools := range member {
				if slices.Contains(tools, name) {
					grouped = true
					on = on || slices.Contains(after, g)
				}
			}
			if !grouped || on {
				wantTools = append(wantTools, name)
			}
		}
		wantTools = append(wantTools, groups.MetaTool)
		if !slices.Equal(got, wantTools) {
			t.Fatalf("%q: active %v, tools %v, want %v", args, after, got, wantTools)
		}
	})
}
