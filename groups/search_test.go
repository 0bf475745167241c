package groups_test

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/toolkit"
)

var rankLine = regexp.MustCompile(`(?m)^(\d+)\. ([a-z0-9_-]+): `)

// ranked returns the groups a tool_search result lists, in order.
func ranked(text string) []string {
	var out []string
	for _, m := range rankLine.FindAllStringSubmatch(text, -1) {
		out = append(out, m[2])
	}
	return out
}

func search(t *testing.T, s *toolkit.Session, args string) toolkit.Result {
	t.Helper()
	return s.Run(context.Background(), []toolkit.Call{{ID: "q", Name: groups.SearchTool, Args: json.RawMessage(args)}})[0]
}

// TestToolSearchRanksTheRightGroup: on 1,000 tools in 100 groups, the group
// a query is about comes first, whether the words are in its name, its
// tools' names or only in its description.
func TestToolSearchRanksTheRightGroup(t *testing.T) {
	tk, _ := bigToolkit(t, true, true)
	s, _ := tk.Session("s")
	for _, tc := range []struct{ query, want string }{
		{"refund a payment", "billing"},                     // description words
		{"calendar invitations", "calendar"},                // name and description, plural dropped
		{"meeting", "video"},                                // in video's tool names, only in calendar's description
		{"export_invoice", "billing"},                       // a tool's exact name
		{"kubernetes pods", "containers"},                   // description and tool name
		{"email", "email"},                                  // the group's name beats newsletter's description
		{"invoi", "billing"},                                // a prefix of a tool name
		{"Wire TRANSFERS between bank accounts", "banking"}, // case, plural
		{"dna gene annotations", "genomics"},
		{"I need to find help center articles", "support"},
		{"thermostat lights", "home"},
		{"firewall rules", "network"},
		{"tax filing deadline", "tax"},
	} {
		r := search(t, s, `{"query": `+quote(tc.query)+`}`)
		if r.State != events.StateSuccess {
			t.Fatalf("%q: %s %q", tc.query, r.State, r.Text())
		}
		got := ranked(r.Text())
		if len(got) == 0 || got[0] != tc.want {
			t.Errorf("%q: ranked %v, want %s first\n%s", tc.query, got, tc.want, r.Text())
		}
		if len(got) > groups.DefaultSearchResults {
			t.Errorf("%q: %d groups, more than the default limit", tc.query, len(got))
		}
	}
	// The result names the matching tools and says how to switch the group on.
	text := search(t, s, `{"query": "export invoices", "limit": 1}`).Text()
	for _, want := range []string{
		`Inactive tool groups matching "export invoices", best first:`,
		"1. billing: Invoices, payments and refunds for customers.",
		"Matching tools: export_invoice (Export invoices as CSV.)",
		"All its tools: create_invoice, list_invoice,",
		"call reset_tools with it set to true.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("result lacks %q:\n%s", want, text)
		}
	}
	if got := ranked(text); len(got) != 1 {
		t.Errorf("limit 1 gave %v", got)
	}
}

// TestToolSearchSkipsActiveGroups: a search lists only groups to switch
// on; active ones that match are named as already there, and the way to
// keep them is said.
func TestToolSearchSkipsActiveGroups(t *testing.T) {
	tk, m := bigToolkit(t, true, true)
	s, _ := tk.Session("s")
	if _, err := m.Activate(context.Background(), "s", "billing"); err != nil {
		t.Fatal(err)
	}
	text := search(t, s, `{"query": "invoice payments tax"}`).Text()
	if got := ranked(text); slices.Contains(got, "billing") || len(got) == 0 || got[0] != "tax" {
		t.Fatalf("active group listed: %v\n%s", got, text)
	}
	if !strings.Contains(text, "Already active, their tools are in your list: billing.") ||
		!strings.Contains(text, "keep the active groups (billing) set to true") {
		t.Fatalf("%s", text)
	}
	// A query that matches nothing says so.
	text = search(t, s, `{"query": "zeppelin"}`).Text()
	if !strings.Contains(text, `No inactive tool group matches "zeppelin"`) || len(ranked(text)) != 0 {
		t.Fatalf("%s", text)
	}
	// The model follows the advice: reset_tools with the group found.
	if r := s.Run(context.Background(), []toolkit.Call{{ID: "r", Name: groups.MetaTool, Args: json.RawMessage(`{"billing": true, "tax": true}`)}})[0]; r.State != events.StateSuccess ||
		!strings.Contains(r.Text(), "<description>Tax returns, filings and deadlines.</description>") {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	if r := s.Run(context.Background(), []toolkit.Call{{ID: "c", Name: "get_return", Args: json.RawMessage(`{}`)}})[0]; r.State != events.StateSuccess {
		t.Fatalf("%q", r.Text())
	}
}

// TestToolSearchBadInput: the engine checks calls against the schema the
// model was shown, and the handler refuses a query without words; every
// refusal says what to send instead.
func TestToolSearchBadInput(t *testing.T) {
	tk, _ := bigToolkit(t, true, true)
	s, _ := tk.Session("s")
	huge := strings.Repeat("invoice ", 63) // 504 characters
	for _, tc := range []struct{ args, want string }{
		{`{"query": ""}`, "query: must be at least 1 character"},
		{`{"query": ` + quote(huge) + `}`, "query: must be at most 500 characters"},
		{`{"query": "  ,;  "}`, `the query "  ,;  " has no word to search for: give words that describe the tools you need`},
		{`{"query": "the to a"}`, "has no word to search for"},
		{`{"query": "invoice", "limit": 0}`, "limit: must be >= 1"},
		{`{"query": "invoice", "limit": 21}`, "limit: must be <= 20"},
		{`{"query": "invoice", "limit": 2.5}`, "limit: must be an integer"},
		{`{"query": "invoice", "limit": "5"}`, "limit: must be an integer"},
		{`{"limit": 3}`, "query: is required"},
		{`{"query": "invoice", "group": "billing"}`, "group: is not an allowed property"},
		{`"invoice"`, "must be a JSON object"},
	} {
		r := search(t, s, tc.args)
		if r.State != events.StateError || !strings.Contains(r.Text(), tc.want) {
			t.Errorf("%s:\n got %s %q\nwant %q", tc.args, r.State, r.Text(), tc.want)
		}
	}
}

// TestToolSearchSchemaShownIsEnforced: the session's tool list has
// tool_search (before reset_tools) with the schema the engine enforces, and
// no tool_search without groups.
func TestToolSearchSchemaShownIsEnforced(t *testing.T) {
	tk, _ := bigToolkit(t, true, true)
	s, _ := tk.Session("s")
	defs, err := s.Definitions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range defs {
		got = append(got, d.Name)
	}
	if !slices.Equal(got, []string{"now", "ask_user", "remember", "tool_search", "reset_tools"}) {
		t.Fatalf("tool list %v", got)
	}
	var sch struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	if err := json.Unmarshal(defs[3].Parameters, &sch); err != nil {
		t.Fatal(err)
	}
	if sch.Properties["query"]["maxLength"] != float64(groups.MaxSearchQuery) || sch.Properties["limit"]["maximum"] != float64(groups.MaxSearchResults) ||
		!slices.Equal(sch.Required, []string{"query"}) {
		t.Fatalf("schema %s", defs[3].Parameters)
	}

	// Without groups, no tool_search, and a call is refused.
	tk2 := toolkit.New()
	defer tk2.Close(context.Background())
	if _, err := groups.Install(tk2, groups.WithToolSearch()); err != nil {
		t.Fatal(err)
	}
	s2, _ := tk2.Session("s")
	if defs, _ := s2.Definitions(context.Background()); len(defs) != 0 {
		t.Fatalf("%v", defs)
	}
	if r := search(t, s2, `{"query": "x"}`); r.State != events.StateError || !strings.Contains(r.Text(), "no tool groups to search") {
		t.Fatalf("%s %q", r.State, r.Text())
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestToolSearchKeepsTheListingSmall: with tool_search, reset_tools names
// the inactive groups without their descriptions (tool_search finds what
// they hold) and describes the active ones, so the session's listing is a
// small fraction of the 1,000 tools'.
func TestToolSearchKeepsTheListingSmall(t *testing.T) {
	all, _ := bigToolkit(t, false, false)
	tk, m := bigToolkit(t, true, true)
	if _, err := m.Activate(context.Background(), "listing", "billing"); err != nil {
		t.Fatal(err)
	}
	s, _ := tk.Session("listing")
	defs, _ := s.Definitions(context.Background())
	meta := defs[len(defs)-1]
	if meta.Name != groups.MetaTool || !strings.Contains(meta.Description, "There are 100 groups; find the ones you need with tool_search") ||
		!strings.Contains(meta.Description, "- billing: Invoices, payments and refunds for customers.") ||
		strings.Contains(meta.Description, "Tax returns") || strings.Contains(string(meta.Parameters), "Tax returns") {
		t.Fatalf("reset_tools: %s\n%s", meta.Description, meta.Parameters)
	}
	var sch struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	json.Unmarshal(meta.Parameters, &sch)
	if len(sch.Properties) != 100 || string(sch.Properties["tax"]) != `{"type":"boolean"}` {
		t.Fatalf("properties: %d, tax %s", len(sch.Properties), sch.Properties["tax"])
	}
	if _, err := m.Deactivate(context.Background(), "listing", "billing"); err != nil {
		t.Fatal(err)
	}
	if a, g := listingBytes(t, all), listingBytes(t, tk); g*20 > a {
		t.Fatalf("listing with tool_search %d bytes, all tools %d: not 20 times smaller", g, a)
	}
}
