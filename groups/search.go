package groups

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// SearchTool is the name of the meta tool that searches the tools of
// inactive groups (see WithToolSearch).
const SearchTool = "tool_search"

// Limits of a tool_search call, enforced by its schema.
const (
	// maxSearchQuery is the longest query, in characters.
	maxSearchQuery = 500
	// maxSearchResults is the largest limit (groups returned).
	maxSearchResults = 20
	// defaultSearchResults is the limit when the model gives none.
	defaultSearchResults = 5
)

// Ranking weights: a query word found in a name (the group's or one of its
// tools') counts more than one found in a description.
const (
	weightNameExact  = 6
	weightNamePrefix = 4
	weightDescExact  = 2
	weightDescPrefix = 1
)

// searchSchema is tool_search's input schema; the engine checks every call
// against it, so the handler sees a query of 1 to 500 characters and a
// limit from 1 to 20.
var searchSchema = fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "query": {"type": "string", "minLength": 1, "maxLength": %d,
      "description": "Words describing the tools you need: what they act on and what they do (for example \"refund a payment\" or \"calendar events\")."},
    "limit": {"type": "integer", "minimum": 1, "maximum": %d, "default": %d,
      "description": "How many groups to return, best first."}
  },
  "required": ["query"],
  "additionalProperties": false
}`, maxSearchQuery, maxSearchResults, defaultSearchResults)

// WithToolSearch registers the tool_search meta tool beside reset_tools, for
// toolkits with more tools than a model should see at once. The model
// searches the names and descriptions of the groups it has not activated,
// and of their tools, and gets the groups to switch on with reset_tools,
// best first. With it, reset_tools' listing names the inactive groups
// without their descriptions: tool_search is how the model finds what they
// hold.
//
// Ranking: the query and the texts are cut into words (letters and digits,
// lower-cased, a plural "s" dropped; common words such as "the" or "to" are
// left out of the query). For each query word a group takes its best match
// in its own name and description and its tools' names and descriptions:
// 6 for the word in a name, 4 for a name word that starts with it (3
// letters or more), 2 in a description, 1 for a description word that
// starts with it. A group's score is the sum over the query's distinct
// words; ties go to the group registered first. The same query on the same
// groups always gives the same answer.
func WithToolSearch() Option { return func(m *Manager) { m.searchOn = true } }

// installSearch registers tool_search.
func (m *Manager) installSearch() error {
	t, err := toolkit.NewRawTool(toolkit.Spec{
		Name: SearchTool,
		Description: "Search the tool groups that are not active for the tools you need, by words that describe them. " +
			"The result lists matching groups, best first, with their matching tools; switch the one you need on with " +
			MetaTool + ", keeping the groups you still use set to true.",
		ReadOnly:        true,
		ConcurrencySafe: true,
	}, []byte(searchSchema), m.searchTools)
	if err != nil {
		return err
	}
	if err := m.tk.Add(t); err != nil {
		return fmt.Errorf("groups: registering %s: %w", SearchTool, err)
	}
	m.search = t
	return nil
}

// searchIndex is the words of a catalog's groups and of their tools, built
// on the first search after a change of groups, and then only read.
type searchIndex struct {
	vocab []string    // every word, sorted
	posts [][]posting // per word of vocab: where it occurs
	tools [][]string  // per group (catalog order): its registered tools
	descs [][]string  // their descriptions
	base  []int       // per group: the index of its first tool in a flat numbering
	nt    int         // tools in the flat numbering
}

// posting is one occurrence of a word: in group g itself (t < 0) or its
// tool t, in a name or a description.
type posting struct {
	g, t int32
	name bool
}

// index returns c's search index, building it once.
func (m *Manager) index(c *catalog) *searchIndex {
	c.searchOnce.Do(func() { c.search = m.buildIndex(c) })
	return c.search
}

func (m *Manager) buildIndex(c *catalog) *searchIndex {
	ix := &searchIndex{base: make([]int, len(c.order))}
	type key struct {
		word string
		g, t int32
	}
	seen := map[key]bool{} // value: found in a name
	add := func(text string, g, t int, name bool) {
		for _, w := range words(text) {
			k := key{w, int32(g), int32(t)}
			if was, ok := seen[k]; !ok || (name && !was) {
				seen[k] = name
			}
		}
	}
	for gi, g := range c.order {
		ix.base[gi] = ix.nt
		if g.CodeOnly { // never found: the model does not see it
			ix.tools, ix.descs = append(ix.tools, nil), append(ix.descs, nil)
			continue
		}
		add(g.Name, gi, -1, true)
		add(g.Description, gi, -1, false)
		var names, descs []string
		for _, tn := range g.Tools {
			t, ok := m.tk.Tool(tn)
			if !ok {
				continue
			}
			ti := len(names)
			names, descs = append(names, tn), append(descs, t.Definition().Description)
			add(tn, gi, ti, true)
			add(descs[ti], gi, ti, false)
		}
		ix.tools, ix.descs = append(ix.tools, names), append(ix.descs, descs)
		ix.nt += len(names)
	}
	byWord := map[string][]posting{}
	for k, name := range seen {
		byWord[k.word] = append(byWord[k.word], posting{k.g, k.t, name})
	}
	for w, ps := range byWord {
		ix.vocab = append(ix.vocab, w)
		slices.SortFunc(ps, func(a, b posting) int { return cmp.Or(cmp.Compare(a.g, b.g), cmp.Compare(a.t, b.t)) })
	}
	slices.Sort(ix.vocab)
	ix.posts = make([][]posting, len(ix.vocab))
	for i, w := range ix.vocab {
		ix.posts[i] = byWord[w]
	}
	return ix
}

// stopWords are left out of queries: they occur everywhere and rank
// nothing.
var stopWords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "by": true,
	"can": true, "do": true, "for": true, "from": true, "how": true, "i": true, "in": true, "into": true,
	"is": true, "it": true, "me": true, "my": true, "need": true, "of": true, "on": true, "or": true,
	"some": true, "that": true, "the": true, "this": true, "to": true, "tool": true, "tools": true,
	"use": true, "want": true, "what": true, "which": true, "with": true, "you": true,
}

// words cuts text into lower-case words of letters and digits, a plural
// "s" dropped, in order of first occurrence, without repeats.
func words(text string) []string {
	var out []string
	for f := range strings.FieldsFuncSeq(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if len(f) > 3 && strings.HasSuffix(f, "s") && !strings.HasSuffix(f, "ss") {
			f = f[:len(f)-1]
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// hit is a group or tool with its score.
type hit struct {
	i     int
	score int
}

// rank scores every group of ix for the query words; it returns the
// groups with a score, best first, and per group its tools with a score,
// best first.
func (ix *searchIndex) rank(query []string) (groups []hit, tools map[int][]hit) {
	ng := len(ix.tools)
	gscore, gbest := make([]int, ng), make([]int, ng)
	tscore, tbest := make([]int, ix.nt), make([]int, ix.nt)
	var gtouched, ttouched []int
	for _, q := range query {
		lo, _ := slices.BinarySearch(ix.vocab, q)
		for i := lo; i < len(ix.vocab) && strings.HasPrefix(ix.vocab[i], q); i++ {
			exact := ix.vocab[i] == q
			if !exact && utf8.RuneCountInString(q) < 3 {
				break
			}
			for _, p := range ix.posts[i] {
				w := weight(p.name, exact)
				if gbest[p.g] == 0 {
					gtouched = append(gtouched, int(p.g))
				}
				gbest[p.g] = max(gbest[p.g], w)
				if p.t >= 0 {
					ti := ix.base[p.g] + int(p.t)
					if tbest[ti] == 0 {
						ttouched = append(ttouched, ti)
					}
					tbest[ti] = max(tbest[ti], w)
				}
			}
		}
		for _, g := range gtouched {
			gscore[g] += gbest[g]
			gbest[g] = 0
		}
		for _, t := range ttouched {
			tscore[t] += tbest[t]
			tbest[t] = 0
		}
		gtouched, ttouched = gtouched[:0], ttouched[:0]
	}
	byScore := func(a, b hit) int { return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.i, b.i)) }
	tools = map[int][]hit{}
	for g := range ng {
		if gscore[g] == 0 {
			continue
		}
		groups = append(groups, hit{g, gscore[g]})
		for t := range ix.tools[g] {
			if s := tscore[ix.base[g]+t]; s > 0 {
				tools[g] = append(tools[g], hit{t, s})
			}
		}
		slices.SortFunc(tools[g], byScore)
	}
	slices.SortFunc(groups, byScore)
	return groups, tools
}

func weight(name, exact bool) int {
	switch {
	case name && exact:
		return weightNameExact
	case name:
		return weightNamePrefix
	case exact:
		return weightDescExact
	}
	return weightDescPrefix
}

type searchArgs struct {
	Query string `json:"query"`
	Limit int    `json:"limit"`
}

// maxToolsShown is how many matching tools a result lists per group.
const maxToolsShown = 3

// maxDescShown cuts descriptions in results, in characters.
const maxDescShown = 160

// searchTools is tool_search's handler. Its arguments were checked against
// its schema: a query of 1 to 500 characters, a limit from 1 to 20.
func (m *Manager) searchTools(ctx context.Context, raw json.RawMessage) ([]events.Part, error) {
	info, ok := toolkit.CallInfoFrom(ctx)
	if !ok {
		return nil, errors.New(SearchTool + " must run inside a toolkit call")
	}
	var args searchArgs
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, fmt.Errorf(`the arguments must be {"query": string, "limit": integer}: %v`, err)
	}
	if args.Limit == 0 {
		args.Limit = defaultSearchResults
	}
	if args.Limit < 1 || args.Limit > maxSearchResults {
		return nil, fmt.Errorf("limit must be from 1 to %d, got %d", maxSearchResults, args.Limit)
	}
	if n := utf8.RuneCountInString(args.Query); n > maxSearchQuery {
		return nil, fmt.Errorf("the query is %d characters, more than %d: give a few words that describe the tools you need", n, maxSearchQuery)
	}
	query := slices.DeleteFunc(words(args.Query), func(w string) bool { return stopWords[w] })
	if len(query) == 0 {
		return nil, fmt.Errorf("the query %q has no word to search for: give words that describe the tools you need, such as \"refund payment\"", args.Query)
	}
	c := m.defs.Load()
	if len(c.shown) == 0 {
		return nil, errors.New("there are no tool groups to search")
	}
	state, err := m.store.Load(ctx, info.Session)
	if err != nil {
		return nil, err
	}
	on := active(c, state)
	onShown := c.shownOf(sortedKeys(on)) // CodeOnly groups are not the model's to know
	ix := m.index(c)
	ranked, tools := ix.rank(query)

	var b strings.Builder
	var inactive []hit
	var activeHits []string
	for _, h := range ranked {
		if on[c.order[h.i].Name] {
			activeHits = append(activeHits, c.order[h.i].Name)
		} else if len(inactive) < args.Limit {
			inactive = append(inactive, h)
		}
	}
	switch {
	case len(onShown) == len(c.shown):
		b.WriteString("Every tool group is active already: the tools you can use are all in your tool list.")
		return []events.Part{events.Text(b.String())}, nil
	case len(inactive) == 0:
		fmt.Fprintf(&b, "No inactive tool group matches %q. Try other words: what the tools act on or what they do.", args.Query)
	default:
		fmt.Fprintf(&b, "Inactive tool groups matching %q, best first:", args.Query)
		for n, h := range inactive {
			g := c.order[h.i]
			fmt.Fprintf(&b, "\n%d. %s: %s", n+1, g.Name, cut(g.Description))
			var shown []string
			for _, t := range tools[h.i][:min(len(tools[h.i]), maxToolsShown)] {
				shown = append(shown, fmt.Sprintf("%s (%s)", ix.tools[h.i][t.i], cut(ix.descs[h.i][t.i])))
			}
			if len(shown) > 0 {
				fmt.Fprintf(&b, "\n   Matching tools: %s", strings.Join(shown, "; "))
			}
			fmt.Fprintf(&b, "\n   All its tools: %s", strings.Join(ix.tools[h.i], ", "))
		}
	}
	if len(activeHits) > 0 {
		fmt.Fprintf(&b, "\nAlready active, their tools are in your list: %s.", strings.Join(activeHits, ", "))
	}
	if len(inactive) > 0 {
		fmt.Fprintf(&b, "\nTo use a group, call %s with it set to true", MetaTool)
		if len(onShown) > 0 {
			fmt.Fprintf(&b, ", and keep the active groups (%s) set to true if you still need them.", strings.Join(onShown, ", "))
		} else {
			b.WriteString(".")
		}
	}
	return []events.Part{events.Text(b.String())}, nil
}

// cut shortens a description for a search result, at a word boundary.
func cut(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= maxDescShown {
		return s
	}
	r := []rune(s)[:maxDescShown]
	if i := strings.LastIndexByte(string(r), ' '); i > maxDescShown/2 {
		return string(r)[:i] + "..."
	}
	return string(r) + "..."
}

// searchFields holds what a catalog keeps for tool_search.
type searchFields struct {
	searchOnce sync.Once
	search     *searchIndex
}
