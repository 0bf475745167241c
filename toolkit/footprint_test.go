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
// reach it through the engine's stdlib-only Tracer and StartOp, never by
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
// 4.0 MB; a default build, which carries DWARF in proportion to the code,
// under 5.75 MB (hello world: 1.6 MB and 2.4 MB). docs/benchmarks.md says
// where the bytes go.
const (
	releaseBudget = 4_000_000
	defaultBudget = 5_750_000
)

// TestFootprint builds testdata/embed both ways and prints the sizes.
func TestFootprint(t *testing.T) {
	goCmd := goTool(t)
	dir := t.TempDir()
	for _, b := range []struct {
		name   string
		flags  []string
		budget int64
	}{
		{"default", nil, defaultBudget},
		{"release", []string{"-ldflags=-s -w"}, releaseBudget},
	} {
		bin := filepath.Join(dir, b.name)
		args := append(append([]string{"build", "-o", bin}, b.flags...), "./testdata/embed")
		if out, err := exec.Command(goCmd, args...).CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		fi, err := os.Stat(bin)
		if err != nil {
			t.Fatal(err)
		}
		// Printed, not logged: CI shows the figures on every run.
		fmt.Printf("footprint: %s build of a program embedding the toolkit: %.2f MB (budget %.2f MB)\n",
			b.name, float64(fi.Size())/1e6, float64(b.budget)/1e6)
		if fi.Size() > b.budget {
			t.Errorf("%s build is %d bytes, over its budget of %d", b.name, fi.Size(), b.budget)
		}
	}
}
