package main

import "testing"

// TestCount: package-level names and the methods of exported types
// (interface methods included) count; fields, unexported receivers, test
// files and internal packages do not.
func TestCount(t *testing.T) {
	counts, err := count("testdata/sample")
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != 1 || counts["."] != 7 {
		t.Fatalf("counts %v, want 7 for the sample package alone", counts)
	}
}
