package groups_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/internal/leak"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

func TestMain(m *testing.M) { leak.VerifyTestMain(m) }

// fixture: tools read_file and list_dir (group files), web_get (group web),
// grep (groups files and search), now (basic).
type fixture struct {
	tk   *toolkit.Toolkit
	m    *groups.Manager
	ran  sync.Map // tool name -> *atomic.Int32
	recv *testutil.Recorder
}

// sessionEvents returns the group changes rec saw in a session.
func sessionEvents(rec *testutil.Recorder, session string) []groups.Change {
	var out []groups.Change
	for _, ev := range rec.OfType(groups.EventType) {
		if ev.Session == session {
			var ch groups.Change
			if err := json.Unmarshal(ev.Data, &ch); err != nil {
				panic(err)
			}
			out = append(out, ch)
		}
	}
	return out
}

func newFixture(t testing.TB, opts ...groups.Option) *fixture {
	t.Helper()
	f := &fixture{recv: &testutil.Recorder{}}
	f.tk = toolkit.New(toolkit.WithInlineObserver(f.recv))
	t.Cleanup(func() { f.tk.Close(context.Background()) })
	for _, name := range []string{"read_file", "list_dir", "web_get", "grep", "now"} {
		counter := &atomic.Int32{}
		f.ran.Store(name, counter)
		if err := f.tk.Add(toolkit.MustTool(toolkit.Spec{Name: name, Description: "the " + name + " tool", ConcurrencySafe: true},
			func(ctx context.Context, _ struct{}) (string, error) {
				counter.Add(1)
				return name + " ran", nil
			})); err != nil {
			t.Fatal(err)
		}
	}
	m, err := groups.Install(f.tk, opts...)
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
	if err := m.Add(
		groups.Group{Name: "files", Description: "Read local files.", Instructions: "Use list_dir before read_file.", Tools: []string{"read_file", "list_dir", "grep"}},
		groups.Group{Name: "web", Description: "Fetch web pages.", Instructions: "Only fetch https URLs.", Tools: []string{"web_get"}, Active: true},
		groups.Group{Name: "search", Description: "Search text.", Tools: []string{"grep"}},
	); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) runs(name string) int32 {
	v, _ := f.ran.Load(name)
	return v.(*atomic.Int32).Load()
}

func (f *fixture) visible(t *testing.T, session string) []string {
	t.Helper()
	s, _ := f.tk.Session(session)
	defs, err := s.Definitions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range defs {
		out = append(out, d.Name)
	}
	return out
}

func (f *fixture) run(t *testing.T, session string, calls ...toolkit.Call) []toolkit.Result {
	t.Helper()
	s, _ := f.tk.Session(session)
	return s.Run(context.Background(), calls)
}

func call(id, name, args string) toolkit.Call {
	return toolkit.Call{ID: id, Name: name, Args: json.RawMessage(args)}
}

func TestVisibility(t *testing.T) {
	f := newFixture(t)
	// Defaults: web is active; now is basic; reset_tools comes last.
	if got, want := f.visible(t, "s"), []string{"web_get", "now", "reset_tools"}; !slices.Equal(got, want) {
		t.Fatalf("default tools %v, want %v", got, want)
	}
	if _, err := f.m.Activate(context.Background(), "s", "search"); err != nil {
		t.Fatal(err)
	}
	// grep is in files and search: visible because search is on.
	if got, want := f.visible(t, "s"), []string{"web_get", "grep", "now", "reset_tools"}; !slices.Equal(got, want) {
		t.Fatalf("with search %v, want %v", got, want)
	}
	if _, err := f.m.SetActive(context.Background(), "s", "files"); err != nil {
		t.Fatal(err)
	}
	if got, want := f.visible(t, "s"), []string{"read_file", "list_dir", "grep", "now", "reset_tools"}; !slices.Equal(got, want) {
		t.Fatalf("files only %v, want %v", got, want)
	}
	// Another session still has the defaults.
	if got, want := f.visible(t, "other"), []string{"web_get", "now", "reset_tools"}; !slices.Equal(got, want) {
		t.Fatalf("other session %v, want %v", got, want)
	}
}

func TestNoGroupsNoMetaTool(t *testing.T) {
	tk := toolkit.New()
	defer tk.Close(context.Background())
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "now"}, func(ctx context.Context, _ struct{}) (string, error) { return "", nil }))
	if _, err := groups.Install(tk); err != nil {
		t.Fatal(err)
	}
	s, _ := tk.Session("s")
	defs, _ := s.Definitions(context.Background())
	if len(defs) != 1 || defs[0].Name != "now" {
		t.Fatalf("%v", defs)
	}
	r := s.Run(context.Background(), []toolkit.Call{call("1", "reset_tools", `{}`)})[0]
	if r.State != events.StateError || !strings.Contains(r.Text(), "no tool groups") {
		t.Fatalf("%s %q", r.State, r.Text())
	}
}

// TestResetToolsReplaceSemantics: the model's booleans are the new state;
// the result names the active groups, the new tools and the instructions.
func TestResetToolsReplaceSemantics(t *testing.T) {
	f := newFixture(t)
	r := f.run(t, "s", call("r1", "reset_tools", `{"files": true}`))[0]
	if r.State != events.StateSuccess {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	text := r.Text()
	for _, want := range []string{
		"Active tool groups: files.",
		"Now available: read_file, list_dir, grep.",
		"No longer available: web_get.",
		"<tool-instructions>", `<group name="files">`, "Use list_dir before read_file.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("result lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "Only fetch https") {
		t.Errorf("instructions of an inactive group:\n%s", text)
	}
	active, _ := f.m.Active(context.Background(), "s")
	if !slices.Equal(active, []string{"files"}) {
		t.Fatalf("active %v: web was not set to true, so it must be off", active)
	}
	// Everything off.
	r = f.run(t, "s", call("r2", "reset_tools", `{}`))[0]
	if !strings.Contains(r.Text(), "All tool groups are now inactive") {
		t.Fatalf("%q", r.Text())
	}
	if got := f.visible(t, "s"); !slices.Equal(got, []string{"now", "reset_tools"}) {
		t.Fatalf("visible %v", got)
	}
}

// TestSchemaMarksActiveGroups: reset_tools' schema has one boolean per
// group, says which are on, and follows the session's state.
func TestSchemaMarksActiveGroups(t *testing.T) {
	f := newFixture(t)
	schemaOf := func() (map[string]map[string]any, string) {
		s, _ := f.tk.Session("s")
		defs, _ := s.Definitions(context.Background())
		meta := defs[len(defs)-1]
		var sch struct {
			Properties map[string]map[string]any `json:"properties"`
			Additional bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(meta.Parameters, &sch); err != nil {
			t.Fatal(err)
		}
		if sch.Additional {
			t.Fatal("reset_tools accepts unknown properties")
		}
		return sch.Properties, meta.Description
	}
	props, desc := schemaOf()
	if len(props) != 3 || props["files"]["type"] != "boolean" {
		t.Fatalf("properties %v", props)
	}
	if !strings.Contains(props["web"]["description"].(string), "ACTIVE now") || !strings.Contains(props["files"]["description"].(string), "(inactive)") {
		t.Fatalf("states not marked: %v", props)
	}
	if !strings.Contains(desc, "complete new state") || !strings.Contains(desc, "- files (inactive): Read local files.") {
		t.Fatalf("description %q", desc)
	}
	f.m.SetActive(context.Background(), "s", "files")
	props, _ = schemaOf()
	if !strings.Contains(props["files"]["description"].(string), "ACTIVE now") || strings.Contains(props["web"]["description"].(string), "ACTIVE") {
		t.Fatalf("schema not rebuilt after a change: %v", props)
	}
	f.m.Add(groups.Group{Name: "clock", Description: "Time.", Tools: []string{"now"}})
	if props, _ = schemaOf(); len(props) != 4 {
		t.Fatalf("schema not rebuilt after a new group: %v", props)
	}
}

// TestResetToolsErrors: unknown keys and non-booleans are refused by the
// schema of the session's reset_tools, with the valid names, and the state
// does not change.
func TestResetToolsErrors(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ args, want string }{
		{`{"files": true, "fils": true}`, `fils: is not an allowed property; allowed: files, search, web`},
		{`{"files": "yes"}`, `files: must be a boolean, got string "yes"`},
		{`{"web": 1, "nope": false}`, "web: must be a boolean, got number 1\n- nope: is not an allowed property; allowed: files, search, web"},
		{`[true]`, `must be a JSON object`},
	} {
		r := f.run(t, "s", call("e", "reset_tools", tc.args))[0]
		if r.State != events.StateError || !strings.Contains(r.Text(), tc.want) {
			t.Errorf("%s: %s %q", tc.args, r.State, r.Text())
		}
		if active, _ := f.m.Active(context.Background(), "s"); !slices.Equal(active, []string{"web"}) {
			t.Fatalf("%s changed the state to %v", tc.args, active)
		}
	}
	if len(sessionEvents(f.recv, "s")) != 0 {
		t.Fatal("a refused reset_tools emitted a groups event")
	}
}

// TestInactiveToolRefused: a call to a tool of an inactive group never runs
// and tells the model what to activate.
func TestInactiveToolRefused(t *testing.T) {
	f := newFixture(t)
	rs := f.run(t, "s", call("1", "read_file", `{}`), call("2", "grep", `{}`), call("3", "web_get", `{}`), call("4", "wbe_get", `{}`))
	if rs[0].State != events.StateError || !errors.Is(rs[0].Err, toolkit.ErrUnavailable) ||
		!strings.Contains(rs[0].Text(), `tool "read_file" is in the tool group "files", which is not active`) ||
		!strings.Contains(rs[0].Text(), `calling reset_tools with "files" set to true`) {
		t.Fatalf("read_file: %s %q", rs[0].State, rs[0].Text())
	}
	if !strings.Contains(rs[1].Text(), `in the tool groups "files", "search", none of which is active`) {
		t.Fatalf("grep: %q", rs[1].Text())
	}
	if rs[2].State != events.StateSuccess {
		t.Fatalf("web_get: %s", rs[2].State)
	}
	// An unknown tool: suggestions and the list come from what the session sees.
	if !strings.Contains(rs[3].Text(), `did you mean "web_get"?`) || strings.Contains(rs[3].Text(), "read_file") {
		t.Fatalf("unknown tool: %q", rs[3].Text())
	}
	if f.runs("read_file") != 0 || f.runs("grep") != 0 {
		t.Fatal("a tool of an inactive group ran")
	}
}

// TestResetToolsInABatch: reset_tools takes effect for the calls after it in
// the same batch, not for those before it.
func TestResetToolsInABatch(t *testing.T) {
	f := newFixture(t)
	rs := f.run(t, "s",
		call("before", "read_file", `{}`),
		call("reset", "reset_tools", `{"files": true}`),
		call("after", "read_file", `{}`),
		call("after2", "web_get", `{}`),
	)
	if rs[0].State != events.StateError || rs[2].State != events.StateSuccess || rs[3].State != events.StateError {
		t.Fatalf("before %s, after %s, web after %s", rs[0].State, rs[2].State, rs[3].State)
	}
}

// TestCodeAndModelAgree: changes by code and by the model go through one
// state; each sees the other's, and each emits a groups event.
func TestCodeAndModelAgree(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.m.Activate(ctx, "s", "files"); err != nil {
		t.Fatal(err)
	}
	// The model sees files active, switches to search only.
	r := f.run(t, "s", call("m", "reset_tools", `{"search": true}`))[0]
	if !strings.Contains(r.Text(), "Active tool groups: search.") {
		t.Fatalf("%q", r.Text())
	}
	if active, _ := f.m.Active(ctx, "s"); !slices.Equal(active, []string{"search"}) {
		t.Fatalf("code sees %v", active)
	}
	if _, err := f.m.Deactivate(ctx, "s", "search"); err != nil {
		t.Fatal(err)
	}
	// Re-affirming changes nothing and emits nothing.
	if ch, _ := f.m.Deactivate(ctx, "s", "search"); ch.Changed() {
		t.Fatalf("no-op change %+v", ch)
	}
	evs := sessionEvents(f.recv, "s")
	want := []groups.Change{
		{Active: []string{"files", "web"}, Activated: []string{"files"}, By: "code"},
		{Active: []string{"search"}, Activated: []string{"search"}, Deactivated: []string{"files", "web"}, By: "model", Call: "m"},
		{Active: []string{}, Deactivated: []string{"search"}, By: "code"},
	}
	if len(evs) != len(want) {
		t.Fatalf("%d events: %+v", len(evs), evs)
	}
	for i := range want {
		if !slices.Equal(evs[i].Active, want[i].Active) || !slices.Equal(evs[i].Activated, want[i].Activated) ||
			!slices.Equal(evs[i].Deactivated, want[i].Deactivated) || evs[i].By != want[i].By || evs[i].Call != want[i].Call {
			t.Errorf("event %d: %+v, want %+v", i, evs[i], want[i])
		}
	}
}

func TestManagerErrors(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, tc := range []struct {
		err  error
		want error
		text string
	}{
		{f.m.Add(groups.Group{Name: "files", Description: "x", Tools: []string{"now"}}), groups.ErrDuplicateGroup, "files"},
		{f.m.Add(groups.Group{Name: "x", Description: "x", Tools: []string{"missing"}}), groups.ErrInvalidGroup, `tool "missing" is not registered`},
		{f.m.Add(groups.Group{Name: "x", Tools: []string{"now"}}), groups.ErrInvalidGroup, "description is required"},
		{f.m.Add(groups.Group{Name: "bad name", Description: "x", Tools: []string{"now"}}), groups.ErrInvalidGroup, "name"},
		{f.m.Add(groups.Group{Name: "reset_tools", Description: "x", Tools: []string{"now"}}), groups.ErrInvalidGroup, "reserved"},
		{f.m.Update(groups.Group{Name: "nope", Description: "x", Tools: []string{"now"}}), groups.ErrUnknownGroup, "groups are: files, web, search"},
		{f.m.Remove("nope"), groups.ErrUnknownGroup, "nope"},
		{func() error { _, err := f.m.Activate(ctx, "s", "nope"); return err }(), groups.ErrUnknownGroup, "nope"},
		{func() error { _, err := f.m.SetActive(ctx, "s", "files", "nope"); return err }(), groups.ErrUnknownGroup, "nope"},
	} {
		if !errors.Is(tc.err, tc.want) || !strings.Contains(tc.err.Error(), tc.text) {
			t.Errorf("got %v, want %v containing %q", tc.err, tc.want, tc.text)
		}
	}
	if active, _ := f.m.Active(ctx, "s"); !slices.Equal(active, []string{"web"}) {
		t.Fatalf("a failed change changed the state: %v", active)
	}
	// Update and Remove at run time.
	if err := f.m.Update(groups.Group{Name: "web", Description: "The web.", Tools: []string{"web_get", "now"}, Active: true}); err != nil {
		t.Fatal(err)
	}
	if err := f.m.Remove("search"); err != nil {
		t.Fatal(err)
	}
	if got := names(f.m.Groups()); !slices.Equal(got, []string{"files", "web"}) {
		t.Fatalf("groups %v", got)
	}
	tk2 := toolkit.New()
	defer tk2.Close(ctx)
	tk2.Add(toolkit.MustTool(toolkit.Spec{Name: "reset_tools"}, func(ctx context.Context, _ struct{}) (string, error) { return "", nil }))
	if _, err := groups.Install(tk2); err == nil || !errors.Is(err, toolkit.ErrDuplicate) {
		t.Fatalf("Install over an existing reset_tools: %v", err)
	}
}

func names(gs []groups.Group) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.Name)
	}
	return out
}

// TestConcurrentSessions: many sessions switching groups at once, by code and
// by the model, each ending with exactly what it set.
func TestConcurrentSessions(t *testing.T) {
	f := newFixture(t)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			session := "s" + string(rune('a'+i))
			if i%2 == 0 {
				f.run(t, session, call("r", "reset_tools", `{"files": true, "search": true}`))
			} else {
				f.m.SetActive(context.Background(), session, "search")
			}
		}()
	}
	wg.Wait()
	for i := range 20 {
		session := "s" + string(rune('a'+i))
		want := []string{"search"}
		if i%2 == 0 {
			want = []string{"files", "search"}
		}
		if got, _ := f.m.Active(context.Background(), session); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", session, got, want)
		}
	}
}

// TestClosedSessionForgotten: closing a session drops its in-memory state; a
// new session with the same id starts from the defaults.
func TestClosedSessionForgotten(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.m.SetActive(ctx, "s", "files")
	s, _ := f.tk.Session("s")
	s.Close()
	if active, _ := f.m.Active(ctx, "s"); !slices.Equal(active, []string{"web"}) {
		t.Fatalf("after Close: %v, want the defaults", active)
	}
}

// TestDefinitionsChangeAtRunTime: a group added later starts with its
// default in every session, also in one that set its groups already; an
// updated group keeps what sessions set for it; the tools of a removed group
// that are in no other group become basic.
func TestDefinitionsChangeAtRunTime(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.m.SetActive(ctx, "s", "files"); err != nil {
		t.Fatal(err)
	}
	if err := f.m.Add(groups.Group{Name: "clock", Description: "Time.", Tools: []string{"now"}, Active: true}); err != nil {
		t.Fatal(err)
	}
	for _, session := range []string{"s", "fresh"} {
		if active, _ := f.m.Active(ctx, session); !slices.Contains(active, "clock") {
			t.Fatalf("%s: a group added active is not: %v", session, active)
		}
	}
	// web was switched off in s; its default changes to off and back on.
	for _, on := range []bool{false, true} {
		if err := f.m.Update(groups.Group{Name: "web", Description: "The web.", Tools: []string{"web_get"}, Active: on}); err != nil {
			t.Fatal(err)
		}
		if active, _ := f.m.Active(ctx, "s"); slices.Contains(active, "web") {
			t.Fatalf("Update (default %v) overrode the session's own state: %v", on, active)
		}
		if active, _ := f.m.Active(ctx, "fresh"); slices.Contains(active, "web") != on {
			t.Fatalf("Update (default %v) not seen by a session that never set web: %v", on, active)
		}
	}
	// grep stays in search (inactive); read_file and list_dir become basic.
	if _, err := f.m.SetActive(ctx, "s", "clock"); err != nil {
		t.Fatal(err)
	}
	if err := f.m.Remove("files"); err != nil {
		t.Fatal(err)
	}
	if got, want := f.visible(t, "s"), []string{"read_file", "list_dir", "now", "reset_tools"}; !slices.Equal(got, want) {
		t.Fatalf("after Remove: %v, want %v", got, want)
	}
	if rs := f.run(t, "s", call("1", "read_file", `{}`), call("2", "grep", `{}`)); rs[0].State != events.StateSuccess || rs[1].State != events.StateError {
		t.Fatalf("after Remove: read_file %s, grep %s", rs[0].State, rs[1].State)
	}
}

// TestMetaToolSharedAndCurrent: sessions with the same active groups share
// one reset_tools (its schema is compiled once), and each session's follows
// its own groups.
func TestMetaToolSharedAndCurrent(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	meta := func(session string) *toolkit.Tool {
		s, _ := f.tk.Session(session)
		tools, err := s.Tools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return tools[len(tools)-1]
	}
	a, b := meta("a"), meta("b")
	if a != b || meta("a") != a {
		t.Fatal("sessions with the same groups got reset_tools built again")
	}
	f.m.Activate(ctx, "b", "files")
	if mb := meta("b"); mb == a || !strings.Contains(mb.Spec().Description, "- files (ACTIVE now)") ||
		!strings.Contains(meta("a").Spec().Description, "- files (inactive)") {
		t.Fatalf("descriptions:\na: %s\nb: %s", meta("a").Spec().Description, mb.Spec().Description)
	}
	f.m.Deactivate(ctx, "b", "files")
	if meta("b") != a {
		t.Fatal("back to the same groups, a new reset_tools")
	}
	// New definitions, new tool.
	f.m.Update(groups.Group{Name: "web", Description: "The whole web.", Tools: []string{"web_get"}, Active: true})
	if ma := meta("a"); ma == a || !strings.Contains(ma.Spec().Description, "The whole web.") {
		t.Fatalf("after Update: %s", ma.Spec().Description)
	}
}

// TestToolsChanged: the tools a change made visible or hid, not every tool
// of the groups it switched: a tool still visible through another active
// group neither came nor went.
func TestToolsChanged(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.m.Activate(ctx, "s", "search"); err != nil {
		t.Fatal(err)
	}
	ch, err := f.m.Activate(ctx, "s", "files")
	if err != nil {
		t.Fatal(err)
	}
	if added, removed := f.m.ToolsChanged(ch); !slices.Equal(added, []string{"read_file", "list_dir"}) || removed != nil {
		t.Fatalf("files on with search on: added %v, removed %v", added, removed)
	}
	ch, _ = f.m.SetActive(ctx, "s")
	if added, removed := f.m.ToolsChanged(ch); added != nil || !slices.Equal(removed, []string{"read_file", "list_dir", "web_get", "grep"}) {
		t.Fatalf("all off: added %v, removed %v", added, removed)
	}
	// ToolsOf lists the registered tools only.
	f.tk.Remove("list_dir")
	if got := f.m.ToolsOf("files"); !slices.Equal(got, []string{"read_file", "grep"}) {
		t.Fatalf("ToolsOf(files) = %v", got)
	}
}
