package natstest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// CLIVersion is the nats CLI the tests drive: a real client in another
// process, as a user would use it.
const CLIVersion = "v0.5.0"

// CLI finds the nats CLI: $TOOLSTREAM_NATS_CLI (set by .ci/run), else a
// copy built earlier into the user cache, else it builds one there with
// `go install` (a minute or two, once).
func CLI(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("TOOLSTREAM_NATS_CLI"); p != "" {
		return p
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "toolstream", "natscli-"+CLIVersion)
	bin := filepath.Join(dir, "nats")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	t.Logf("building the nats CLI %s into %s", CLIVersion, dir)
	cmd := exec.Command("go", "install", "github.com/nats-io/natscli/nats@"+CLIVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the nats CLI: %v\n%s", err, out)
	}
	return bin
}
