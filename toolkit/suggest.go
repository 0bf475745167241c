package toolkit

import (
	"cmp"
	"slices"
	"strings"
)

// maxListed bounds how many tool names an unknown-tool error lists.
const maxListed = 30

// unknownTool builds the error for a call to a tool that is not registered,
// naming the closest registered tools.
func unknownTool(name string, tools []*Tool) *UnknownToolError {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.spec.Name
	}
	e := &UnknownToolError{Name: name, Suggestions: suggest(name, names, 3)}
	if len(names) > maxListed {
		names = append(names[:maxListed:maxListed], "...")
	}
	e.Available = names
	return e
}

// suggest returns up to n candidates close to name: by edit distance
// (ignoring case), or containing it, or contained in it.
func suggest(name string, candidates []string, n int) []string {
	type scored struct {
		name string
		dist int
	}
	lname := strings.ToLower(truncate(name, 128))
	limit := max(2, len(lname)/3)
	var found []scored
	for _, c := range candidates {
		lc := strings.ToLower(c)
		d := editDistance(lname, lc)
		if d > limit && lname != "" && (strings.Contains(lc, lname) || strings.Contains(lname, lc)) {
			d = limit // a substring match is a good hint whatever its length
		}
		if d <= limit {
			found = append(found, scored{c, d})
		}
	}
	slices.SortStableFunc(found, func(a, b scored) int {
		return cmp.Or(cmp.Compare(a.dist, b.dist), cmp.Compare(a.name, b.name))
	})
	out := make([]string, 0, min(n, len(found)))
	for _, s := range found[:min(n, len(found))] {
		out = append(out, s.name)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
