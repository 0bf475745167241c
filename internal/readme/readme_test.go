package readme

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/internal/leak"
)

func TestMain(m *testing.M) { leak.VerifyTestMain(m) }

// The README's Go code must work when pasted. The test takes every ```go
// block of README.md exactly as written (no edit to its text) and builds
// it in a module of its own that requires this one, the way a user's
// program would (so a block cannot use what only the demo or the tests
// depend on). The wrapping rule:
//
//   - A block that begins with a package clause is a whole file: it is
//     compiled as it is, must be gofmt-formatted, and if it is package main
//     it is also run (see below).
//   - Any other block is a fragment: it becomes the body of a function
//     `func example()` in a file of a package of its own (not main: it is
//     compiled, never linked, and linking is what takes the time), which
//     is where statements and type, const and var declarations can stand.
//     The test adds an import for each package the fragment names without
//     declaring it (context, fmt, json, nats, and every public package of
//     this module by its name: toolkit, natsbus, stream, events, remote,
//     ...) and one placeholder the prose leaves to the reader, ctx (a
//     context.Context), if the fragment uses it. Nothing else: a name the
//     fragment uses but never declares is an error.
//
// Every file starts with a //line comment, so that errors point at the
// README's own lines. The files are checked with go vet (which type-checks:
// an unused variable or import is an error) and go build. A complete
// program is then run with a private TMPDIR, must exit 0 within a minute,
// and must leave no folder of an embedded NATS server behind (a program
// that forgets to close its bus leaves one per run).

// knownImports are the packages a fragment may use without importing them.
var knownImports = map[string]string{
	"context": "context", "errors": "errors", "fmt": "fmt", "io": "io", "log": "log", "os": "os",
	"strings": "strings", "time": "time", "json": "encoding/json", "http": "net/http",
	"toolkit":        "github.com/toolstream/toolstream/toolkit",
	"natsbus":        "github.com/toolstream/toolstream/events/natsbus",
	"events":         "github.com/toolstream/toolstream/events",
	"stream":         "github.com/toolstream/toolstream/stream",
	"interceptors":   "github.com/toolstream/toolstream/interceptors",
	"groups":         "github.com/toolstream/toolstream/groups",
	"skills":         "github.com/toolstream/toolstream/skills",
	"agent":          "github.com/toolstream/toolstream/agent",
	"anthropicmodel": "github.com/toolstream/toolstream/agent/anthropicmodel",
	"openaimodel":    "github.com/toolstream/toolstream/agent/openaimodel",
	"durable":        "github.com/toolstream/toolstream/durable",
	"natskv":         "github.com/toolstream/toolstream/groups/natskv",
	"natsobj":        "github.com/toolstream/toolstream/interceptors/natsobj",
	"mcpbridge":      "github.com/toolstream/toolstream/mcpbridge",
	"remote":         "github.com/toolstream/toolstream/remote",
	"rx":             "github.com/toolstream/toolstream/stream/rx",
	"telemetry":      "github.com/toolstream/toolstream/telemetry",
	"ui":             "github.com/toolstream/toolstream/ui",
	"agui":           "github.com/toolstream/toolstream/ui/agui",
	"aisdk":          "github.com/toolstream/toolstream/ui/aisdk",
	"nats":           "github.com/nats-io/nats.go",
	"jetstream":      "github.com/nats-io/nats.go/jetstream",
	"slog":           "log/slog",
	"sync":           "sync",
}

// placeholders are the names the prose leaves to the reader, declared for
// a fragment that uses them, with the imports they need.
var placeholders = map[string]struct{ decl, pkg string }{
	"ctx": {"var ctx = context.Background()", "context"},
}

// block is one ```go block of a Markdown file.
type block struct {
	line   int // of its first line of code, 1-based
	code   string
	before string // the line just before its fence, trimmed: a directive or not
}

// fence opens a ```go block, at the start of a line or indented (in a
// list item): the block's lines lose that indentation.
var fence = regexp.MustCompile("(?m)^([ \t]*)```go[ \t]*\n")

// goBlocks returns the ```go blocks of a Markdown text.
func goBlocks(md string) ([]block, error) {
	var out []block
	for _, loc := range fence.FindAllStringSubmatchIndex(md, -1) {
		start, indent := loc[1], md[loc[2]:loc[3]]
		end := strings.Index(md[start:], "\n"+indent+"```")
		if end < 0 {
			return nil, fmt.Errorf("line %d: a ```go block that never ends", strings.Count(md[:start], "\n"))
		}
		lines := strings.SplitAfter(md[start:start+end+1], "\n")
		for i, l := range lines {
			lines[i] = strings.TrimPrefix(l, indent)
		}
		before := ""
		if prev := strings.LastIndex(md[:max(loc[0]-1, 0)], "\n"); loc[0] > 0 {
			before = strings.TrimSpace(md[prev+1 : loc[0]-1])
		}
		out = append(out, block{line: strings.Count(md[:start], "\n") + 1, code: strings.Join(lines, ""), before: before})
	}
	return out, nil
}

// isFile reports whether a block is a whole file (it begins with a package
// clause, after comments).
func isFile(code string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", code, parser.PackageClauseOnly)
	return err == nil && f.Name != nil
}

// source is the Go file for a block, by the wrapping rule above.
func source(name string, b block) (string, error) {
	if isFile(b.code) {
		return fmt.Sprintf("//line %s:%d\n%s", name, b.line, b.code), nil
	}
	body := "func example() {\n//line " + name + ":" + fmt.Sprint(b.line) + "\n" + b.code + "}\n"
	f, err := parser.ParseFile(token.NewFileSet(), "", "package main\n"+body, parser.AllErrors)
	if err != nil {
		return "", fmt.Errorf("%s:%d: not a Go file, and not statements and declarations either: %v", name, b.line, err)
	}
	imports := map[string]bool{}
	var decls []string
	seen := map[string]bool{}
	for _, id := range unresolved(f) {
		if seen[id] {
			continue
		}
		seen[id] = true
		if p, ok := placeholders[id]; ok {
			decls = append(decls, p.decl)
			imports[p.pkg] = true
		} else if path, ok := knownImports[id]; ok {
			imports[path] = true
		}
	}
	paths := make([]string, 0, len(imports))
	for p := range imports {
		paths = append(paths, fmt.Sprintf("%q", p))
	}
	sort.Strings(paths)
	sort.Strings(decls)
	var src strings.Builder
	src.WriteString("package fragment\n\n")
	if len(paths) > 0 {
		src.WriteString("import (\n\t" + strings.Join(paths, "\n\t") + "\n)\n\n")
	}
	for _, d := range decls {
		src.WriteString(d + "\n")
	}
	src.WriteString("\n" + body)
	return src.String(), nil
}

// unresolved lists the names a parsed file uses without declaring them.
func unresolved(f *ast.File) []string {
	var names []string
	for _, id := range f.Unresolved {
		names = append(names, id.Name)
	}
	return names
}

// repoRoot is the root of this module.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	return root
}

// goVersion is the go line of this module's go.mod.
func goVersion(t *testing.T, root string) string {
	t.Helper()
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("no go line in go.mod")
	}
	return string(m[1])
}

// checkBlocks builds, vets and runs the blocks of the Markdown file name
// (as the wrapping rule and the directives of doc.go say) and returns what
// is wrong with them.
func checkBlocks(t *testing.T, name string, blocks []block) []string {
	t.Helper()
	b := buildDocs(t, []doc{{name: name, blocks: blocks}})
	problems := b.problems[name]
	for _, p := range b.programs {
		if p.server {
			continue // runs beside the next one
		}
		problems = append(problems, p.run(t, b.bin)...)
	}
	return problems
}

// stripComments drops the comment lines before a package clause.
func stripComments(code string) string {
	var b strings.Builder
	for _, l := range strings.Split(code, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "//") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestReadmeGoBlocks: every Go block of README.md compiles, passes go vet
// and, if it is a program, runs and cleans up after itself.
func TestReadmeGoBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	readme := filepath.Join(repoRoot(t), "README.md")
	md, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := goBlocks(string(md))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) == 0 {
		t.Fatal("README.md has no ```go block: is the fence still ```go?")
	}
	for _, p := range checkBlocks(t, readme, blocks) {
		t.Error(p)
	}
}

// TestReadmeCheckCatches: the check finds what was wrong with the quick
// start as it was at d854d2b (a fragment whose defs is declared and not
// used, with names no one declares), at the README's line.
func TestReadmeCheckCatches(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	old, err := filepath.Abs("testdata/quickstart-d854d2b.md")
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(old)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := goBlocks(string(md))
	if err != nil || len(blocks) != 1 {
		t.Fatalf("%d blocks, %v", len(blocks), err)
	}
	all := strings.Join(checkBlocks(t, old, blocks), "\n")
	for _, want := range []string{old + ":20:", old + ":19:", "declared and not used: defs", "undefined: callsFromTheModel"} {
		if !strings.Contains(all, want) {
			t.Errorf("the check does not report %q:\n%s", want, all)
		}
	}
}

// TestWrapFragment: a fragment gets the imports of the packages it names
// and the ctx placeholder, and nothing it does not use.
func TestWrapFragment(t *testing.T) {
	src, err := source("X.md", block{line: 7, code: "tk := toolkit.New()\ndefer tk.Close(ctx)\n"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"context"`, `"github.com/toolstream/toolstream/toolkit"`, "var ctx = context.Background()", "//line X.md:7\ntk := toolkit.New()"} {
		if !strings.Contains(src, want) {
			t.Errorf("wrapped source lacks %q:\n%s", want, src)
		}
	}
	if strings.Contains(src, "natsbus") || strings.Contains(src, `"fmt"`) {
		t.Errorf("imports the fragment does not use:\n%s", src)
	}
	if _, err := source("X.md", block{line: 1, code: "func (x T) M() {}\n"}); err == nil {
		t.Error("a method declaration passed for a fragment")
	}
}
