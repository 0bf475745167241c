package readme

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// exampleFunc is an example's declaration, and output the comment that
// makes `go test` run it.
var (
	exampleFunc = regexp.MustCompile(`(?m)^func Example\w*\(\) \{`)
	output      = regexp.MustCompile(`(?m)^\s*// (Unordered output|Output):`)
)

// TestEveryPackageHasAnExample: every public package of the repository (a
// folder with Go files outside internal/, testdata, the demo, bench and
// clients; nested modules such as telemetry/oteltests included) has an
// Example function with its output in its tests, so that godoc shows its
// main job and `go test` runs it.
func TestEveryPackageHasAnExample(t *testing.T) {
	root := filepath.Join("..", "..")
	var missing []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		switch base := d.Name(); {
		case rel == ".":
		case base == "internal" || base == "testdata" || base == "node_modules" || strings.HasPrefix(base, "."),
			rel == "cmd", rel == "bench", rel == "clients":
			return filepath.SkipDir
		}
		files, _ := filepath.Glob(filepath.Join(path, "*.go"))
		if len(files) == 0 {
			return nil
		}
		found := false
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			found = found || exampleFunc.Match(b) && output.Match(b)
		}
		if !found {
			missing = append(missing, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Errorf("public packages without a runnable Example: %s", strings.Join(missing, " "))
	}
}
