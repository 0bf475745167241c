package groups_test

import (
	"context"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/toolkit"
)

// benchSession: a session with the files group active, in a toolkit with no
// observer.
func benchSession(b *testing.B) *toolkit.Session {
	tk := toolkit.New()
	b.Cleanup(func() { tk.Close(context.Background()) })
	for _, name := range []string{"read_file", "list_dir", "web_get", "now"} {
		tk.Add(toolkit.MustTool(toolkit.Spec{Name: name, Description: "the " + name + " tool"},
			func(ctx context.Context, _ struct{}) (string, error) { return "ok", nil }))
	}
	m, err := groups.Install(tk)
	if err != nil {
		b.Fatal(err)
	}
	m.Add(
		groups.Group{Name: "files", Description: "Read local files.", Tools: []string{"read_file", "list_dir"}},
		groups.Group{Name: "web", Description: "Fetch web pages.", Tools: []string{"web_get"}, Active: true},
	)
	if _, err := m.Activate(context.Background(), "s", "files"); err != nil {
		b.Fatal(err)
	}
	s, _ := tk.Session("s")
	return s
}

// BenchmarkCall: a one-call batch to a basic tool and to a tool of an active
// group; the difference is the per-call visibility check.
func BenchmarkCall(b *testing.B) {
	for _, tool := range []string{"now", "read_file"} {
		b.Run(tool, func(b *testing.B) {
			s := benchSession(b)
			calls := []toolkit.Call{{ID: "1", Name: tool}}
			b.ReportAllocs()
			for b.Loop() {
				if r := s.Run(context.Background(), calls)[0]; r.State != events.StateSuccess {
					b.Fatal(r.Text())
				}
			}
		})
	}
}

// BenchmarkDefinitions: a session's tool list, with reset_tools as the
// session sees it.
func BenchmarkDefinitions(b *testing.B) {
	s := benchSession(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Definitions(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
