package skills

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/internal/memo"
	"github.com/toolstream/toolstream/internal/tracehook"
	"github.com/toolstream/toolstream/toolkit"
)

// LoadTool is the name of the tool the model loads skills with.
const LoadTool = "load_skill_through_path"

// EventType is the type of the session-level event a newly loaded skill
// emits. Its Data is a LoadEvent.
const EventType = "skills"

// LoadEvent is the Data of a "skills" event.
type LoadEvent struct {
	// Loaded are the skills loaded in the session so far, sorted.
	Loaded []string `json:"loaded"`
	// Skill is the skill just loaded, through Path, by the call Call.
	Skill string `json:"skill"`
	Path  string `json:"path"`
	Call  string `json:"call,omitempty"`
	// Groups are the tool groups the load switched on.
	Groups []string `json:"groups,omitempty"`
}

// Loader gives a toolkit's models the skills of a library: the
// load_skill_through_path tool, the per-session state of loaded skills,
// the tool groups bound to skills, and the prompt fragment that lists them.
type Loader struct {
	tk     *toolkit.Toolkit
	lib    *Library
	gm     *groups.Manager
	filter func(session string, s *Skill) bool
	limit  int64
	tool   *toolkit.Tool
	store  Store // WithStore: loads kept beyond the process; nil: none

	mu       sync.Mutex
	binds    map[string][]string         // skill -> groups bound by code
	loaded   map[string]map[string]bool  // session -> skills loaded
	sessLibs map[string]sessionLibrary   // session -> its own library (SetSessionLibrary)
	offered  map[string]map[string]entry // session -> every skill its tool offered, by name (the latest)

	tools memo.Cache[*toolkit.Tool] // the tool as sessions see it, by its skillId enum joined with NUL
}

// Option configures Install.
type Option func(*Loader)

// WithGroups lets loading a skill switch on the tool groups bound to it
// (front matter "tool-groups", or Loader.Bind), through the manager's
// per-session state, the same as reset_tools.
func WithGroups(m *groups.Manager) Option { return func(l *Loader) { l.gm = m } }

// WithFilter shows a session only the skills keep accepts. A skill that
// changed on disk since the session's list was made is held to it again as
// read now: a load that finds it no longer accepted is refused.
func WithFilter(keep func(session string, s *Skill) bool) Option {
	return func(l *Loader) { l.filter = keep }
}

// WithResourceLimit sets the largest resource returned: text beyond it is
// cut (and says so), binary files beyond it are refused. Default
// 256 KiB.
func WithResourceLimit(n int64) Option { return func(l *Loader) { l.limit = n } }

// Install registers load_skill_through_path in the toolkit and makes each
// session see it with the skills it may load. Install groups first when
// skills bind tool groups. lib is the library every session shares; it may
// be nil when each session gets its own (SetSessionLibrary).
func Install(tk *toolkit.Toolkit, lib *Library, opts ...Option) (*Loader, error) {
	l := &Loader{tk: tk, lib: lib, limit: defaultResourceLimit, binds: map[string][]string{}, loaded: map[string]map[string]bool{},
		sessLibs: map[string]sessionLibrary{}, offered: map[string]map[string]entry{}}
	for _, o := range opts {
		o(l)
	}
	tool, err := toolkit.NewRawTool(toolkit.Spec{
		Name:            LoadTool,
		Description:     "Load a skill's instructions or one of its files.",
		ReadOnly:        true,
		ConcurrencySafe: false, // it may switch tool groups on for the calls after it
	}, []byte(`{"type":"object"}`), l.load)
	if err != nil {
		return nil, err
	}
	if err := tk.Add(tool); err != nil {
		return nil, fmt.Errorf("skills: registering %s: %w", LoadTool, err)
	}
	l.tool = tool
	tk.AddVisibility(visibility{l})
	return l, nil
}

// Bind binds tool groups to a skill: loading the skill switches them on.
// The groups must exist; the skill may come later (libraries reload).
func (l *Loader) Bind(skill string, groupNames ...string) error {
	if l.gm == nil {
		return errors.New("skills: Bind needs WithGroups")
	}
	for _, g := range groupNames {
		if !l.gm.Has(g) {
			return fmt.Errorf("%w %q", groups.ErrUnknownGroup, g)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, g := range groupNames {
		if !slices.Contains(l.binds[skill], g) {
			l.binds[skill] = append(l.binds[skill], g)
		}
	}
	return nil
}

// Loaded returns the skills a session has loaded, sorted.
func (l *Loader) Loaded(session string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Sorted(maps.Keys(l.loaded[session]))
}

// Skills returns the skills a session may load, sorted by name.
func (l *Loader) Skills(session string) []*Skill {
	es := l.entries(session)
	out := make([]*Skill, len(es))
	for i, e := range es {
		out[i] = e.s
	}
	return out
}

func skillNames(ss []*Skill) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Name
	}
	return out
}

func entryNames(es []entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.s.Name
	}
	return out
}

// visibleTools is toolkit.Visibility's Tools: the loader appears with the skills
// the session may load as its enum, or not at all when there are none.
func (l *Loader) visibleTools(ctx context.Context, s *toolkit.Session, tools []*toolkit.Tool) ([]*toolkit.Tool, error) {
	i := slices.IndexFunc(tools, func(t *toolkit.Tool) bool { return t.Name() == LoadTool })
	if i < 0 {
		return tools, nil
	}
	out := slices.Clone(tools)
	vis := l.entries(s.ID())
	l.offer(s.ID(), vis)
	if len(vis) == 0 {
		return slices.Delete(out, i, i+1), nil
	}
	t, err := l.toolFor(entryNames(vis))
	if err != nil {
		return nil, err
	}
	out[i] = t
	return out, nil
}

// resolve is toolkit.Visibility's Resolve: the loader runs as the session's
// variant, whose skillId enum lists the skills the session may load, so the
// engine refuses any other. Skills the session was offered before and no
// longer may load (removed on disk, or hidden by its filter since) stay in
// that enum, so that a call naming one is told what became of it rather
// than only that the name is not in a list.
func (l *Loader) resolve(ctx context.Context, s *toolkit.Session, t *toolkit.Tool) (*toolkit.Tool, error) {
	if t.Name() != LoadTool {
		return t, nil
	}
	vis := l.entries(s.ID())
	l.offer(s.ID(), vis)
	names := entryNames(vis)
	for _, e := range l.withdrawn(s.ID(), vis) {
		names = append(names, e.s.Name)
	}
	if len(names) == 0 {
		return nil, errors.New("there are no skills to load in this session")
	}
	slices.Sort(names)
	return l.toolFor(names)
}

// offer remembers the skills the session's tool offers now.
func (l *Loader) offer(session string, vis []entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.offered[session]
	if m == nil {
		m = map[string]entry{}
		l.offered[session] = m
	}
	for _, e := range vis {
		m[e.s.Name] = e
	}
}

// withdrawn returns the skills the session was offered that vis, what it
// may load now, lacks, sorted by name.
func (l *Loader) withdrawn(session string, vis []entry) []entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []entry
	for name, e := range l.offered[session] {
		if !slices.ContainsFunc(vis, func(v entry) bool { return v.s.Name == name }) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.s.Name, b.s.Name) })
	return out
}

// sessionClosed is the SessionClosed a toolkit.Visibility may have.
func (l *Loader) sessionClosed(session string) {
	l.mu.Lock()
	delete(l.loaded, session)
	delete(l.sessLibs, session)
	delete(l.offered, session)
	l.mu.Unlock()
}

// toolFor returns the tool as a session that may load the skills ids sees
// it. It depends only on the skills' names, so sessions with the same skills
// share one tool, built once (building means compiling its schema).
func (l *Loader) toolFor(ids []string) (*toolkit.Tool, error) {
	var key []byte
	for _, id := range ids {
		key = append(append(key, id...), 0)
	}
	return l.tools.Get(key, func() (*toolkit.Tool, error) { return l.buildTool(ids) })
}

// buildTool builds the tool with ids as the skillId enum.
func (l *Loader) buildTool(ids []string) (*toolkit.Tool, error) {
	schema, err := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"skillId": map[string]any{"type": "string", "enum": ids,
				"description": "The skill to load."},
			"path": map[string]any{"type": "string",
				"description": `"SKILL.md" for the skill's instructions, or the exact path of one of its files as the instructions name it (for example "references/guide.md"). Not ".", "./", a folder or an absolute path.`},
		},
		"required":             []string{"skillId", "path"},
		"additionalProperties": false,
	})
	if err != nil {
		return nil, err
	}
	return l.tool.Variant("Load a skill: its instructions (path \"SKILL.md\") or one of its files. "+
		"Skills are not tools: read a skill's instructions, then follow them with your tools. "+
		"Loading a skill may make more tools available; the result says which.", schema)
}

type loadArgs struct {
	SkillID string `json:"skillId"`
	Path    string `json:"path"`
}

// load is the tool's handler. Its arguments were checked against the
// session's variant of the tool: a skill the session may load, and a path.
func (l *Loader) load(ctx context.Context, raw json.RawMessage) (_ []events.Part, err error) {
	info, ok := toolkit.CallInfoFrom(ctx)
	if !ok {
		return nil, errors.New("load_skill_through_path must run inside a toolkit call")
	}
	vis := l.entries(info.Session)
	var args loadArgs
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, fmt.Errorf("the arguments must be {\"skillId\": string, \"path\": string}: %v", err)
	}
	// A span of its own when the toolkit is traced.
	ctx, op := tracehook.StartOp(ctx, "load_skill "+args.SkillID)
	defer func() { op.End(err) }()
	op.Set("toolstream.skill.name", args.SkillID)
	op.Set("toolstream.skill.path", args.Path)
	// The skill may have gone since the call was checked (a reload). Only
	// the session's own repositories are searched.
	i := slices.IndexFunc(vis, func(e entry) bool { return e.s.Name == args.SkillID })
	var this entry
	var rest []entry // what else the session may load, for errors
	if i >= 0 {
		this, rest = vis[i], slices.Delete(slices.Clone(vis), i, i+1)
	} else {
		// Offered before, gone now: refreshing it as it was offered says
		// what became of it (removed, broken, no longer for this session).
		w := l.withdrawn(info.Session, vis)
		j := slices.IndexFunc(w, func(e entry) bool { return e.s.Name == args.SkillID })
		if j < 0 {
			return nil, fmt.Errorf("unknown skill %q. Skills you can load: %s", args.SkillID, strings.Join(entryNames(vis), ", "))
		}
		this, rest = w[j], vis
	}
	lib := this.lib
	// One stat: a SKILL.md edited on disk is read again, a removed one is
	// an error.
	skill, err := lib.Refresh(this.s)
	if err == nil && skill != this.s && l.filter != nil && !l.filter(info.Session, skill) {
		// The skill as read now (a later repository's of the same name, or
		// one whose front matter changed) is not for this session.
		err = fmt.Errorf("%w: skill %q changed on disk and is no longer one this session can load", ErrSkillGone, skill.Name)
	}
	if err == nil && i < 0 {
		// Back on disk, yet not in what the session may load now.
		err = fmt.Errorf("%w: skill %q is no longer one this session can load", ErrSkillGone, skill.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot load skill %q: %w. Skills you can load: %s", args.SkillID, err, strings.Join(entryNames(rest), ", "))
	}
	if args.Path == "" {
		return nil, fmt.Errorf(`path is required: "SKILL.md" for the instructions of %q, or the path of one of its files`, skill.Name)
	}
	path := args.Path

	var text string
	if path == "SKILL.md" {
		text = instructions(skill)
	} else {
		res, err := lib.ReadResource(skill, path, l.limit)
		if errors.Is(err, ErrSkillGone) {
			return nil, fmt.Errorf("cannot load skill %q: %w. Skills you can load: %s", args.SkillID, err, strings.Join(entryNames(rest), ", "))
		}
		if err != nil {
			return nil, resourceError(lib, skill, path, err)
		}
		text = describeResource(skill, res)
	}
	// Only a successful load activates the skill's groups.
	activated, switched, err := l.activate(ctx, info, skill, path)
	if err != nil {
		return nil, err
	}
	op.Set("toolstream.groups.activated", switched)
	return []events.Part{events.Text(text + activated)}, nil
}

func instructions(s *Skill) string {
	return fmt.Sprintf("Skill %q loaded.\nDescription: %s\n\n<skill-instructions name=%q>\n%s\n</skill-instructions>",
		s.Name, s.Description, s.Name, s.Body)
}

func describeResource(s *Skill, r Resource) string {
	if r.Binary {
		return fmt.Sprintf("File %q of skill %q (%s, %d bytes), base64-encoded:\n%s",
			r.Path, s.Name, r.MediaType, r.Size, base64.StdEncoding.EncodeToString(r.Data))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "File %q of skill %q (%s, %d bytes):\n<skill-file path=%q>\n%s\n</skill-file>",
		r.Path, s.Name, r.MediaType, r.Size, r.Path, r.Data)
	if r.Truncated {
		fmt.Fprintf(&b, "\n[truncated: the file has %d bytes; only the first %d are shown]", r.Size, len(r.Data))
	}
	return b.String()
}

// resourceError turns a failed read into a message the model can act on:
// for a miss, the files it can ask for, SKILL.md first.
func resourceError(lib *Library, s *Skill, path string, err error) error {
	switch {
	case errors.Is(err, ErrNotFound):
		list, lerr := lib.Resources(s)
		if lerr != nil {
			return fmt.Errorf("no file %q in skill %q", path, s.Name)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "no file %q in skill %q. Its files:", path, s.Name)
		for i, p := range list {
			fmt.Fprintf(&b, "\n%d. %s", i+1, p)
		}
		return errors.New(b.String())
	case errors.Is(err, ErrBadPath), errors.Is(err, ErrTooLarge):
		return fmt.Errorf("cannot load %s from skill %q: %w", quoteShort(path), s.Name, err)
	}
	return fmt.Errorf("loading %s from skill %q: %w", quoteShort(path), s.Name, err)
}

// activate switches on the skill's bound groups, then records the skill as
// loaded in the session (emitting a "skills" event the first time), and
// reports the tools that became available.
func (l *Loader) activate(ctx context.Context, info toolkit.CallInfo, s *Skill, path string) (string, []string, error) {
	switched, report, err := l.switchOn(ctx, s)
	if err != nil {
		return "", nil, err
	}
	// The call's own session: looked up by id, one closed meanwhile would
	// be opened again.
	sess, ok := toolkit.SessionFrom(ctx)
	if !ok || sess.ID() != info.Session || sess.Toolkit() != l.tk {
		if sess, err = l.tk.Session(info.Session); err != nil {
			return "", nil, err
		}
	}
	if l.store != nil && !slices.Contains(l.Loaded(info.Session), s.Name) {
		if err := l.store.AddSkillLoaded(context.WithoutCancel(ctx), info.Session, s.Name); err != nil {
			return "", nil, fmt.Errorf("skills: recording that session %q loaded skill %q: %w", info.Session, s.Name, err)
		}
	}
	l.mu.Lock()
	set := l.loaded[info.Session]
	if set == nil {
		set = map[string]bool{}
		l.loaded[info.Session] = set
	}
	first := !set[s.Name]
	set[s.Name] = true
	loaded := slices.Sorted(maps.Keys(set))
	l.mu.Unlock()
	if sess.Closed() {
		// Close forgot the session's skills before this recorded one, or
		// after: forget them (again) so that nothing outlives it.
		l.mu.Lock()
		delete(l.loaded, info.Session)
		l.mu.Unlock()
		return "", nil, fmt.Errorf("%w: session %q was closed while skill %q was loading", toolkit.ErrClosed, info.Session, s.Name)
	}
	if !first {
		return report, switched, nil
	}
	if err := sess.Emit(ctx, EventType, LoadEvent{Loaded: loaded, Skill: s.Name, Path: path, Call: info.CallID, Groups: switched}); err != nil {
		return "", nil, err
	}
	return report, switched, nil
}

// switchOn switches on the existing groups bound to s (front matter may name
// any) for the call's session, and returns those that were off and the
// sentence for the model that says so and which tools came with them.
func (l *Loader) switchOn(ctx context.Context, s *Skill) (switched []string, report string, err error) {
	if l.gm == nil {
		return nil, "", nil
	}
	l.mu.Lock()
	bound := append(slices.Clone(s.Groups), l.binds[s.Name]...)
	l.mu.Unlock()
	var ch groups.Change
	for try := 0; ; try++ {
		bound = slices.DeleteFunc(bound, func(g string) bool { return !l.gm.Has(g) })
		if len(bound) == 0 {
			return nil, "", nil
		}
		ch, err = l.gm.ActivateForCall(ctx, "skill", bound...)
		// A group removed since the check is skipped, as one that never
		// existed is: check again (a few times, each a removal meanwhile).
		if errors.Is(err, groups.ErrUnknownGroup) && try < 3 {
			continue
		}
		break
	}
	if err != nil || len(ch.Activated) == 0 {
		return nil, "", err
	}
	// The model is told of the groups it can switch itself; a code-only
	// group stays unnamed (the model must not learn it exists), its tools
	// are simply available.
	if named := l.modelGroups(ch.Activated); len(named) > 0 {
		report = fmt.Sprintf("\n\nThis skill switched on the tool group(s) %s.", strings.Join(named, ", "))
	}
	if added, _ := l.gm.ToolsChanged(ch); len(added) > 0 {
		slices.Sort(added)
		if report == "" {
			report = "\n\nThis skill made tools available."
		}
		report += fmt.Sprintf(" Now available: %s.", strings.Join(added, ", "))
	}
	return ch.Activated, report, nil
}

// modelGroups returns the names of those groups the model may see (not
// Group.CodeOnly).
func (l *Loader) modelGroups(names []string) []string {
	codeOnly := map[string]bool{}
	for _, g := range l.gm.Groups() {
		if g.CodeOnly {
			codeOnly[g.Name] = true
		}
	}
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return codeOnly[n] })
}

// Prompt returns the system-prompt fragment that lists the skills a
// session may load and says how to load them. The caller decides where it
// goes. It is empty when there are no skills.
func (l *Loader) Prompt(session string) string {
	vis := l.Skills(session)
	if len(vis) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Skills\n\n")
	b.WriteString("Skills are instructions, with files, that extend what you can do. A skill is not a tool and cannot be called. ")
	fmt.Fprintf(&b, "To use one, load its instructions with %s(skillId=\"<id>\", path=\"SKILL.md\") and follow them; ", LoadTool)
	b.WriteString("load the files they mention the same way, with their path. Loading a skill may make more tools available. ")
	b.WriteString("Load a skill when the task matches its description.\n\n<available-skills>\n")
	for _, s := range vis {
		fmt.Fprintf(&b, "<skill id=%q>\n<name>%s</name>\n<description>%s</description>\n</skill>\n", s.Name, s.Name, s.Description)
	}
	b.WriteString("</available-skills>\n")
	return b.String()
}

// visibility plugs a Loader into its toolkit: the toolkit.Visibility, with
// its optional SessionClosed, that only the engine calls.
type visibility struct{ l *Loader }

func (v visibility) Tools(ctx context.Context, s *toolkit.Session, tools []*toolkit.Tool) ([]*toolkit.Tool, error) {
	return v.l.visibleTools(ctx, s, tools)
}

func (v visibility) Resolve(ctx context.Context, s *toolkit.Session, t *toolkit.Tool) (*toolkit.Tool, error) {
	return v.l.resolve(ctx, s, t)
}

func (v visibility) SessionClosed(session string) { v.l.sessionClosed(session) }
