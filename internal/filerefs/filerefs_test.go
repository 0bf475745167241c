package main

import (
	"slices"
	"testing"
)

// TestRefs: on the sample, a.go refers to b.go and c.go, b.go back to a.go
// (B2 calls A) and c.go to b.go (M's receiver); the field b.go reads is no
// reference. a.go and b.go refer to each other: one of their references
// points back whatever the order, and the best order has no other.
func TestRefs(t *testing.T) {
	g, err := load(".", "./testdata/sample")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range g.refs {
		got = append(got, r.from+">"+r.to)
	}
	if want := []string{"a.go>b.go", "a.go>c.go", "b.go>a.go", "c.go>b.go"}; !slices.Equal(got, want) {
		t.Fatalf("refs %v, want %v", got, want)
	}
	if n := g.mutual(); n != 1 {
		t.Fatalf("%d pairs refer to each other, want 1", n)
	}
	if n := len(g.back(g.files)); n != 2 {
		t.Fatalf("alphabetically %d point back, want 2 (b.go>a.go, c.go>b.go)", n)
	}
	order := g.bestOrder()
	if back := g.back(order); len(back) != 1 {
		t.Fatalf("order %v: %d point back (%v), want 1", order, len(back), back)
	}
}

// TestBestOrderBreaksCycles: a cycle of three files and a file everyone
// uses: one reference of the cycle points back, no other.
func TestBestOrderBreaksCycles(t *testing.T) {
	g := &graph{files: []string{"a", "b", "c", "d"}, refs: []ref{
		{from: "a", to: "b"}, {from: "b", to: "c"}, {from: "c", to: "a"},
		{from: "a", to: "d"}, {from: "b", to: "d"}, {from: "c", to: "d"},
	}}
	order := g.bestOrder()
	if back := g.back(order); len(back) != 1 || order[3] != "d" {
		t.Fatalf("order %v: back %v, want one back reference and d last", order, back)
	}
}
