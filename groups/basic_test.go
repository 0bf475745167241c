package groups_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/groups"
)

// TestBasicGroupReserved: "basic" cannot be defined, updated, removed or
// switched off, each with an error that says what to do instead.
func TestBasicGroupReserved(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	err := f.m.Add(groups.Group{Name: "basic", Description: "Everyday tools.", Tools: []string{"now"}})
	if !errors.Is(err, groups.ErrReservedGroup) || !errors.Is(err, groups.ErrInvalidGroup) ||
		!strings.Contains(err.Error(), "leave them out of every group") {
		t.Fatalf("defining basic: %v", err)
	}
	if f.m.Has("basic") || slices.Contains(names(f.m.Groups()), "basic") {
		t.Fatal("basic was defined anyway")
	}
	if err := f.m.Update(groups.Group{Name: "basic", Description: "x", Tools: []string{"now"}}); !errors.Is(err, groups.ErrReservedGroup) {
		t.Fatalf("updating basic: %v", err)
	}
	if err := f.m.Remove("basic"); !errors.Is(err, groups.ErrReservedGroup) {
		t.Fatalf("removing basic: %v", err)
	}
	if _, err := f.m.Deactivate(ctx, "s", "basic"); !errors.Is(err, groups.ErrReservedGroup) || !strings.Contains(err.Error(), "put it in a group") {
		t.Fatalf("switching basic off: %v", err)
	}
	// Switching it on is allowed and changes nothing.
	ch, err := f.m.Activate(ctx, "s", "basic")
	if err != nil || ch.Changed() {
		t.Fatalf("switching basic on: %+v %v", ch, err)
	}
	// SetActive (replace) with basic keeps the basic tools and sets the rest.
	if _, err := f.m.SetActive(ctx, "s", "basic", "files"); err != nil {
		t.Fatal(err)
	}
	if got := f.visible(t, "s"); !slices.Equal(got, []string{"read_file", "list_dir", "grep", "now", "reset_tools"}) {
		t.Fatalf("visible %v", got)
	}
}

// TestBasicNotInResetTools: reset_tools' schema has no "basic" property, so
// the engine refuses a call that tries to switch it, and basic tools stay
// visible and callable across every reset.
func TestBasicNotInResetTools(t *testing.T) {
	f := newFixture(t)
	s, _ := f.tk.Session("s")
	defs, _ := s.Definitions(context.Background())
	var sch struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(defs[len(defs)-1].Parameters, &sch); err != nil {
		t.Fatal(err)
	}
	if _, ok := sch.Properties["basic"]; ok || len(sch.Properties) != 3 {
		t.Fatalf("reset_tools lists %v", slices.Sorted(func(yield func(string) bool) {
			for k := range sch.Properties {
				yield(k)
			}
		}))
	}
	r := f.run(t, "s", call("b", "reset_tools", `{"basic": false}`))[0]
	if r.State != events.StateError || !strings.Contains(r.Text(), "basic: is not an allowed property") {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	for i, args := range []string{`{}`, `{"files": true}`, `{"web": true, "search": true}`, `{}`} {
		r := f.run(t, "s", call("r", "reset_tools", args))[0]
		if r.State != events.StateSuccess {
			t.Fatalf("%s: %q", args, r.Text())
		}
		if got := f.visible(t, "s"); !slices.Contains(got, "now") {
			t.Fatalf("after %s: basic tool now hidden: %v", args, got)
		}
		if r := f.run(t, "s", call("n", "now", `{}`))[0]; r.State != events.StateSuccess {
			t.Fatalf("after %s: now: %q", args, r.Text())
		}
		if got := f.runs("now"); got != int32(i+1) {
			t.Fatalf("now ran %d times", got)
		}
	}
}

// TestResetToolsDescribesNewGroups: the result carries the description and
// the instructions of each group the call switched on, and not those of
// groups that were already on; a call that changes nothing shows those of
// every active group again.
func TestResetToolsDescribesNewGroups(t *testing.T) {
	f := newFixture(t)
	// web is on by default: it is not newly activated.
	text := f.run(t, "s", call("r1", "reset_tools", `{"files": true, "web": true}`))[0].Text()
	for _, want := range []string{
		"<tool-instructions>\nThe groups you activated, and how to use their tools:",
		"<group name=\"files\">\n<description>Read local files.</description>\n<instructions>\nUse list_dir before read_file.\n</instructions>\n</group>",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("result lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "Fetch web pages.") || strings.Contains(text, "Only fetch https") {
		t.Errorf("result repeats the group that was already on:\n%s", text)
	}
	// A group with no instructions still gets its description.
	text = f.run(t, "s", call("r2", "reset_tools", `{"files": true, "web": true, "search": true}`))[0].Text()
	if !strings.Contains(text, "<group name=\"search\">\n<description>Search text.</description>\n</group>") || strings.Contains(text, "Read local files.") {
		t.Errorf("search activated:\n%s", text)
	}
	// Nothing changed: every active group again.
	text = f.run(t, "s", call("r3", "reset_tools", `{"files": true, "web": true, "search": true}`))[0].Text()
	for _, want := range []string{"Nothing changed.", "The active groups, and how to use their tools:",
		"<description>Read local files.</description>", "<description>Fetch web pages.</description>", "Only fetch https URLs.", "<description>Search text.</description>"} {
		if !strings.Contains(text, want) {
			t.Errorf("re-check lacks %q:\n%s", want, text)
		}
	}
	// Switching everything off shows no group.
	if text = f.run(t, "s", call("r4", "reset_tools", `{}`))[0].Text(); strings.Contains(text, "<tool-instructions>") {
		t.Errorf("all off:\n%s", text)
	}
}
