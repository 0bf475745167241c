package groups_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/toolkit"
)

// listingBytes is the size of a session's tool definitions as JSON: what a
// model is sent for its tool list on every turn.
func listingBytes(tb testing.TB, tk *toolkit.Toolkit) int {
	s, _ := tk.Session("listing")
	defs, err := s.Definitions(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	b, err := json.Marshal(defs)
	if err != nil {
		tb.Fatal(err)
	}
	return len(b)
}

// BenchmarkToolSearchListing: the listing cost of 1,000 tools (100 groups
// of 10, and 3 basic tools) shown at once, against the same toolkit with
// groups and tool_search and no group active (basic + tool_search +
// reset_tools), and against groups without tool_search. Sizes are JSON
// bytes of the definitions, tokens approximated as bytes/4.
func BenchmarkToolSearchListing(b *testing.B) {
	all, _ := bigToolkit(b, false, false)
	searched, _ := bigToolkit(b, true, true)
	grouped, _ := bigToolkit(b, false, true)
	nAll, nSearch, nGroups := listingBytes(b, all), listingBytes(b, searched), listingBytes(b, grouped)
	for b.Loop() {
		listingBytes(b, searched)
	}
	b.ReportMetric(float64(nAll), "all-bytes")
	b.ReportMetric(float64(nAll)/4, "all-tokens")
	b.ReportMetric(float64(nSearch), "search-bytes")
	b.ReportMetric(float64(nSearch)/4, "search-tokens")
	b.ReportMetric(float64(nGroups), "groups-only-bytes")
	b.ReportMetric(float64(nAll)/float64(nSearch), "all/search")
}

// BenchmarkToolSearchQuery: one tool_search call through a session, on
// 1,000 tools in 100 groups, the queries of TestToolSearchRanksTheRightGroup
// in turn.
func BenchmarkToolSearchQuery(b *testing.B) {
	tk, _ := bigToolkit(b, true, true)
	s, _ := tk.Session("s")
	queries := []string{"refund a payment", "calendar invitations", "export_invoice", "kubernetes pods",
		"email", "invoi", "Wire TRANSFERS between bank accounts", "dna gene annotations"}
	calls := make([][]toolkit.Call, len(queries))
	for i, q := range queries {
		calls[i] = []toolkit.Call{{ID: "q", Name: groups.SearchTool}}
		calls[i][0].Args = json.RawMessage(`{"query": ` + quote(q) + `}`)
	}
	b.ReportAllocs()
	i := 0
	start := time.Now()
	for b.Loop() {
		if r := s.Run(context.Background(), calls[i%len(calls)])[0]; r.State != toolkit.StateSuccess {
			b.Fatal(r.Text())
		}
		i++
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(i), "µs/query")
}
