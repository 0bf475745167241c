package groups_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/toolkit"
)

// hookStore runs before once, at the start of the first Update, then
// behaves as the store it wraps: it opens the window between a change
// reading the group definitions and the store applying it.
type hookStore struct {
	groups.Store
	fired  atomic.Bool
	before func()
}

func (s *hookStore) Update(ctx context.Context, session string, fn func(map[string]bool) (map[string]bool, error)) (map[string]bool, error) {
	if s.before != nil && !s.fired.Swap(true) {
		s.before() // may update the store itself: not under a sync.Once
	}
	return s.Store.Update(ctx, session, fn)
}

// Forget passes Session.Close on to the store it wraps.
func (s *hookStore) Forget(session string) {
	if f, ok := s.Store.(interface{ Forget(string) }); ok {
		f.Forget(session)
	}
}

// TestResetToolsSeesGroupAddedMeanwhile: a group added (active by default)
// and then switched off by code while a reset_tools call is on its way to
// the store stays off. reset_tools used the definitions it read before the
// store update, so its "every other group off" did not name the new group,
// which fell back to its default and came back on: a group nobody asked for,
// and a report that did not list it.
func TestResetToolsSeesGroupAddedMeanwhile(t *testing.T) {
	hs := &hookStore{Store: groups.NewMemoryStore()}
	f := newFixture(t, groups.WithStore(hs))
	ctx := context.Background()
	if err := f.tk.Add(toolkit.MustTool(toolkit.Spec{Name: "deploy", Description: "deploy"},
		func(context.Context, struct{}) (string, error) { return "deployed", nil })); err != nil {
		t.Fatal(err)
	}
	hs.before = func() {
		if err := f.m.Add(groups.Group{Name: "ops", Description: "Operate.", Tools: []string{"deploy"}, Active: true}); err != nil {
			t.Error(err)
		}
		if _, err := f.m.Deactivate(ctx, "s", "ops"); err != nil {
			t.Error(err)
		}
	}
	r := f.run(t, "s", call("m", "reset_tools", `{"files": true}`))[0]
	if r.State != events.StateSuccess {
		t.Fatalf("reset_tools: %s %q", r.State, r.Text())
	}
	if active, _ := f.m.Active(ctx, "s"); !slices.Equal(active, []string{"files"}) {
		t.Fatalf("active after reset_tools {files}: %v, want [files] (the report said %q)", active, r.Text())
	}
	if vis := f.visible(t, "s"); slices.Contains(vis, "deploy") {
		t.Fatalf("deploy visible after ops was switched off and reset_tools kept only files: %v", vis)
	}
}

// TestResetToolsRacingClose: a reset_tools call still on its way to the
// store when its session is closed neither brings the session back to life
// in the toolkit nor leaves state behind for it: a new session with the same
// id starts from the defaults.
func TestResetToolsRacingClose(t *testing.T) {
	hs := &hookStore{Store: groups.NewMemoryStore()}
	f := newFixture(t, groups.WithStore(hs))
	ctx := context.Background()
	var closeFirst atomic.Pointer[toolkit.Session] // closed just before reset_tools' handler runs
	if err := f.tk.Use(toolkit.Interceptor{Name: "close-first", Tools: []string{groups.MetaTool},
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
			if s := closeFirst.Load(); s != nil {
				s.Close()
			}
			return next(ctx, inv)
		}}); err != nil {
		t.Fatal(err)
	}
	for _, when := range []string{"before the handler", "in the store update"} {
		t.Run(when, func(t *testing.T) {
			s, _ := f.tk.Session("s")
			hs.fired.Store(false)
			if when == "in the store update" {
				hs.before = func() { s.Close() }
				closeFirst.Store(nil)
			} else {
				hs.before = nil
				closeFirst.Store(s)
			}
			r := s.Run(ctx, []toolkit.Call{call("m", "reset_tools", `{"files": true}`)})[0]
			if r.State != events.StateError || !errors.Is(r.Err, toolkit.ErrClosed) {
				t.Errorf("reset_tools in a session closed meanwhile: %s %q, want an error saying it was closed", r.State, r.Text())
			}
			if ids := f.tk.Sessions(); slices.Contains(ids, "s") {
				t.Errorf("the closed session is open again after its reset_tools ended: %v", ids)
			}
			if active, _ := f.m.Active(ctx, "s"); !slices.Equal(active, []string{"web"}) {
				t.Errorf("a new session \"s\" starts with %v, want the defaults [web]", active)
			}
			if s2, _ := f.tk.Session("s"); s2 != nil {
				s2.Close()
			}
		})
	}
}
