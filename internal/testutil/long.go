package testutil

import (
	"os"
	"testing"
)

// LongEnv is the switch that turns on the long tests: soaks, load and
// size tests, clusters, process kills and the browser. The README's test
// command leaves it off so that it stays quick; .ci/run turns it on.
const LongEnv = "TOOLSTREAM_LONG"

// Long skips t unless the long tests are on (LongEnv=1).
func Long(t testing.TB) {
	t.Helper()
	if !LongOn() {
		t.Skipf("a long test: %s=1 runs it (.ci/run does)", LongEnv)
	}
}

// LongOn reports whether the long tests are on.
func LongOn() bool { return os.Getenv(LongEnv) == "1" }
