package testutil

import (
	"slices"
	"testing"
	"time"
)

// Alternate runs x and y in turn while b.Loop says so, each going first
// every other time so that neither always pays for the other's garbage,
// and returns what they returned, in order: the two series a side-by-side
// benchmark compares.
func Alternate(b *testing.B, x, y func() float64) (xs, ys []float64) {
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			xs = append(xs, x())
			ys = append(ys, y())
		} else {
			ys = append(ys, y())
			xs = append(xs, x())
		}
	}
	return xs, ys
}

// NsPer runs f n times and returns the nanoseconds one run took.
func NsPer(n int, f func()) float64 {
	t0 := time.Now()
	for range n {
		f()
	}
	return float64(time.Since(t0).Nanoseconds()) / float64(n)
}

// Quantile returns the q-quantile (0 to 1) of xs, which it sorts.
func Quantile(xs []float64, q float64) float64 {
	slices.Sort(xs)
	return xs[int(q*float64(len(xs)-1))]
}

// Median returns the median of xs, which it sorts.
func Median(xs []float64) float64 { return Quantile(xs, 0.5) }
