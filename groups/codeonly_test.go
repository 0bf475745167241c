package groups_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/toolkit"
)

// addAudit registers the tool purge in the CodeOnly group audit, whose
// name, description and instructions the model must never read.
func addAudit(t testing.TB, f *fixture, active bool) {
	t.Helper()
	if err := f.tk.Add(toolkit.MustTool(toolkit.Spec{Name: "purge", Description: "Purge the ledger."},
		func(ctx context.Context, _ struct{}) (string, error) { return "purged", nil })); err != nil {
		t.Fatal(err)
	}
	if err := f.m.Add(groups.Group{Name: "audit", Description: "Audit trail upkeep.", Instructions: "Only at night.",
		Tools: []string{"purge"}, Active: active, CodeOnly: true}); err != nil {
		t.Fatal(err)
	}
}

// revealsAudit reports whether a text the model reads names the audit group
// or repeats what only its definition says.
func revealsAudit(text string) bool {
	return strings.Contains(text, "audit") || strings.Contains(text, "Audit trail") || strings.Contains(text, "Only at night")
}

// resetToolsDef returns reset_tools' definition as session s sees it.
func resetToolsDef(t *testing.T, f *fixture, s string) toolkit.Definition {
	t.Helper()
	sess, _ := f.tk.Session(s)
	defs, err := sess.Definitions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d := defs[len(defs)-1]; d.Name == groups.MetaTool {
		return d
	}
	t.Fatalf("no %s in %v", groups.MetaTool, defs)
	return toolkit.Definition{}
}

// TestCodeOnlyGroupHiddenFromTheModel: a CodeOnly group is switched by code
// only; reset_tools never lists it, leaves it as it is, refuses it as it
// refuses a group that does not exist, and its report does not name it;
// its tools show when code switched it on; the "groups" events report it.
func TestCodeOnlyGroupHiddenFromTheModel(t *testing.T) {
	f := newFixture(t)
	addAudit(t, f, false)
	ctx := context.Background()
	assertHidden := func(when string) {
		t.Helper()
		d := resetToolsDef(t, f, "s")
		if revealsAudit(d.Description) || revealsAudit(string(d.Parameters)) {
			t.Fatalf("%s: reset_tools shows the code-only group:\n%s\n%s", when, d.Description, d.Parameters)
		}
	}
	assertHidden("inactive")
	if got, want := f.visible(t, "s"), []string{"web_get", "now", groups.MetaTool}; !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	// A call to its tool while it is off does not point at reset_tools.
	if r := f.run(t, "s", call("p", "purge", `{}`))[0]; r.State != events.StateError ||
		revealsAudit(r.Text()) || strings.Contains(r.Text(), groups.MetaTool) {
		t.Fatalf("purge while audit is off: %s %q", r.State, r.Text())
	}

	ch, err := f.m.Activate(ctx, "s", "audit")
	if err != nil || !slices.Equal(ch.Activated, []string{"audit"}) {
		t.Fatalf("Activate(audit): %+v, %v", ch, err)
	}
	assertHidden("active")
	if got, want := f.visible(t, "s"), []string{"web_get", "now", "purge", groups.MetaTool}; !slices.Equal(got, want) {
		t.Fatalf("tools with audit on %v, want %v", got, want)
	}

	// The model's reset_tools replaces the groups it sees, not audit.
	for _, step := range []struct{ args, prefix string }{
		{`{"files": true}`, "Active tool groups: files.\n"},
		{`{"files": true}`, "Active tool groups: files. Nothing changed."},
		{`{}`, "All tool groups are now inactive."},
	} {
		r := f.run(t, "s", call("r", groups.MetaTool, step.args))[0]
		if r.State != events.StateSuccess || !strings.HasPrefix(r.Text(), step.prefix) || revealsAudit(r.Text()) {
			t.Fatalf("reset_tools %s: %s %q, want it to begin %q and not name audit", step.args, r.State, r.Text(), step.prefix)
		}
		if strings.Contains(r.Text(), "only the basic tools remain") {
			t.Fatalf("reset_tools %s: %q, but purge remains", step.args, r.Text())
		}
		if active, _ := f.m.Active(ctx, "s"); !slices.Contains(active, "audit") {
			t.Fatalf("reset_tools %s switched audit off: %v", step.args, active)
		}
		if r := f.run(t, "s", call("p", "purge", `{}`))[0]; r.State != events.StateSuccess {
			t.Fatalf("purge after reset_tools %s: %q", step.args, r.Text())
		}
	}

	// Naming it is refused exactly as naming a group that does not exist.
	for _, on := range []string{"true", "false"} {
		got := f.run(t, "s", call("r", groups.MetaTool, `{"audit": `+on+`}`))[0]
		want := f.run(t, "s", call("r", groups.MetaTool, `{"audix": `+on+`}`))[0]
		if got.State != events.StateError || strings.ReplaceAll(got.Text(), "audit", "audix") != want.Text() {
			t.Fatalf("reset_tools {audit: %s}: %s %q; for a group that does not exist: %q", on, got.State, got.Text(), want.Text())
		}
	}
	if active, _ := f.m.Active(ctx, "s"); !slices.Equal(active, []string{"audit"}) {
		t.Fatalf("after refused calls: %v, want [audit]", active)
	}

	// People see it: every change's event reports it.
	evs := sessionEvents(f.recv, "s")
	if len(evs) != 3 || !slices.Equal(evs[0].Activated, []string{"audit"}) || evs[0].By != "code" ||
		!slices.Equal(evs[1].Active, []string{"audit", "files"}) || evs[1].By != "model" ||
		!slices.Equal(evs[2].Active, []string{"audit"}) || !slices.Equal(evs[2].Deactivated, []string{"files"}) {
		t.Fatalf("groups events %+v", evs)
	}

	if _, err := f.m.Deactivate(ctx, "s", "audit"); err != nil {
		t.Fatal(err)
	}
	if got := f.visible(t, "s"); slices.Contains(got, "purge") {
		t.Fatalf("purge visible after code switched audit off: %v", got)
	}
}

// TestCodeOnlyGroupRefusedInTheHandler: a group made CodeOnly while a
// reset_tools call naming it is on its way (validated against a schema
// that still listed it) is refused with the words used for a group removed
// meanwhile, and stays off.
func TestCodeOnlyGroupRefusedInTheHandler(t *testing.T) {
	text := func(change func(*groups.Manager) error) string {
		f := newFixture(t)
		if err := f.tk.Use(toolkit.Interceptor{Name: "change-first", Tools: []string{groups.MetaTool},
			Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
				if err := change(f.m); err != nil {
					t.Error(err)
				}
				return next(ctx, inv)
			}}); err != nil {
			t.Fatal(err)
		}
		r := f.run(t, "s", call("r", groups.MetaTool, `{"search": true}`))[0]
		if r.State != events.StateError || !errors.Is(r.Err, groups.ErrUnknownGroup) {
			t.Fatalf("reset_tools {search: true}: %s %q, want an unknown group", r.State, r.Text())
		}
		if active, _ := f.m.Active(context.Background(), "s"); slices.Contains(active, "search") {
			t.Fatalf("the refused call switched search on: %v", active)
		}
		return r.Text()
	}
	made := text(func(m *groups.Manager) error {
		return m.Update(groups.Group{Name: "search", Description: "Search text.", Tools: []string{"grep"}, CodeOnly: true})
	})
	removed := text(func(m *groups.Manager) error { return m.Remove("search") })
	if made != removed {
		t.Fatalf("made code-only: %q\nremoved:        %q", made, removed)
	}
}

// TestCodeOnlyGroupNeverFound: tool_search never returns a CodeOnly group
// or counts it, active or not.
func TestCodeOnlyGroupNeverFound(t *testing.T) {
	f := newFixture(t, groups.WithToolSearch())
	addAudit(t, f, false)
	ctx := context.Background()
	s, _ := f.tk.Session("s")
	if d := resetToolsDef(t, f, "s"); !strings.Contains(d.Description, "There are 3 groups") || revealsAudit(d.Description+string(d.Parameters)) {
		t.Fatalf("reset_tools: %q %s", d.Description, d.Parameters)
	}
	if text := search(t, s, `{"query": "audit trail purge ledger"}`).Text(); !strings.HasPrefix(text, "No inactive tool group matches") {
		t.Fatalf("search for the code-only group: %q", text)
	}
	if _, err := f.m.Activate(ctx, "s", "audit"); err != nil {
		t.Fatal(err)
	}
	text := search(t, s, `{"query": "read local files"}`).Text()
	if !strings.Contains(text, "1. files:") || !strings.Contains(text, "keep the active groups (web) set to true") || revealsAudit(text) {
		t.Fatalf("search with audit on: %q", text)
	}
	// Every group the model sees is on: audit being off is not its business.
	if _, err := f.m.SetActive(ctx, "s", "files", "web", "search"); err != nil {
		t.Fatal(err)
	}
	if text := search(t, s, `{"query": "audit"}`).Text(); !strings.HasPrefix(text, "Every tool group is active already") {
		t.Fatalf("search with every group the model sees on: %q", text)
	}
}

// TestOnlyCodeOnlyGroups: with no group the model can switch, neither meta
// tool is shown, and reset_tools is refused as with no groups; a CodeOnly
// group needs no description.
func TestOnlyCodeOnlyGroups(t *testing.T) {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	for _, name := range []string{"purge", "now"} {
		if err := tk.Add(toolkit.MustTool(toolkit.Spec{Name: name}, func(ctx context.Context, _ struct{}) (string, error) { return name, nil })); err != nil {
			t.Fatal(err)
		}
	}
	m, err := groups.Install(tk, groups.WithToolSearch())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add(groups.Group{Name: "audit", Tools: []string{"purge"}, CodeOnly: true}); err != nil {
		t.Fatalf("a code-only group without a description: %v", err)
	}
	if err := m.Update(groups.Group{Name: "audit", Tools: []string{"purge"}}); !errors.Is(err, groups.ErrInvalidGroup) {
		t.Fatalf("made visible to the model without a description: %v", err)
	}
	s, _ := tk.Session("s")
	names := func() []string {
		defs, err := s.Definitions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range defs {
			out = append(out, d.Name)
		}
		return out
	}
	if got := names(); !slices.Equal(got, []string{"now"}) {
		t.Fatalf("tools %v, want [now]", got)
	}
	if _, err := m.Activate(ctx, "s", "audit"); err != nil {
		t.Fatal(err)
	}
	if got := names(); !slices.Equal(got, []string{"purge", "now"}) {
		t.Fatalf("tools with audit on %v, want [purge now]", got)
	}
	for _, meta := range []string{groups.MetaTool, groups.SearchTool} {
		r := s.Run(ctx, []toolkit.Call{{ID: "r", Name: meta, Args: []byte(`{"query": "audit"}`)}})[0]
		if r.State != events.StateError || !strings.Contains(r.Text(), "there are no tool groups to") || revealsAudit(r.Text()) {
			t.Fatalf("%s: %s %q", meta, r.State, r.Text())
		}
	}
}
