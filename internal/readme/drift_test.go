package readme

import (
	"fmt"
	"strings"
)

// squeeze is a line as the comparison of a fragment with its source sees
// it: trimmed, and each run of white space inside one space (gofmt aligns
// comments by their neighbours, which differ in a fragment).
func squeeze(l string) string { return strings.Join(strings.Fields(l), " ") }

// lines are a text's lines, squeezed, without the blank lines at its ends.
func lines(text string) []string {
	ls := strings.Split(text, "\n")
	for i := range ls {
		ls[i] = squeeze(ls[i])
	}
	for len(ls) > 0 && ls[0] == "" {
		ls = ls[1:]
	}
	for len(ls) > 0 && ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

// drift returns "" when the fragment's lines are a contiguous run of
// src's (white space aside, as squeeze says), else where the nearest
// run parts from it, and how many lines of the fragment that run matched.
// src is named name, and its first line is line first there.
func drift(fragment, src, name string, first int) (string, int) {
	frag, all := lines(fragment), strings.Split(src, "\n")
	for i := range all {
		all[i] = squeeze(all[i])
	}
	if len(frag) == 0 {
		return "it is empty", 0
	}
	best, bestAt := -1, 0
	for s := range all {
		n := 0
		for n < len(frag) && s+n < len(all) && all[s+n] == frag[n] {
			n++
		}
		if n == len(frag) {
			return "", n
		}
		if n > best {
			best, bestAt = n, s
		}
	}
	if best == 0 {
		return fmt.Sprintf("its first line %q is nowhere in %s", frag[0], name), 0
	}
	got := "the end of " + name
	if bestAt+best < len(all) {
		got = fmt.Sprintf("%s:%d %q", name, first+bestAt+best, all[bestAt+best])
	}
	return fmt.Sprintf("its line %d %q differs from %s", best+1, frag[best], got), best
}
