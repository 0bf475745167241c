package skills_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/skills"
	"github.com/toolstream/toolstream/toolkit"
)

type loaderFixture struct {
	tk  *toolkit.Toolkit
	gm  *groups.Manager
	ld  *skills.Loader
	lib *skills.Library
	fs  fstest.MapFS
	rec *testutil.Recorder
}

func skillFile(name, desc, extra, body string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte("---\nname: " + name + "\ndescription: " + desc + "\n" + extra + "---\n" + body + "\n")}
}

func newLoaderFixture(t *testing.T, opts ...skills.Option) *loaderFixture {
	t.Helper()
	return newLoaderFixtureWith(t, nil, nil, opts...)
}

// newLoaderFixtureWith is newLoaderFixture with more toolkit options (after
// the recorder) and options for the groups manager.
func newLoaderFixtureWith(t *testing.T, tkOpts []toolkit.Option, gOpts []groups.Option, opts ...skills.Option) *loaderFixture {
	t.Helper()
	f := &loaderFixture{rec: &testutil.Recorder{}}
	f.fs = fstest.MapFS{
		"analysis/SKILL.md":            skillFile("analysis", "Analyse data.", "tool-groups: [stats]\n", "Use mean, then plot."),
		"analysis/references/howto.md": {Data: []byte("# How to\nstep one\n")},
		"analysis/img/chart.png":       {Data: []byte("\x89PNG\r\n\x1a\n\x00\x00binary")},
		"analysis/big.txt":             {Data: []byte(strings.Repeat("é", 40))},
		"writing/SKILL.md":             skillFile("writing", "Write prose.", "", "Be brief."),
		"secret/SKILL.md":              skillFile("secret", "Internal only.", "", "Hidden."),
		"outside.txt":                  {Data: []byte("SENTINEL outside any skill")},
	}
	lib, err := skills.NewLibrary(skills.Repository{Name: "test", FS: f.fs})
	if err != nil {
		t.Fatal(err)
	}
	f.lib = lib
	f.tk = toolkit.New(append([]toolkit.Option{toolkit.WithInlineObserver(f.rec)}, tkOpts...)...)
	t.Cleanup(func() { f.tk.Close(context.Background()) })
	for _, name := range []string{"mean", "plot", "now"} {
		f.tk.Add(toolkit.MustTool(toolkit.Spec{Name: name, ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (string, error) {
			return name + " ran", nil
		}))
	}
	if f.gm, err = groups.Install(f.tk, gOpts...); err != nil {
		t.Fatal(err)
	}
	if err := f.gm.Add(
		groups.Group{Name: "stats", Description: "Statistics.", Tools: []string{"mean"}},
		groups.Group{Name: "charts", Description: "Charts.", Tools: []string{"plot"}},
	); err != nil {
		t.Fatal(err)
	}
	f.ld, err = skills.Install(f.tk, lib, append([]skills.Option{skills.WithGroups(f.gm), skills.WithResourceLimit(32)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *loaderFixture) load(t *testing.T, session, skill, path string) toolkit.Result {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"skillId": skill, "path": path})
	s, _ := f.tk.Session(session)
	return s.Run(context.Background(), []toolkit.Call{{ID: "load-" + skill, Name: skills.LoadTool, Args: args}})[0]
}

func (f *loaderFixture) tools(t *testing.T, session string) []toolkit.Definition {
	t.Helper()
	s, _ := f.tk.Session(session)
	defs, err := s.Definitions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return defs
}

func names(defs []toolkit.Definition) []string {
	var out []string
	for _, d := range defs {
		out = append(out, d.Name)
	}
	return out
}

// TestLoadActivatesBoundGroups: loading a skill returns its instructions,
// switches on the groups bound to it (front matter and code), says which
// tools came, and records the load with events.
func TestLoadActivatesBoundGroups(t *testing.T) {
	f := newLoaderFixture(t)
	if err := f.ld.Bind("analysis", "charts"); err != nil {
		t.Fatal(err)
	}
	if got := names(f.tools(t, "s")); !slices.Equal(got, []string{"now", "load_skill_through_path", "reset_tools"}) {
		t.Fatalf("before: %v", got)
	}
	r := f.load(t, "s", "analysis", "SKILL.md")
	if r.State != events.StateSuccess {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	for _, want := range []string{`Skill "analysis" loaded.`, "Use mean, then plot.", `<skill-instructions name="analysis">`,
		"switched on the tool group(s) stats, charts. Now available: mean, plot."} {
		if !strings.Contains(r.Text(), want) {
			t.Errorf("result lacks %q:\n%s", want, r.Text())
		}
	}
	if got := names(f.tools(t, "s")); !slices.Equal(got, []string{"mean", "plot", "now", "load_skill_through_path", "reset_tools"}) {
		t.Fatalf("after: %v", got)
	}
	if got := f.ld.Loaded("s"); !slices.Equal(got, []string{"analysis"}) {
		t.Fatalf("loaded %v", got)
	}
	sk := f.rec.OfType(skills.EventType)
	if len(sk) != 1 || string(sk[0].Data) != `{"loaded":["analysis"],"skill":"analysis","path":"SKILL.md","call":"load-analysis","groups":["stats","charts"]}` {
		t.Fatalf("skills events %v", sk)
	}
	gr := f.rec.OfType(groups.EventType)
	if len(gr) != 1 || !strings.Contains(string(gr[0].Data), `"by":"skill","call":"load-analysis"`) {
		t.Fatalf("groups events %v", gr)
	}
	// Loading again: no new skills event, nothing newly switched on.
	r = f.load(t, "s", "analysis", "SKILL.md")
	if strings.Contains(r.Text(), "switched on") || len(f.rec.OfType(skills.EventType)) != 1 {
		t.Fatalf("second load: %q", r.Text())
	}
	// Another session is untouched.
	if got := names(f.tools(t, "other")); slices.Contains(got, "mean") {
		t.Fatalf("other session: %v", got)
	}
}

// TestSkillToolInTheSameBatch: the loader is serial, so a tool that only the
// skill makes visible works in the calls after it in the same batch.
func TestSkillToolInTheSameBatch(t *testing.T) {
	f := newLoaderFixture(t)
	s, _ := f.tk.Session("s")
	rs := s.Run(context.Background(), []toolkit.Call{
		{ID: "1", Name: "mean"},
		{ID: "2", Name: skills.LoadTool, Args: []byte(`{"skillId":"analysis","path":"SKILL.md"}`)},
		{ID: "3", Name: "mean"},
	})
	if rs[0].State != events.StateError || rs[2].State != events.StateSuccess {
		t.Fatalf("mean before %s, after %s (%q)", rs[0].State, rs[2].State, rs[2].Text())
	}
}

func TestLoadErrors(t *testing.T) {
	f := newLoaderFixture(t)
	for _, tc := range []struct{ skill, path, want string }{
		{"nope", "SKILL.md", `skillId: must be one of "analysis", "secret", "writing"; got "nope"`},
		{"", "SKILL.md", `skillId: must be one of "analysis", "secret", "writing"; got ""`},
		{"analysis", "", `path is required: "SKILL.md" for the instructions of "analysis"`},
		{"analysis", "missing.md", "no file \"missing.md\" in skill \"analysis\". Its files:\n1. SKILL.md\n2. big.txt\n3. img/chart.png\n4. references/howto.md"},
		{"analysis", "../outside.txt", "cannot load"},
		{"analysis", "/etc/passwd", "cannot load"},
		{"analysis", "./SKILL.md", "cannot load"},
		{"analysis", "references", "cannot load"},
		{"analysis", "a\x00b", "cannot load"},
	} {
		r := f.load(t, "s", tc.skill, tc.path)
		if r.State != events.StateError || !strings.Contains(r.Text(), tc.want) {
			t.Errorf("%q %q: %s\n%s", tc.skill, tc.path, r.State, r.Text())
		}
		if strings.Contains(r.Text(), "SENTINEL") {
			t.Fatalf("a file outside the skill was read: %q", r.Text())
		}
	}
	if len(f.ld.Loaded("s")) != 0 || len(f.rec.OfType(groups.EventType)) != 0 {
		t.Fatal("a failed load activated something")
	}
	// Unknown arguments are refused too, by the schema the session was shown.
	s, _ := f.tk.Session("s")
	r := s.Run(context.Background(), []toolkit.Call{{ID: "x", Name: skills.LoadTool, Args: []byte(`{"skillId":"analysis","path":"SKILL.md","extra":1}`)}})[0]
	if r.State != events.StateError || !strings.Contains(r.Text(), `extra: is not an allowed property; allowed: path, skillId`) {
		t.Fatalf("%q", r.Text())
	}
}

func TestLoadResources(t *testing.T) {
	f := newLoaderFixture(t)
	r := f.load(t, "s", "analysis", "references/howto.md")
	if r.State != events.StateSuccess || !strings.Contains(r.Text(), "step one") || !strings.Contains(r.Text(), `<skill-file path="references/howto.md">`) {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	r = f.load(t, "s", "analysis", "img/chart.png")
	if r.State != events.StateSuccess || !strings.Contains(r.Text(), "(image/png, 16 bytes), base64-encoded:\niVBORw0KGgoAAGJpbmFyeQ==") {
		t.Fatalf("binary: %q", r.Text())
	}
	r = f.load(t, "s", "analysis", "big.txt") // 80 bytes of "é", limit 32
	if r.State != events.StateSuccess || !strings.Contains(r.Text(), strings.Repeat("é", 16)+"\n</skill-file>") ||
		!strings.Contains(r.Text(), "[truncated: the file has 80 bytes; only the first 32 are shown]") {
		t.Fatalf("truncated: %q", r.Text())
	}
	// A file load counts as loading the skill.
	if got := f.ld.Loaded("s"); !slices.Equal(got, []string{"analysis"}) {
		t.Fatalf("loaded %v", got)
	}
}

// TestSkillSchemaAndFilter: the loader's skillId enum holds the skills a
// session may see; filtered sessions see fewer, and a session with none
// does not see the loader at all.
func TestSkillSchemaAndFilter(t *testing.T) {
	f := newLoaderFixture(t, skills.WithFilter(func(session string, s *skills.Skill) bool {
		return s.Name != "secret" && session != "nobody"
	}))
	enum := func(session string) []string {
		for _, d := range f.tools(t, session) {
			if d.Name == skills.LoadTool {
				var sch struct {
					Properties struct {
						SkillID struct {
							Enum []string `json:"enum"`
						} `json:"skillId"`
					} `json:"properties"`
					Required []string `json:"required"`
				}
				json.Unmarshal(d.Parameters, &sch)
				return sch.Properties.SkillID.Enum
			}
		}
		return nil
	}
	if got := enum("s"); !slices.Equal(got, []string{"analysis", "writing"}) {
		t.Fatalf("enum %v", got)
	}
	if got := names(f.tools(t, "nobody")); slices.Contains(got, skills.LoadTool) {
		t.Fatalf("a session without skills sees the loader: %v", got)
	}
	if r := f.load(t, "s", "secret", "SKILL.md"); r.State != events.StateError || strings.Contains(r.Text(), "Hidden.") {
		t.Fatalf("filtered skill loaded: %q", r.Text())
	}
	// A reload picks up a new skill.
	f.fs["new/SKILL.md"] = skillFile("fresh", "Just added.", "", "New.")
	if err := f.lib.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := enum("s"); !slices.Contains(got, "fresh") {
		t.Fatalf("after reload: %v", got)
	}
}

func TestPrompt(t *testing.T) {
	f := newLoaderFixture(t, skills.WithFilter(func(_ string, s *skills.Skill) bool { return s.Name != "secret" }))
	p := f.ld.Prompt("s")
	for _, want := range []string{
		"## Skills", `load_skill_through_path(skillId="<id>", path="SKILL.md")`, "<available-skills>",
		"<skill id=\"analysis\">\n<name>analysis</name>\n<description>Analyse data.</description>\n</skill>",
		`<skill id="writing">`,
	} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "secret") {
		t.Errorf("prompt lists a filtered skill:\n%s", p)
	}
}

func TestBindErrors(t *testing.T) {
	f := newLoaderFixture(t)
	if err := f.ld.Bind("analysis", "nope"); err == nil {
		t.Fatal("binding an unknown group")
	}
	tk := toolkit.New()
	defer tk.Close(context.Background())
	ld, err := skills.Install(tk, f.lib)
	if err != nil {
		t.Fatal(err)
	}
	if err := ld.Bind("analysis", "stats"); err == nil {
		t.Fatal("Bind without WithGroups")
	}
}

// TestLoadReportsOnlyNewTools: the tools a load reports are those that came
// with it, not every tool of the groups it switched on: plot is visible
// through charts already.
func TestLoadReportsOnlyNewTools(t *testing.T) {
	f := newLoaderFixture(t)
	if err := f.gm.Add(groups.Group{Name: "viz", Description: "Visualise.", Tools: []string{"plot", "mean"}}); err != nil {
		t.Fatal(err)
	}
	if err := f.ld.Bind("analysis", "viz"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.gm.Activate(context.Background(), "s", "charts"); err != nil {
		t.Fatal(err)
	}
	r := f.load(t, "s", "analysis", "SKILL.md")
	if want := "This skill switched on the tool group(s) stats, viz. Now available: mean."; !strings.HasSuffix(r.Text(), want) {
		t.Fatalf("result ends %q, want %q", r.Text()[strings.LastIndex(r.Text(), "\n"):], want)
	}
}

// TestLoaderSessions: a session that may load no skill is refused a call to
// the loader; a closed session's loaded skills are forgotten, so loading
// again in a session with the same id is a first load.
func TestLoaderSessions(t *testing.T) {
	f := newLoaderFixture(t, skills.WithFilter(func(session string, _ *skills.Skill) bool { return session != "nobody" }))
	if r := f.load(t, "nobody", "writing", "SKILL.md"); r.State != events.StateError ||
		!errors.Is(r.Err, toolkit.ErrUnavailable) || !strings.Contains(r.Text(), "there are no skills to load in this session") {
		t.Fatalf("nobody: %s %q", r.State, r.Text())
	}
	f.load(t, "s", "writing", "SKILL.md")
	s, _ := f.tk.Session("s")
	s.Close()
	if got := f.ld.Loaded("s"); len(got) != 0 {
		t.Fatalf("after Close: loaded %v", got)
	}
	f.load(t, "s", "writing", "SKILL.md")
	if got := f.ld.Loaded("s"); !slices.Equal(got, []string{"writing"}) || len(f.rec.OfType(skills.EventType)) != 2 {
		t.Fatalf("after Close and a new load: loaded %v, %d skills events", got, len(f.rec.OfType(skills.EventType)))
	}
}

// flakyStore is a groups.Store whose updates fail while failing is set.
type flakyStore struct {
	groups.Store
	failing atomic.Bool
}

func (s *flakyStore) Update(ctx context.Context, session string, fn func(map[string]bool) (map[string]bool, error)) (map[string]bool, error) {
	if s.failing.Load() {
		return nil, errors.New("store unavailable")
	}
	return s.Store.Update(ctx, session, fn)
}

// TestFailedLoadIsNotALoad: when the skill's groups cannot be switched on,
// the load fails and the skill is not recorded as loaded; the next load
// that succeeds is the first, and its "skills" event reaches NATS.
func TestFailedLoadIsNotALoad(t *testing.T) {
	ctx := context.Background()
	bus, err := natsbus.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close(ctx)
	got := make(chan *events.Event, 4)
	sub, err := bus.Subscribe(bus.Subjects().Call("s", "", skills.EventType), func(ev *events.Event) { got <- ev })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	bus.Conn().Flush()

	store := &flakyStore{Store: groups.NewMemoryStore()}
	store.failing.Store(true)
	f := newLoaderFixtureWith(t, []toolkit.Option{toolkit.WithInlineObserver(bus.Publisher())}, []groups.Option{groups.WithStore(store)})
	if r := f.load(t, "s", "analysis", "SKILL.md"); r.State != events.StateError || !strings.Contains(r.Text(), "store unavailable") {
		t.Fatalf("with the store down: %s %q", r.State, r.Text())
	}
	if loaded := f.ld.Loaded("s"); len(loaded) != 0 {
		t.Fatalf("a failed load recorded %v", loaded)
	}
	store.failing.Store(false)
	if r := f.load(t, "s", "analysis", "SKILL.md"); r.State != events.StateSuccess {
		t.Fatalf("with the store up: %s %q", r.State, r.Text())
	}
	select {
	case ev := <-got:
		if want := `{"loaded":["analysis"],"skill":"analysis","path":"SKILL.md","call":"load-analysis","groups":["stats"]}`; string(ev.Data) != want {
			t.Fatalf("skills event %s, want %s", ev.Data, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no skills event on NATS")
	}
}

// TestLoaderToolShared: sessions that may load the same skills share one
// loader tool (its schema is compiled once); other skills, another tool.
func TestLoaderToolShared(t *testing.T) {
	f := newLoaderFixture(t, skills.WithFilter(func(session string, s *skills.Skill) bool {
		return s.Name != "secret" || session == "admin"
	}))
	loader := func(session string) *toolkit.Tool {
		s, _ := f.tk.Session(session)
		tools, err := s.Tools(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(tools, func(t *toolkit.Tool) bool { return t.Name() == skills.LoadTool })
		return tools[i]
	}
	a := loader("a")
	if loader("b") != a || loader("a") != a {
		t.Fatal("sessions with the same skills got the loader built again")
	}
	if admin := loader("admin"); admin == a || !strings.Contains(string(admin.Definition().Parameters), `"secret"`) || strings.Contains(string(a.Definition().Parameters), `"secret"`) {
		t.Fatalf("enums:\nadmin: %s\na: %s", admin.Definition().Parameters, a.Definition().Parameters)
	}
}
