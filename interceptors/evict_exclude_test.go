package interceptors_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// TestEvictExcludesFilesystemTools: with EvictExcludeFilesystemTools the
// seeds' file-system tools (exact names) keep their large results whole,
// deltas and result alike, and so does a tool the interceptor's Match
// leaves out; every other tool's large result is evicted.
func TestEvictExcludesFilesystemTools(t *testing.T) {
	big := strings.Repeat("0123456789abcdef\n", 200) // 3,400 bytes
	ev := interceptors.Evict(interceptors.EvictLimit(1024), evictDir(t.TempDir()), interceptors.EvictExcludeFilesystemTools())
	ev.Match = func(t *toolkit.Tool) bool { return t.Name() != "list_files" }
	tk, rec := evKit(t, ev)
	for _, name := range []string{"ls", "read_file", "write_file", "edit_file", "glob", "grep", "list_files", "Read_File", "read_files", "cat"} {
		testutil.Add(t, tk, toolkit.MustTool(toolkit.Spec{Name: name}, func(context.Context, struct{}) (string, error) { return big, nil }))
	}
	s := testutil.Session(t, tk, "s")
	for name, kept := range map[string]bool{
		"ls": true, "read_file": true, "write_file": true, "edit_file": true, "glob": true, "grep": true, "list_files": true,
		"Read_File": false, "read_files": false, "cat": false,
	} {
		r := icRun(t, s, testutil.Call("c-"+name, name, `{}`))
		evCheckDeltas(t, rec, r)
		_, evicted := r.Meta[interceptors.EvictMetaLocation]
		if kept && (r.Text() != big || evicted) {
			t.Errorf("%s: evicted (%d bytes shown), want it whole", name, len(r.Text()))
		}
		if !kept && (!evicted || !strings.Contains(r.Text(), "too large to show here")) {
			t.Errorf("%s: kept whole, want it evicted", name)
		}
	}
}
