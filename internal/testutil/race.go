//go:build race

package testutil

// Race is true when the tests run under the race detector, which makes
// handling megabytes of content ten to twenty times slower: tests that
// prove something holds for large content use smaller sizes then, and
// .ci/run also runs them at full size without the detector.
const Race = true
