package readme

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// docPrograms are the docs that start with a whole program a person can
// paste (issue 29): their first ```go block is a package main.
var docPrograms = []string{
	"events.md", "groups-and-skills.md", "interceptors.md", "llm-sdk.md",
	"mcp.md", "observability.md", "scale-out.md", "ui-protocols.md",
}

// readDocs reads the ```go blocks of the Markdown files given, naming each
// by its absolute path so that errors point at its lines.
func readDocs(t *testing.T, paths ...string) []doc {
	t.Helper()
	var docs []doc
	for _, path := range paths {
		abs, err := filepath.Abs(path)
		if err != nil {
			t.Fatal(err)
		}
		md, err := os.ReadFile(abs)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := goBlocks(string(md))
		if err != nil {
			t.Fatalf("%s: %v", abs, err)
		}
		docs = append(docs, doc{name: abs, blocks: blocks})
	}
	return docs
}

// firstIsProgram says what is wrong when a doc does not start with a
// whole package main.
func firstIsProgram(d doc) string {
	if len(d.blocks) == 0 {
		return fmt.Sprintf("%s: no ```go block: it must start with a whole program (package main)", d.name)
	}
	b := d.blocks[0]
	if !isFile(b.code) || !strings.HasPrefix(strings.TrimSpace(stripComments(b.code)), "package main") {
		return fmt.Sprintf("%s:%d: the doc's first ```go block must be a whole program (package main, its imports) a person can paste", d.name, b.line)
	}
	return ""
}

// checkDocs builds and vets every Go block of docs in one module, reports
// what is wrong (and the problems more holds) in a subtest per doc, then runs
// each doc's programs in a subtest of its own (docs and programs in
// parallel; servers beside the program that needs them).
func checkDocs(t *testing.T, docs []doc, more map[string][]string) {
	t.Helper()
	b := buildDocs(t, docs)
	for _, d := range docs {
		t.Run(filepath.Base(d.name), func(t *testing.T) {
			for _, p := range append(more[d.name], b.problems[d.name]...) {
				t.Error(p)
			}
			t.Parallel()
			for _, p := range b.programs {
				if p.doc != d.name || p.server {
					continue
				}
				t.Run(fmt.Sprintf("line%d", p.line), func(t *testing.T) {
					t.Parallel()
					for _, problem := range p.run(t, b.bin) {
						t.Error(problem)
					}
				})
			}
		})
	}
}

// TestDocPrograms: the docs of issue 29 start with a whole program, and
// every ```go block of docs/*.md builds and vets in a module of its own
// that requires this one (whole files as they are, fragments by the
// wrapping rule unless they are cut from a program or file, as doc.go
// says); the programs run and end with status 0, a server beside the
// program that needs it. The programs take about a second of the test's
// 12 s (warm build cache, 2 cores): no need to keep them for the long run.
func TestDocPrograms(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	root := repoRoot(t)
	paths, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	docs := readDocs(t, paths...)
	first := map[string][]string{}
	for _, d := range docs {
		if slices.Contains(docPrograms, filepath.Base(d.name)) {
			if p := firstIsProgram(d); p != "" {
				first[d.name] = []string{p}
			}
		}
	}
	checkDocs(t, docs, first)
}

// TestDocCheckCatches: the check finds a fragment that drifted from the
// doc's program, one that drifted from the file it is cut from, a name no
// one declares (in a list item's indented block too), a directive on the
// wrong block, a program that fails beside its server, a server that
// fails when it is stopped and a doc that does not start with a program,
// each at the doc's line; and it passes what is right (a fragment cut from
// the doc's program with other indentation, a server and the program
// beside it).
func TestDocCheckCatches(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	docs := readDocs(t, "testdata/drift.md", "testdata/beside.md")
	drifted, beside := docs[0], docs[1]
	b := buildDocs(t, docs)
	all := strings.Join(b.problems[drifted.name], "\n")
	for _, want := range []string{
		// the program's lines read `fmt.Println(greeting("world"))` then `}`
		drifted.name + ":32: the fragment does not compile on its own, and it is not in the doc's program as written either: its line 2 \"fmt.Println(greeting(\\\"there\\\"))\" differs from " + drifted.name + ":20 \"}\"",
		drifted.name + ":33:", "undefined: greeting",
		drifted.name + ":40: the fragment is not in internal/readme/testdata/source.go as written: its line 2 \"return \\\"hello, \\\" + name\" differs from internal/readme/testdata/source.go:5 \"return \\\"hi, \\\" + name\"",
		drifted.name + ":46:", "undefined: nobodyDeclaresThis",
		drifted.name + ":49: <!-- not run: a fragment --> is for a whole program",
		drifted.name + ":63:", "undefined: indentedUndefined",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the check does not report %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, drifted.name+":26:") || strings.Contains(all, drifted.name+":57:") {
		t.Errorf("the check reports a fragment that is in the program or compiles:\n%s", all)
	}
	if p := firstIsProgram(drifted); !strings.Contains(p, drifted.name+":4: the doc's first ```go block must be a whole program") {
		t.Errorf("a doc that starts with a fragment: %q", p)
	}
	if p := firstIsProgram(beside); p != "" {
		t.Errorf("a doc that starts with a program: %s", p)
	}
	if len(b.problems[beside.name]) > 0 {
		t.Fatalf("beside.md builds: %s", b.problems[beside.name])
	}
	ran := map[int][]string{}
	for _, p := range b.programs {
		if p.doc == beside.name && !p.server {
			ran[p.line] = p.run(t, b.bin)
		}
	}
	if len(ran) != 3 {
		t.Fatalf("beside.md: %d programs run beside a server, want 3: %v", len(ran), ran)
	}
	if ran[46] != nil {
		t.Errorf("the client beside its server: %v", ran[46])
	}
	if got := strings.Join(ran[75], "\n"); !strings.Contains(got, beside.name+":75: running it: exit status 3") || !strings.Contains(got, "the server answered: hello") {
		t.Errorf("a client that fails beside its server is reported as: %q", got)
	}
	if got := strings.Join(ran[121], "\n"); !strings.Contains(got, beside.name+":101: stopped with an interrupt (Ctrl-C): exit status 4") {
		t.Errorf("a server that fails when it is stopped is reported as: %q", got)
	}
}
