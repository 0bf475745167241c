package mcpbridge

import (
	"math"
	"testing"
)

func TestNextProgressMonotonic(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	steps := []struct {
		fraction  *float64
		wantTotal float64
		want      float64 // -1: just above the previous value
	}{
		{nil, 0, -1},       // a message before any fraction: no total yet
		{f(0.25), 100, 25}, // percent of the work
		{f(0.25), 100, -1}, // same fraction again: still moves
		{f(0.1), 100, -1},  // a fraction that went back: still moves
		{nil, 100, -1},     // a message after fractions: the total stays
		{f(2), 100, 100},   // clamped to the whole
		{f(math.NaN()), 100, -1},
	}
	var last, total float64
	for i, s := range steps {
		next, tot := nextProgress(last, total, s.fraction)
		if next <= last {
			t.Fatalf("step %d: progress %v after %v", i, next, last)
		}
		if s.want >= 0 && next != s.want {
			t.Errorf("step %d: progress %v, want %v", i, next, s.want)
		}
		if s.want < 0 && next != math.Nextafter(last, math.Inf(1)) {
			t.Errorf("step %d: progress %v, want just above %v", i, next, last)
		}
		if tot != s.wantTotal {
			t.Errorf("step %d: total %v, want %v", i, tot, s.wantTotal)
		}
		last, total = next, tot
	}
}
