package main

import (
	"slices"
	"testing"
)

// TestCount: on the sample, a.go -> b.go and a.go -> c.go point forward,
// b.go -> a.go and c.go -> b.go back (alphabetical order); a.go and b.go
// refer to each other; the field b.go reads is no reference.
func TestCount(t *testing.T) {
	r, err := count(".", "./testdata/sample")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range r.refs {
		s := x.from + ">" + x.to
		if x.back {
			s += " back"
		}
		got = append(got, s)
	}
	want := []string{"a.go>b.go", "a.go>c.go", "b.go>a.go back", "c.go>b.go back"}
	if !slices.Equal(got, want) || r.back != 2 || r.mutual != 1 || r.orderFrom != "alphabetical" {
		t.Fatalf("refs %v, back %d, mutual %d (%s); want %v, 2 back, 1 mutual", got, r.back, r.mutual, r.orderFrom, want)
	}
}

// TestReadingOrder: the stated order first, files it does not name after
// it alphabetically, names that are no file of the package ignored.
func TestReadingOrder(t *testing.T) {
	order, from := readingOrderOf([]string{"a.go", "b.go", "c.go", "d.go"}, "c.go gone.go a.go")
	if want := []string{"c.go", "a.go", "b.go", "d.go"}; !slices.Equal(order, want) || from != "stated" {
		t.Fatalf("order %v (%s), want %v", order, from, want)
	}
}
