package groups_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
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
// bytes of the definitions, tokens approximated as bytes/4; times are those
// of building each listing, the two interleaved.
func BenchmarkToolSearchListing(b *testing.B) {
	all, _ := bigToolkit(b, false, false)
	searched, _ := bigToolkit(b, true, true)
	grouped, _ := bigToolkit(b, false, true)
	nAll, nSearch, nGroups := listingBytes(b, all), listingBytes(b, searched), listingBytes(b, grouped)
	// Time to build each listing (definitions + JSON), interleaved.
	var allT, searchT time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		listingBytes(b, all)
		t1 := time.Now()
		listingBytes(b, searched)
		allT, searchT = allT+t1.Sub(t0), searchT+time.Since(t1)
		n++
	}
	b.ReportMetric(float64(allT.Microseconds())/float64(n), "µs/all-listing")
	b.ReportMetric(float64(searchT.Microseconds())/float64(n), "µs/search-listing")
	b.ReportMetric(float64(allT)/float64(searchT), "all/search-time")
	b.ReportMetric(float64(nAll), "all-bytes")
	b.ReportMetric(float64(nAll)/4, "all-tokens")
	b.ReportMetric(float64(nSearch), "search-bytes")
	b.ReportMetric(float64(nSearch)/4, "search-tokens")
	b.ReportMetric(float64(nGroups), "groups-only-bytes")
	b.ReportMetric(float64(nAll)/float64(nSearch), "all/search")
}

// BenchmarkToolSearchQuery: one tool_search call through a session, on
// 1,000 tools in 100 groups, the queries of TestToolSearchRanksTheRightGroup
// in turn, interleaved with a call to a basic tool that does nothing, so
// that the ratio (search over plain call) holds on a loaded machine.
func BenchmarkToolSearchQuery(b *testing.B) {
	tk, _ := bigToolkit(b, true, true)
	s, _ := tk.Session("s")
	queries := []string{"refund a payment", "calendar invitations", "export_invoice", "kubernetes pods",
		"email", "invoi", "Wire TRANSFERS between bank accounts", "dna gene annotations"}
	calls := make([][]toolkit.Call, len(queries))
	for i, q := range queries {
		calls[i] = []toolkit.Call{{ID: "q", Name: groups.SearchTool, Args: json.RawMessage(`{"query": ` + quote(q) + `}`)}}
	}
	plain := []toolkit.Call{{ID: "p", Name: "now", Args: json.RawMessage(`{}`)}}
	var searchT, plainT time.Duration
	i := 0
	for b.Loop() {
		t0 := time.Now()
		if r := s.Run(context.Background(), calls[i%len(calls)])[0]; r.State != events.StateSuccess {
			b.Fatal(r.Text())
		}
		t1 := time.Now()
		if r := s.Run(context.Background(), plain)[0]; r.State != events.StateSuccess {
			b.Fatal(r.Text())
		}
		searchT, plainT = searchT+t1.Sub(t0), plainT+time.Since(t1)
		i++
	}
	b.ReportMetric(float64(searchT.Microseconds())/float64(i), "µs/query")
	b.ReportMetric(float64(plainT.Microseconds())/float64(i), "µs/plain-call")
	b.ReportMetric(float64(searchT)/float64(plainT), "query/plain")
}
