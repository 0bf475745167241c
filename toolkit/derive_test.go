package toolkit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

type noteIn struct {
	Folder string `json:"folder"`
	Text   string `json:"text"`
}

// deriveFixture: a parent with a typed "note" tool, a "ping" tool and a
// counting interceptor, and a sub-agent toolkit derived from it.
func deriveFixture(t *testing.T, opts ...toolkit.Option) (parent, sub *toolkit.Toolkit, parentRec *testutil.Recorder, seen *[]string) {
	t.Helper()
	parentRec = &testutil.Recorder{}
	parent = testutil.Kit(t, toolkit.WithInlineObserver(parentRec))
	testutil.Add(t, parent,
		testutil.Tool(t, toolkit.Spec{Name: "note"}, func(_ context.Context, in noteIn) (string, error) { return in.Folder + "/" + in.Text, nil }),
		testutil.Tool(t, toolkit.Spec{Name: "ping", ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (string, error) {
			d, _ := ctx.Deadline()
			if time.Until(d) < time.Minute {
				return "short deadline", nil
			}
			return "pong", nil
		}))
	seen = new([]string)
	if err := parent.Use(toolkit.Interceptor{Name: "log", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		*seen = append(*seen, "log:"+inv.Call.ID)
		return next(ctx, inv)
	}}); err != nil {
		t.Fatal(err)
	}
	sub = parent.Derive(opts...)
	t.Cleanup(func() { sub.Close(context.Background()) })
	return parent, sub, parentRec, seen
}

func run1(t *testing.T, tk *toolkit.Toolkit, ctx context.Context, id, name, args string) toolkit.Result {
	t.Helper()
	return testutil.Session(t, tk, "conv").Run(ctx, []toolkit.Call{testutil.Call(id, name, args)})[0]
}

func TestDeriveSharesToolsAndInterceptors(t *testing.T) {
	parent, sub, parentRec, seen := deriveFixture(t)
	ownRec := &testutil.Recorder{}
	remove := sub.ObserveInline(ownRec)
	defer remove()

	if toolkit.ParentOf(sub) != parent || toolkit.ParentOf(parent) != nil {
		t.Fatal("Parent is wrong")
	}
	// Registered once, callable in both; the interceptor runs in both.
	agent := toolkit.WithAgent(context.Background(), "sub")
	if r := run1(t, sub, agent, "s1", "note", `{"folder":"a","text":"x"}`); r.Text() != "a/x" {
		t.Fatalf("sub: %s %q", r.State, r.Text())
	}
	if r := run1(t, parent, context.Background(), "p1", "note", `{"folder":"a","text":"y"}`); r.Text() != "a/y" {
		t.Fatalf("parent: %s %q", r.State, r.Text())
	}
	if got := strings.Join(*seen, " "); got != "log:s1 log:p1" {
		t.Fatalf("interceptor saw %q", got)
	}
	// The parent's observers see the sub-agent's calls (with its agent);
	// the sub-agent's own observer sees only its own.
	if evs := parentRec.Of("s1"); len(evs) == 0 || evs[0].Agent != "sub" {
		t.Fatalf("the parent's observer got %d events of the sub-agent's call", len(evs))
	}
	if len(ownRec.Of("p1")) != 0 || len(ownRec.Of("s1")) == 0 {
		t.Fatalf("the sub-agent's observer: %d events of the parent's call, %d of its own", len(ownRec.Of("p1")), len(ownRec.Of("s1")))
	}

	// From now on each side changes alone.
	testutil.Add(t, sub, testutil.Tool(t, toolkit.Spec{Name: "only_sub"}, func(context.Context, struct{}) (string, error) { return "", nil }))
	parent.Remove("ping")
	if _, ok := parent.Tool("only_sub"); ok {
		t.Error("a tool registered on the sub-agent appeared in the parent")
	}
	if _, ok := sub.Tool("ping"); !ok {
		t.Error("removing a tool from the parent removed it from the sub-agent")
	}
	if err := sub.EnableInterceptor("log", false); err != nil {
		t.Fatal(err)
	}
	*seen = nil
	run1(t, sub, context.Background(), "s2", "ping", `{}`)
	run1(t, parent, context.Background(), "p2", "note", `{"folder":"a","text":"z"}`)
	if got := strings.Join(*seen, " "); got != "log:p2" {
		t.Fatalf("after switching it off in the sub-agent, the interceptor saw %q", got)
	}
}

func TestDeriveOwnLimitsAndPresets(t *testing.T) {
	parent, sub, _, _ := deriveFixture(t, toolkit.WithDefaultTimeout(5*time.Second))
	if r := run1(t, sub, context.Background(), "s1", "ping", `{}`); r.Text() != "short deadline" {
		t.Errorf("sub-agent with a 5s default timeout: %q", r.Text())
	}
	if r := run1(t, parent, context.Background(), "p1", "ping", `{}`); r.Text() != "pong" {
		t.Errorf("parent keeps its 2-minute default: %q", r.Text())
	}

	if err := sub.SetPresets("note", map[string]any{"folder": "scratch"}); err != nil {
		t.Fatal(err)
	}
	if r := run1(t, sub, context.Background(), "s2", "note", `{"folder":"home","text":"x"}`); r.Text() != "scratch/x" {
		t.Errorf("sub-agent's preset: %q", r.Text())
	}
	if r := run1(t, parent, context.Background(), "p2", "note", `{"folder":"home","text":"x"}`); r.Text() != "home/x" {
		t.Errorf("the parent got the sub-agent's preset: %q", r.Text())
	}
	params := func(tk *toolkit.Toolkit) string {
		tool, _ := tk.Tool("note")
		return string(tool.Definition().Parameters)
	}
	if strings.Contains(params(sub), "folder") || !strings.Contains(params(parent), "folder") {
		t.Errorf("schemas: sub %s, parent %s", params(sub), params(parent))
	}
	if err := sub.SetPresets("note", map[string]any{"nope": 1}); err == nil {
		t.Error("a preset that is not a property was accepted")
	}
	if err := sub.SetPresets("missing", nil); err == nil {
		t.Error("SetPresets of an unknown tool succeeded")
	}
}

func TestDeriveOwnGroups(t *testing.T) {
	parent, _, _, _ := deriveFixture(t)
	pg, err := groups.Install(parent)
	if err != nil {
		t.Fatal(err)
	}
	if err := pg.Add(groups.Group{Name: "notes", Description: "taking notes", Tools: []string{"note"}}); err != nil {
		t.Fatal(err)
	}
	sub := parent.Derive()
	defer sub.Close(context.Background())
	// By default the sub-agent sees what the parent's session sees.
	names := func(tk *toolkit.Toolkit) []string {
		defs, err := testutil.Session(t, tk, "conv").Definitions(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range defs {
			out = append(out, d.Name)
		}
		return out
	}
	if slices.Contains(names(sub), "note") {
		t.Fatalf("inherited visibility: the sub-agent sees %v", names(sub))
	}
	// Closing a sub-agent's session leaves the parent's groups alone.
	if _, err := pg.Activate(context.Background(), "conv", "notes"); err != nil {
		t.Fatal(err)
	}
	s, _ := sub.Session("conv")
	s.Close()
	if on, _ := pg.Active(context.Background(), "conv"); !slices.Contains(on, "notes") {
		t.Fatalf("closing the sub-agent's session reset the parent's groups: %v", on)
	}
	if _, err := pg.Deactivate(context.Background(), "conv", "notes"); err != nil {
		t.Fatal(err)
	}
	// Its own groups: the parent's visibility and meta tool out, its own in.
	sub.SetVisibility(nil)
	sub.Remove(groups.MetaTool)
	sg, err := groups.Install(sub)
	if err != nil {
		t.Fatal(err)
	}
	if err := sg.Add(groups.Group{Name: "notes", Description: "taking notes", Tools: []string{"note"}}); err != nil {
		t.Fatal(err)
	}
	r := run1(t, sub, context.Background(), "s1", groups.MetaTool, `{"notes":true}`)
	if r.IsError() || !slices.Contains(names(sub), "note") {
		t.Fatalf("reset_tools in the sub-agent: %s %q; it sees %v", r.State, r.Text(), names(sub))
	}
	if slices.Contains(names(parent), "note") {
		t.Fatalf("a group switched in the sub-agent is on in the parent: %v", names(parent))
	}
}

func TestDeriveClose(t *testing.T) {
	parent, sub, _, _ := deriveFixture(t)
	if err := sub.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := run1(t, parent, context.Background(), "p1", "ping", `{}`); r.State != events.StateSuccess {
		t.Fatalf("closing the sub-agent closed the parent: %s %q", r.State, r.Text())
	}

	// Closing the parent closes what was derived from it, running calls
	// included, and waits for them.
	sub2 := parent.Derive()
	started := make(chan struct{})
	testutil.Add(t, sub2, testutil.Tool(t, toolkit.Spec{Name: "wait"}, func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	}))
	s2 := testutil.Session(t, sub2, "conv")
	b := s2.Start(context.Background(), []toolkit.Call{testutil.Call("w", "wait", `{}`)})
	testutil.WaitFor(t, started, "the sub-agent's call to start")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := parent.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.Done():
	default:
		t.Fatal("parent.Close returned before the sub-agent's batch ended")
	}
	if r := b.Wait()[0]; r.State != events.StateInterrupted || !errors.Is(r.Err, toolkit.ErrClosed) {
		t.Fatalf("the sub-agent's call: %s %v", r.State, r.Err)
	}
	if _, err := sub2.Session("other"); !errors.Is(err, toolkit.ErrClosed) {
		t.Fatalf("the sub-agent is still open: %v", err)
	}
	late := parent.Derive()
	if _, err := late.Session("x"); !errors.Is(err, toolkit.ErrClosed) {
		t.Fatalf("derived from a closed toolkit: %v", err)
	}
}

// A researcher sub-agent shares the parent's tools without registering
// them again, with its own default timeout and its own preset.
func ExampleToolkit_Derive() {
	parent := toolkit.New()
	defer parent.Close(context.Background())
	parent.Add(toolkit.MustTool(toolkit.Spec{Name: "note"}, func(_ context.Context, in noteIn) (string, error) {
		return "saved " + in.Folder + "/" + in.Text, nil
	}))

	researcher := parent.Derive(toolkit.WithDefaultTimeout(30 * time.Second))
	defer researcher.Close(context.Background())
	researcher.SetPresets("note", map[string]any{"folder": "research"})

	sess, _ := researcher.Session("conv-1")
	ctx := toolkit.WithAgent(context.Background(), "researcher")
	r := sess.Run(ctx, []toolkit.Call{{ID: "c1", Name: "note", Args: []byte(`{"folder":"home","text":"x"}`)}})[0]
	fmt.Println(r.Text())
	// Output: saved research/x
}
