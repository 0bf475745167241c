package groups_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/toolkit"
)

// FuzzToolSearch: whatever the query and limit, tool_search answers with a
// result or an error the model can read, never a panic; a result lists at
// most limit groups, only inactive ones, and a refusal names what to fix.
func FuzzToolSearch(f *testing.F) {
	for _, seed := range []struct {
		q     string
		limit int
	}{
		{"read files", 5}, {"", 1}, {"   ", 3}, {"the to a", 2}, {"grep", 20}, {"GREP grep Grep", 1},
		{"fil", 2}, {"fi", 2}, {"é", 1}, {"\x00\xff", 4}, {"web pages", 0}, {"x", 21}, {"x", -1},
		{strings.Repeat("a", 501), 5}, {"ab\u202ecd files", 3}, {"read_file list-dir", 9},
	} {
		f.Add(seed.q, seed.limit)
	}
	fx := newFixture(f, groups.WithToolSearch())
	s, _ := fx.tk.Session("fuzz")
	f.Fuzz(func(t *testing.T, q string, limit int) {
		args, _ := json.Marshal(map[string]any{"query": q, "limit": limit})
		r := s.Run(context.Background(), []toolkit.Call{{ID: "f", Name: groups.SearchTool, Args: args}})[0]
		text := r.Text()
		switch r.State {
		case events.StateSuccess:
			got := ranked(text)
			if len(got) > limit {
				t.Fatalf("%q limit %d: %d groups\n%s", q, limit, len(got), text)
			}
			for _, g := range got {
				if g == "web" { // active by default
					t.Fatalf("%q: active group listed\n%s", q, text)
				}
			}
		case events.StateError:
			valid := utf8.ValidString(q) && utf8.RuneCountInString(q) <= groups.MaxSearchQuery && q != ""
			inRange := limit >= 1 && limit <= groups.MaxSearchResults
			if valid && inRange && !strings.Contains(text, "has no word to search for") {
				t.Fatalf("%q limit %d refused: %q", q, limit, text)
			}
			if text == "" {
				t.Fatal("an error with no message")
			}
		default:
			t.Fatalf("%q: state %s %q", q, r.State, text)
		}
	})
}
