package testutil

import (
	"os"
	"testing"
)

// Long skips t unless the long tests are on: soaks, load and size tests,
// clusters, process kills and the browser run with TOOLSTREAM_LONG=1. The
// README's test command leaves it off so that it stays quick; .ci/run
// turns it on.
func Long(t testing.TB) {
	t.Helper()
	if os.Getenv("TOOLSTREAM_LONG") != "1" {
		t.Skip("a long test: TOOLSTREAM_LONG=1 runs it (.ci/run does)")
	}
}
