package durable_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/toolstream/toolstream/durable"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
)

// TestSessionStateKept: grants and loaded skills written through one
// Store are read back through another on the same bucket (a process
// started again), per session, each kept once; concurrent writers lose
// nothing (compare-and-set).
func TestSessionStateKept(t *testing.T) {
	ctx := context.Background()
	js := natstest.JetStream(t)
	a, err := durable.New(ctx, js, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := durable.New(ctx, js, "")
	if err != nil {
		t.Fatal(err)
	}
	if gs, err := b.Grants(ctx, "s"); err != nil || gs != nil {
		t.Fatalf("grants of a new session: %v %v", gs, err)
	}
	w := interceptors.Grant{Tool: "write_note"}
	u := interceptors.Grant{Tool: "edit", Under: "notes", Args: json.RawMessage(`{"a":1}`)}
	if err := a.AddGrants(ctx, "s", []interceptors.Grant{w}); err != nil {
		t.Fatal(err)
	}
	if err := a.AddGrants(ctx, "s", []interceptors.Grant{w, u}); err != nil {
		t.Fatal(err)
	}
	gs, err := b.Grants(ctx, "s")
	if err != nil || len(gs) != 2 || gs[0].Tool != "write_note" || gs[1].Under != "notes" || string(gs[1].Args) != `{"a":1}` {
		t.Fatalf("grants read back: %+v %v", gs, err)
	}
	if gs, _ := b.Grants(ctx, "other"); gs != nil {
		t.Fatalf("another session's grants: %+v", gs)
	}

	var wg sync.WaitGroup
	for _, st := range []*durable.Store{a, b} {
		for _, name := range []string{"x", "y", "z"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := st.AddSkillLoaded(ctx, "s", name); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	names, err := b.SkillsLoaded(ctx, "s")
	slices.Sort(names)
	if err != nil || !slices.Equal(names, []string{"x", "y", "z"}) {
		t.Fatalf("skills read back: %v %v", names, err)
	}
	if names, _ := a.SkillsLoaded(ctx, "other"); names != nil {
		t.Fatalf("another session's skills: %v", names)
	}
}
