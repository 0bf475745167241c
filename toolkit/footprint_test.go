package toolkit_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// engineModules are the only modules outside the standard library that a
// program embedding the engine (toolkit, stream, events) may link: the
// schema library, the logger and what the logger needs for terminals.
var engineModules = []string{
	"github.com/google/jsonschema-go/",
	"github.com/rs/zerolog",
	"github.com/mattn/go-colorable",
	"github.com/mattn/go-isatty",
	"golang.org/x/sys/",
}

// goTool returns the go command of the toolchain running the test.
func goTool(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds with the go command")
	}
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goCmd); err != nil {
		t.Skipf("no go command next to the toolchain: %v", err)
	}
	return goCmd
}

// TestEngineDependencies: a program that imports only the engine links no
// NATS server or client, no rxgo, no browser driver, no LLM SDK: nothing
// but the standard library and engineModules.
func TestEngineDependencies(t *testing.T) {
	out, err := exec.Command(goTool(t), "list", "-deps",
		"github.com/toolstream/toolstream/toolkit",
		"github.com/toolstream/toolstream/stream",
		"github.com/toolstream/toolstream/events").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		first, _, _ := strings.Cut(pkg, "/")
		if !strings.Contains(first, ".") || strings.HasPrefix(pkg, "github.com/toolstream/toolstream/") {
			continue // standard library, or the engine itself
		}
		allowed := false
		for _, m := range engineModules {
			allowed = allowed || strings.HasPrefix(pkg, m)
		}
		if !allowed {
			t.Errorf("the engine links %s", pkg)
		}
	}
}

// TestNoOpenTelemetryBelowTelemetry: OpenTelemetry is linked only by
// programs that import package telemetry. The engine and the packages built
// on it (groups, skills, interceptors, the NATS bus, the reactive views)
// reach it through the engine's stdlib-only hook (internal/tracehook), never by
// importing it.
func TestNoOpenTelemetryBelowTelemetry(t *testing.T) {
	out, err := exec.Command(goTool(t), "list", "-deps",
		"github.com/toolstream/toolstream/toolkit",
		"github.com/toolstream/toolstream/stream",
		"github.com/toolstream/toolstream/events",
		"github.com/toolstream/toolstream/groups",
		"github.com/toolstream/toolstream/skills",
		"github.com/toolstream/toolstream/interceptors",
		"github.com/toolstream/toolstream/events/natsbus",
		"github.com/toolstream/toolstream/stream/rx").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "go.opentelemetry.io/") || pkg == "github.com/toolstream/toolstream/telemetry" {
			t.Errorf("a package below telemetry links %s", pkg)
		}
	}
}

// Size budgets of testdata/embed, a 30-line program with one typed tool and
// one run. A release build (symbols and DWARF stripped) must stay under
// 4.0 MB. A default build, which carries DWARF in proportion to the code,
// is held by what the engine adds to testdata/schemafloor, a program that
// only does with the pinned schema library what the engine needs it for:
// that floor (4.42 MB with Go 1.26.8, hello world 2.4 MB) is already above
// issue 11's 4.0 MB, so the engine's own share is what this repository can
// keep in check. docs/benchmarks.md says where the bytes go.
const (
	releaseBudget     = 4_000_000
	engineShareBudget = 1_400_000 // default build, over the schema floor
)

// TestFootprint builds testdata/embed both ways and testdata/schemafloor by
// default, prints the sizes and checks the budgets.
func TestFootprint(t *testing.T) {
	goCmd := goTool(t)
	dir := t.TempDir()
	build := func(name, pkg string, flags ...string) int64 {
		bin := filepath.Join(dir, name)
		args := append(append([]string{"build", "-o", bin}, flags...), pkg)
		if out, err := exec.Command(goCmd, args...).CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		fi, err := os.Stat(bin)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	mb := func(n int64) float64 { return float64(n) / 1e6 }
	floor := build("floor", "./testdata/schemafloor")
	def := build("default", "./testdata/embed")
	rel := build("release", "./testdata/embed", "-ldflags=-s -w")
	// Printed, not logged: CI shows the figures on every run.
	fmt.Printf("footprint: a program embedding the toolkit: default build %.2f MB (issue 11's target 4.00 MB: %s), "+
		"release build %.2f MB (budget %.2f MB)\n", mb(def), metOrNot(def <= 4_000_000), mb(rel), mb(releaseBudget))
	fmt.Printf("footprint: the pinned schema library alone (testdata/schemafloor), default build %.2f MB; "+
		"the engine adds %.2f MB (budget %.2f MB)\n", mb(floor), mb(def-floor), mb(engineShareBudget))
	if rel > releaseBudget {
		t.Errorf("release build is %d bytes, over its budget of %d", rel, releaseBudget)
	}
	if def-floor > engineShareBudget {
		t.Errorf("the engine adds %d bytes to the schema floor's %d (default builds), over its budget of %d",
			def-floor, floor, engineShareBudget)
	}
}

func metOrNot(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}
