package interceptors_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// memGrants is a GrantStore in memory, shared by two Permissions as a
// key-value bucket is shared by two processes.
type memGrants struct {
	mu   sync.Mutex
	kept map[string][]interceptors.Grant
	fail error
}

func (m *memGrants) Grants(_ context.Context, session string) ([]interceptors.Grant, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return nil, m.fail
	}
	return slices.Clone(m.kept[session]), nil
}

func (m *memGrants) AddGrants(_ context.Context, session string, gs []interceptors.Grant) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	if m.kept == nil {
		m.kept = map[string][]interceptors.Grant{}
	}
	m.kept[session] = append(m.kept[session], gs...)
	return nil
}

// TestGrantsKeptAcrossARestart: an AlwaysAllow given in one process (a
// toolkit and its Permissions) holds in the next one that shares the
// store, for that session only; without WithGrantStore it was gone with
// the process, and the same write asked again.
func TestGrantsKeptAcrossARestart(t *testing.T) {
	store := &memGrants{}
	first := newPermFixture(t, interceptors.WithGrantStore(store))
	run := first.start("s", permCall("w1", "write", `{"path":"a"}`))
	req := first.nextAsk(t)
	if err := first.perms.Approve(req.Session, req.CallID, interceptors.AlwaysAllow()); err != nil {
		t.Fatal(err)
	}
	if r := run.Wait()[0]; r.State != events.StateSuccess {
		t.Fatalf("approved write: %s %q", r.State, r.Text())
	}
	if got, _ := store.Grants(context.Background(), "s"); len(got) != 1 || got[0].Tool != "write" {
		t.Fatalf("kept grants: %+v", got)
	}

	// The process "restarts": a new toolkit and Permissions, the same store.
	second := newPermFixture(t, interceptors.WithGrantStore(store), interceptors.WithApprovalTimeout(50*time.Millisecond))
	s, _ := second.tk.Session("s")
	if r := s.Run(context.Background(), []toolkit.Call{permCall("w2", "write", `{"path":"b"}`)})[0]; r.State != events.StateSuccess {
		t.Fatalf("a write the person allowed for the session, after the restart: %s %q", r.State, r.Text())
	}
	other, _ := second.tk.Session("other")
	if r := other.Run(context.Background(), []toolkit.Call{permCall("w3", "write", `{"path":"c"}`)})[0]; !errors.Is(r.Err, interceptors.ErrNoDecision) {
		t.Fatalf("another session's write ran without asking: %s %q", r.State, r.Text())
	}
}

// TestGrantStoreBadData: grants a store gives back that name no tool, or
// whose arguments are not JSON, allow nothing; a store that cannot be read
// leaves the session without grants (its calls ask).
func TestGrantStoreBadData(t *testing.T) {
	store := &memGrants{kept: map[string][]interceptors.Grant{
		"s": {{Tool: ""}, {Tool: "write", Args: json.RawMessage(`{not json`)}},
	}}
	f := newPermFixture(t, interceptors.WithGrantStore(store), interceptors.WithApprovalTimeout(50*time.Millisecond))
	s, _ := f.tk.Session("s")
	if r := s.Run(context.Background(), []toolkit.Call{permCall("w1", "write", `{"path":"a"}`)})[0]; !errors.Is(r.Err, interceptors.ErrNoDecision) {
		t.Fatalf("a bad kept grant allowed a write: %s %q", r.State, r.Text())
	}
	broken := &memGrants{fail: errors.New("bucket gone"), kept: map[string][]interceptors.Grant{"s": {{Tool: "write"}}}}
	g := newPermFixture(t, interceptors.WithGrantStore(broken), interceptors.WithApprovalTimeout(50*time.Millisecond))
	s, _ = g.tk.Session("s")
	if r := s.Run(context.Background(), []toolkit.Call{permCall("w1", "write", `{"path":"a"}`)})[0]; !errors.Is(r.Err, interceptors.ErrNoDecision) {
		t.Fatalf("an unreadable store allowed a write: %s %q", r.State, r.Text())
	}
}
