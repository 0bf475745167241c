package skills_test

import (
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/groups"
)

// TestLoadNeverNamesACodeOnlyGroup: a skill bound to a code-only group
// switches it on, and its result tells the model of the tools that came,
// never of the group (the model must not learn it exists).
func TestLoadNeverNamesACodeOnlyGroup(t *testing.T) {
	f := newLoaderFixture(t)
	if err := f.gm.Add(groups.Group{Name: "backoffice", CodeOnly: true, Tools: []string{"plot"}}); err != nil {
		t.Fatal(err)
	}
	if err := f.ld.Bind("analysis", "backoffice"); err != nil {
		t.Fatal(err)
	}
	if err := f.ld.Bind("writing", "backoffice"); err != nil {
		t.Fatal(err)
	}
	r := f.load(t, "s", "analysis", "SKILL.md")
	if r.State != events.StateSuccess || strings.Contains(r.Text(), "backoffice") ||
		!strings.Contains(r.Text(), "switched on the tool group(s) stats. Now available: mean, plot.") {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	r = f.load(t, "other", "writing", "SKILL.md")
	if r.State != events.StateSuccess || strings.Contains(r.Text(), "backoffice") ||
		!strings.HasSuffix(r.Text(), "This skill made tools available. Now available: plot.") {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	if on, _ := f.gm.Active(t.Context(), "other"); !strings.Contains(strings.Join(on, ","), "backoffice") {
		t.Fatalf("the code-only group was not switched on: %v", on)
	}
}
