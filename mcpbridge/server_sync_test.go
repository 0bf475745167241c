package mcpbridge_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/toolkit"
)

// TestServerConcurrentSync: two Syncs that overlap leave tools/list as the
// toolkit is after both. The one that read the definitions first applied
// them last, and took back the tool the other had just listed.
func TestServerConcurrentSync(t *testing.T) {
	tk := srvToolkit(t)
	s := srvNew(t, tk)
	cs := srvConnect(t, s, nil, "2025-11-25")
	apply := mcpbridge.SyncInTwo(s)
	// The first Sync read the definitions: a tool comes, and its
	// registrant syncs.
	if err := tk.Add(toolkit.MustTool(toolkit.Spec{Name: "extra", Description: "New."},
		func(context.Context, struct{}) (string, error) { return "new", nil })); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := apply(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(srvToolNames(t, cs), ","); got != "extra,noop,slow,steps,weather" {
		t.Fatalf("tools/list after both Syncs = %s", got)
	}
}
