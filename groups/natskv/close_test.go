package natskv_test

import (
	"context"
	"slices"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/groups/natskv"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

// closingStore closes a session at the start of its next Update.
type closingStore struct {
	*natskv.Store
	close func()
}

func (s *closingStore) Update(ctx context.Context, session string, fn func(map[string]bool) (map[string]bool, error)) (map[string]bool, error) {
	if c := s.close; c != nil {
		s.close = nil
		c()
	}
	return s.Store.Update(ctx, session, fn)
}

// TestResetToolsRacingCloseShared: with a shared store, a reset_tools call
// whose session closes while it runs keeps its change (other processes may
// serve the session; the store keeps closed sessions' state) and succeeds,
// and it does not open the session again in this process.
func TestResetToolsRacingCloseShared(t *testing.T) {
	ctx := context.Background()
	st, err := natskv.New(ctx, natstest.JetStream(t), "")
	if err != nil {
		t.Fatal(err)
	}
	cs := &closingStore{Store: st}
	tk := toolkit.New()
	t.Cleanup(func() { tk.Close(context.Background()) })
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "t"}, func(context.Context, struct{}) (string, error) { return "", nil }))
	m, err := groups.Install(tk, groups.WithStore(cs))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add(groups.Group{Name: "g", Description: "G.", Tools: []string{"t"}}); err != nil {
		t.Fatal(err)
	}
	s, _ := tk.Session("s")
	cs.close = s.Close
	r := s.Run(ctx, []toolkit.Call{{ID: "r", Name: groups.MetaTool, Args: []byte(`{"g": true}`)}})[0]
	if r.State != events.StateSuccess {
		t.Errorf("reset_tools: %s %q", r.State, r.Text())
	}
	if ids := tk.Sessions(); slices.Contains(ids, "s") {
		t.Errorf("the closed session is open again: %v", ids)
	}
	if got, err := m.Active(ctx, "s"); err != nil || !slices.Equal(got, []string{"g"}) {
		t.Errorf("the shared store has %v %v, want [g]", got, err)
	}
}
