package readme

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// module is this module's path, the prefix the diagram leaves out.
const module = "github.com/toolstream/toolstream/"

// arrow is the diagram's only arrow: its head is at the imported package.
const arrow = "──►"

// diagram is the import diagram of docs/architecture.md as drawn: each
// arrow (importer, imported), the row each package is first drawn on, and
// what the cmd/demo line says the demo does not import.
type diagram struct {
	arrows   map[[2]string]bool
	row      map[string]int
	demoLeft []string
}

// rowLabel is a row's label: words before the first package, set apart by
// two spaces or more.
var rowLabel = regexp.MustCompile(`^[a-z][a-z ]*[a-z]\s{2,}`)

// readDiagram reads the first code block under "## Packages and the import
// direction" in docs/architecture.md.
func readDiagram(md string) (diagram, error) {
	d := diagram{arrows: map[[2]string]bool{}, row: map[string]int{}}
	_, sec, ok := strings.Cut(md, "\n## Packages and the import direction\n")
	if !ok {
		return d, fmt.Errorf(`no "## Packages and the import direction" section`)
	}
	parts := strings.SplitN(sec, "```", 3)
	if len(parts) < 3 {
		return d, fmt.Errorf("the section has no code block")
	}
	rows := 0
	for line := range strings.SplitSeq(parts[1], "\n") {
		line = strings.TrimSpace(line)
		if !strings.Contains(line, arrow) || strings.HasPrefix(line, "A "+arrow) {
			continue // the legend
		}
		if rest, ok := strings.CutPrefix(line, "cmd/demo"); ok {
			_, left, _ := strings.Cut(rest, " but ")
			left, _, _ = strings.Cut(left, " (")
			for p := range strings.SplitSeq(strings.ReplaceAll(left, " and ", ", "), ",") {
				if p = strings.TrimSpace(p); p != "" {
					d.demoLeft = append(d.demoLeft, p)
				}
			}
			continue
		}
		rows++
		line = rowLabel.ReplaceAllString(line, "")
		for col := range strings.SplitSeq(regexp.MustCompile(`\s{3,}`).ReplaceAllString(line, "\t"), "\t") {
			chain := strings.Split(col, arrow)
			lists := make([][]string, len(chain))
			for i, c := range chain {
				for p := range strings.SplitSeq(c, ",") {
					p = strings.TrimSpace(p)
					if p == "" {
						return d, fmt.Errorf("row %d: an arrow without a package: %q", rows, col)
					}
					lists[i] = append(lists[i], p)
					if _, seen := d.row[p]; !seen {
						d.row[p] = rows
					}
				}
			}
			for i := range len(lists) - 1 {
				for _, from := range lists[i] {
					for _, to := range lists[i+1] {
						d.arrows[[2]string{from, to}] = true
					}
				}
			}
		}
	}
	if len(d.arrows) == 0 {
		return d, fmt.Errorf("the diagram draws no %s arrow", arrow)
	}
	return d, nil
}

// drawnAlways says whether a package belongs in the diagram: every public
// package but deploy/nats's (a configuration and its tests).
func drawnAlways(p string) bool {
	return !strings.HasPrefix(p, "internal/") && !strings.Contains(p, "/internal/") && !strings.HasPrefix(p, "deploy/")
}

// goImports lists the module's packages in dir and, for each, the module's
// packages it imports (test files aside), without the module's prefix.
func goImports(t *testing.T, dir string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list in %s: %v", dir, err)
	}
	imports := map[string][]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		from := strings.TrimPrefix(fields[0], module)
		imports[from] = []string{}
		for _, p := range fields[1:] {
			if to, ok := strings.CutPrefix(p, module); ok {
				imports[from] = append(imports[from], to)
			}
		}
	}
	return imports
}

// TestArchitectureDiagram holds docs/architecture.md's package diagram to
// the imports `go list` reports: every arrow is a direct import, in the
// direction drawn; every import between public packages is drawn (imports
// of events, which nearly every package has, and of internal helpers may
// be left out, but those drawn must be true); no package imports one first
// drawn on a later row; and the demo imports every public package but those
// its line names.
func TestArchitectureDiagram(t *testing.T) {
	root := repoRoot(t)
	md, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := readDiagram(string(md))
	if err != nil {
		t.Fatalf("docs/architecture.md: %v", err)
	}
	imports := goImports(t, root)
	var problems []string
	for a := range d.arrows {
		from, to := a[0], a[1]
		if _, ok := imports[from]; !ok {
			problems = append(problems, fmt.Sprintf("%s is not a package of the module", from))
		} else if !slices.Contains(imports[from], to) {
			problems = append(problems, fmt.Sprintf("%s %s %s: %s does not import %s", from, arrow, to, from, to))
		}
	}
	for from, tos := range imports {
		if !drawnAlways(from) {
			continue
		}
		if _, ok := d.row[from]; !ok {
			problems = append(problems, fmt.Sprintf("%s is not drawn", from))
		}
		for _, to := range tos {
			if drawnAlways(to) && to != "events" && !d.arrows[[2]string{from, to}] {
				problems = append(problems, fmt.Sprintf("%s imports %s: no arrow %s %s %s", from, to, from, arrow, to))
			}
			if r, ok := d.row[to]; ok && r > d.row[from] {
				problems = append(problems, fmt.Sprintf("%s (row %d) imports %s, first drawn on row %d", from, d.row[from], to, r))
			}
		}
	}
	demo := goImports(t, filepath.Join(root, "cmd", "demo"))["cmd/demo"]
	for p := range imports {
		if drawnAlways(p) && !slices.Contains(demo, p) && !slices.Contains(d.demoLeft, p) {
			problems = append(problems, fmt.Sprintf("cmd/demo does not import %s, and its line does not say so", p))
		}
	}
	for _, p := range d.demoLeft {
		if slices.Contains(demo, p) {
			problems = append(problems, fmt.Sprintf("cmd/demo's line says it does not import %s, but it does", p))
		}
	}
	slices.Sort(problems)
	for _, p := range problems {
		t.Errorf("docs/architecture.md's diagram: %s", p)
	}
}
