package readme

import (
	"bytes"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// doc is a Markdown file: its name as errors show it, and its ```go blocks.
type doc struct {
	name   string
	blocks []block
}

// The directives a block may have on the line just before its fence
// (doc.go says what each means).
var (
	notRunDirective = regexp.MustCompile(`^<!--\s*not run:\s*(\S.*?)\s*-->$`)
	cutDirective    = regexp.MustCompile(`^<!--\s*cut from\s+(\S+)\s*-->$`)
	besideDirective = regexp.MustCompile(`^<!--\s*run beside the previous program\s*-->$`)
)

// runTimeout bounds each program's run, and a server's wait to be ready.
const runTimeout = time.Minute

// program is a doc's package main block the test runs.
type program struct {
	doc    string
	line   int
	bin    string   // its executable's name in the build's bin folder
	beside *program // started first, and stopped once this one has run
	server bool     // runs only beside the program after it
}

func (p *program) String() string { return fmt.Sprintf("%s:%d", p.doc, p.line) }

// built is what buildDocs made: the problems per doc, the programs to run
// (those that built and vetted), and the folder of their executables.
type built struct {
	problems map[string][]string
	programs []*program
	bin      string
}

// pkg is one block written as a package of the build's module.
type pkg struct {
	doc  string
	dir  string
	line int
	main bool     // a whole package main, linked
	prog *program // nil for a block that is not run
	hint string   // for a fragment: where it parts from the doc's program
}

// otelSDK returns the require lines of the OpenTelemetry SDK modules and the
// go.sum lines for them: docs/observability.md's program sets up the SDK,
// which the library does not require (only its tests do, in the module
// telemetry/oteltests, whose go.mod pins the versions the docs build with).
func otelSDK(t *testing.T, root string) (require string, sum []byte) {
	t.Helper()
	dir := filepath.Join(root, "telemetry", "oteltests")
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^\s*(go\.opentelemetry\.io/otel/sdk\S*) (\S+)`).FindAllSubmatch(mod, -1) {
		require += fmt.Sprintf("require %s %s\n", m[1], m[2])
	}
	if require == "" {
		t.Fatalf("%s/go.mod requires no go.opentelemetry.io/otel/sdk module", dir)
	}
	sum, err = os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	return require, sum
}

// buildDocs writes the blocks of docs into one module that requires this
// one, builds and vets them all with one go command each, and returns what
// is wrong and the programs to run.
func buildDocs(t *testing.T, docs []doc) *built {
	t.Helper()
	root := repoRoot(t)
	mod := t.TempDir()
	sdkRequire, sdkSum := otelSDK(t, root)
	gomod := fmt.Sprintf("module readme.example\n\ngo %s\n\nrequire github.com/toolstream/toolstream v0.0.0\n\n%s\nreplace github.com/toolstream/toolstream => %s\n", goVersion(t, root), sdkRequire, root)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	sum = append(sum, sdkSum...)
	write := func(path string, b []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(mod, "go.mod"), []byte(gomod))
	write(filepath.Join(mod, "go.sum"), sum)
	out := &built{problems: map[string][]string{}, bin: filepath.Join(mod, "bin")}
	problem := func(d string, msg string, args ...any) {
		out.problems[d] = append(out.problems[d], fmt.Sprintf(msg, args...))
	}
	pkgs := map[string]*pkg{} // by dir
	var order []string
	for di, d := range docs {
		var wholes []block // the doc's whole files, where its fragments may be cut from
		for _, b := range d.blocks {
			if isFile(b.code) {
				wholes = append(wholes, b)
			}
		}
		var last *program // the doc's previous program
		for _, b := range d.blocks {
			dir := fmt.Sprintf("d%d_%s_%d", di, slug(d.name), b.line)
			notRun := notRunDirective.FindStringSubmatch(b.before)
			cut := cutDirective.FindStringSubmatch(b.before)
			beside := besideDirective.MatchString(b.before)
			if strings.HasPrefix(b.before, "<!--") && notRun == nil && cut == nil && !beside {
				problem(d.name, "%s:%d: unknown directive %s (doc.go lists them: not run, cut from, run beside the previous program)", d.name, b.line-2, b.before)
				continue
			}
			if !isFile(b.code) {
				if notRun != nil || beside {
					problem(d.name, "%s:%d: %s is for a whole program, and this block is a fragment", d.name, b.line-2, b.before)
					continue
				}
				if cut != nil {
					src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(cut[1])))
					if err != nil {
						problem(d.name, "%s:%d: cut from %s: %v", d.name, b.line-2, cut[1], err)
					} else if miss, _ := drift(b.code, string(src), cut[1], 1); miss != "" {
						problem(d.name, "%s:%d: the fragment is not in %s as written: %s", d.name, b.line, cut[1], miss)
					}
					continue
				}
				hint, cutFromProgram := "", false // the nearest miss, if it is one
				for _, w := range wholes {
					miss, n := drift(b.code, w.code, d.name, w.line)
					if miss == "" {
						cutFromProgram = true
						break
					}
					if n > 0 && hint == "" {
						hint = miss
					}
				}
				if cutFromProgram {
					continue
				}
				src, err := source(d.name, b)
				if err != nil {
					problem(d.name, "%s", err.Error())
					if hint != "" {
						problem(d.name, "%s:%d: the fragment is not in the doc's program as written either: %s", d.name, b.line, hint)
					}
					continue
				}
				write(filepath.Join(mod, dir, "main.go"), []byte(src))
				pkgs[dir] = &pkg{doc: d.name, dir: dir, line: b.line, hint: hint}
				order = append(order, dir)
				continue
			}
			if cut != nil {
				problem(d.name, "%s:%d: %s is for a fragment, and this block is a whole file", d.name, b.line-2, b.before)
				continue
			}
			if formatted, err := format.Source([]byte(b.code)); err == nil && !bytes.Equal(formatted, []byte(b.code)) {
				problem(d.name, "%s:%d: the block is not gofmt-formatted", d.name, b.line)
			}
			write(filepath.Join(mod, dir, "main.go"), fmt.Appendf(nil, "//line %s:%d\n%s", d.name, b.line, b.code))
			p := &pkg{doc: d.name, dir: dir, line: b.line}
			pkgs[dir] = p
			order = append(order, dir)
			isMain := strings.HasPrefix(strings.TrimSpace(stripComments(b.code)), "package main")
			p.main = isMain
			switch {
			case !isMain && (notRun != nil || beside):
				problem(d.name, "%s:%d: %s is for a package main, and this file is not one", d.name, b.line-2, b.before)
			case notRun != nil:
				last = nil
			case beside && last == nil:
				problem(d.name, "%s:%d: %s, and there is no previous program to run it beside", d.name, b.line-2, b.before)
			case beside:
				last.server = true
				p.prog = &program{doc: d.name, line: b.line, bin: dir, beside: last}
			case isMain:
				p.prog = &program{doc: d.name, line: b.line, bin: dir}
				last = p.prog
			}
		}
	}
	if len(order) == 0 {
		return out
	}
	paths := func() []string {
		var ps []string
		for _, dir := range order {
			ps = append(ps, "./"+dir)
		}
		return ps
	}
	goCmd := func(args ...string) (string, error) {
		cmd := exec.Command("go", args...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	// go build first: the compiler lists all the errors of a file, vet
	// only the first. A package that fails is left out of what follows.
	report := func(step, output string) {
		failed := attribute(output, pkgs, func(d, text string) { problem(d, "%s: %s", step, text) })
		for _, dir := range failed {
			if p := pkgs[dir]; p != nil && p.hint != "" {
				problem(p.doc, "%s:%d: the fragment does not compile on its own, and it is not in the doc's program as written either: %s", p.doc, p.line, p.hint)
			}
			delete(pkgs, dir)
		}
		kept := order[:0]
		for _, dir := range order {
			if pkgs[dir] != nil {
				kept = append(kept, dir)
			}
		}
		order = kept
	}
	// Fragments are packages of their own, not main: go build compiles
	// them without linking. Programs are linked into bin (a whole file of
	// another package is only compiled there too).
	var mains, others []string
	for _, dir := range order {
		if pkgs[dir].main {
			mains = append(mains, "./"+dir)
		} else {
			others = append(others, "./"+dir)
		}
	}
	if len(others) > 0 {
		if output, err := goCmd(append([]string{"build"}, others...)...); err != nil {
			report("go build", output)
		}
	}
	if len(mains) > 0 {
		if output, err := goCmd(append([]string{"build", "-o", out.bin + string(filepath.Separator)}, mains...)...); err != nil {
			report("go build", output)
		}
	}
	if len(order) > 0 {
		if output, err := goCmd(append([]string{"vet"}, paths()...)...); err != nil {
			report("go vet", output)
		}
	}
	for _, dir := range order {
		if p := pkgs[dir].prog; p != nil && (p.beside == nil || pkgs[p.beside.bin] != nil) {
			out.programs = append(out.programs, p)
		}
	}
	return out
}

// attribute hands each package's part of a go command's output ("# pkg"
// then its lines) to its doc, and returns the packages that failed. Output
// that names no package goes to every doc: the build as a whole failed.
func attribute(output string, pkgs map[string]*pkg, to func(doc, text string)) []string {
	var failed []string
	var cur string
	var text strings.Builder
	flush := func() {
		if text.Len() == 0 {
			return
		}
		msg := "\n" + strings.TrimRight(text.String(), "\n")
		if p := pkgs[cur]; p != nil {
			to(p.doc, msg)
		} else {
			docs := map[string]bool{}
			for _, p := range pkgs {
				if !docs[p.doc] {
					docs[p.doc] = true
					to(p.doc, msg)
				}
			}
		}
		text.Reset()
	}
	for _, l := range strings.SplitAfter(output, "\n") {
		if dir, ok := strings.CutPrefix(strings.TrimSpace(l), "# readme.example/"); ok {
			flush()
			cur = dir
			failed = append(failed, dir)
			continue
		}
		text.WriteString(l)
	}
	flush()
	if len(failed) == 0 { // no package named: none can be trusted
		for dir := range pkgs {
			failed = append(failed, dir)
		}
	}
	return failed
}

// slug makes a file name fit for a package folder.
func slug(name string) string {
	base := strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	return regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(base, "_")
}
