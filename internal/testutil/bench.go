package testutil

import (
	"runtime"
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

// AlternateCollected is Alternate for two setups that allocate exactly
// the same, each pair of rounds starting after a garbage collection
// (untimed): no collection falls inside a pair that allocates less than the
// heap's minimum goal (4 MB), so the difference within a pair is the CPU
// cost the two setups differ by, without the noise of a collection that
// hits one round and not the other. It is fair only because both allocate
// alike: its callers check that they do, and compare setups that allocate
// differently with Alternate.
func AlternateCollected(b *testing.B, x, y func() float64) (xs, ys []float64) {
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		runtime.GC()
		b.StartTimer()
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

// Diffs returns ys[i] - xs[i]: two series Alternate measured, compared
// round by round so that what changes between rounds (the machine's load,
// its clock) cancels out within each pair.
func Diffs(xs, ys []float64) []float64 {
	d := make([]float64, min(len(xs), len(ys)))
	for i := range d {
		d[i] = ys[i] - xs[i]
	}
	return d
}

// TrimmedMean returns the mean of xs without its lowest and highest 10%
// (it sorts xs): the mean's use of every round, without the rare round a
// neighbouring process stretched.
func TrimmedMean(xs []float64) float64 {
	slices.Sort(xs)
	cut := len(xs) / 10
	xs = xs[cut : len(xs)-cut]
	if len(xs) == 0 {
		return 0
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}
