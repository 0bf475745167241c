// Command filerefs counts, inside a package, the references between its
// files that point back: issue 28 asks that at most 20% of toolkit's do.
//
// A reference is a pair of files (A, B), A not B, such that A uses a
// package-level identifier or a method declared in B (resolved by
// go/types, so a method call counts for the file that declares the
// method; struct fields and local names do not count: a field is read
// with its type). Each pair counts once, however many identifiers make it.
//
// A reader reads a file before the files it uses, as far as the package
// lets them: a reference points back when B comes before A in that reading
// order, so that the reader must go back to a file already left. The
// order is the one with the fewest such references that the command finds
// (greedy, after Eades, Lin and Smyth, then moving one file at a time while
// that removes one); it depends on the package's structure alone, not on
// its file names. Two files that refer to each other have one reference
// pointing back in any order: their count is printed too, a floor no
// order goes under, and so is the figure in go list's alphabetical order.
//
//	go run ./internal/filerefs [-v] [package ...]   (default ./toolkit)
//
// -v prints the order and the references that point back, with one
// identifier each.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

func main() {
	verbose := flag.Bool("v", false, "print the order and the references that point back")
	flag.Parse()
	pkgs := flag.Args()
	if len(pkgs) == 0 {
		pkgs = []string{"./toolkit"}
	}
	for _, p := range pkgs {
		g, err := load(".", p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "filerefs:", err)
			os.Exit(1)
		}
		order := g.bestOrder()
		back := g.back(order)
		alpha := g.back(g.files)
		fmt.Printf("%s: %d of %d references between files (%s) point back in the best reading order found; alphabetically %d (%s); %d pairs of files refer to each other\n",
			g.pkg, len(back), len(g.refs), percent(len(back), len(g.refs)), len(alpha), percent(len(alpha), len(g.refs)), g.mutual())
		if *verbose {
			fmt.Printf("\torder: %s\n", strings.Join(order, " "))
			for _, r := range back {
				fmt.Printf("\t%s -> %s (%s)\n", r.from, r.to, r.name)
			}
		}
	}
}

func percent(n, of int) string {
	if of == 0 {
		return "0%"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(n)/float64(of))
}

// ref is one reference between two files, with the first identifier (in
// source order) that makes it.
type ref struct{ from, to, name string }

// graph is a package's files (alphabetically) and the references between
// them, ordered by file.
type graph struct {
	pkg   string
	files []string
	refs  []ref
}

// mutual counts the pairs of files that refer to each other.
func (g *graph) mutual() int {
	has := map[[2]string]bool{}
	for _, r := range g.refs {
		has[[2]string{r.from, r.to}] = true
	}
	n := 0
	for _, r := range g.refs {
		if r.from < r.to && has[[2]string{r.to, r.from}] {
			n++
		}
	}
	return n
}

// back returns the references that point back in order.
func (g *graph) back(order []string) []ref {
	rank := ranks(order)
	var out []ref
	for _, r := range g.refs {
		if rank[r.to] < rank[r.from] {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return rank[out[i].from] < rank[out[j].from] })
	return out
}

func ranks(order []string) map[string]int {
	rank := make(map[string]int, len(order))
	for i, f := range order {
		rank[f] = i
	}
	return rank
}

// bestOrder returns a reading order with few references pointing back:
// the greedy order of Eades, Lin and Smyth (files no one left refers to
// first, files that refer to no one left last, else the file with the most
// references out less in), then single moves of a file while one lowers
// the count. Ties go alphabetically: the order is deterministic.
func (g *graph) bestOrder() []string {
	out := map[string][]string{}
	in := map[string][]string{}
	for _, r := range g.refs {
		out[r.from] = append(out[r.from], r.to)
		in[r.to] = append(in[r.to], r.from)
	}
	left := map[string]bool{}
	for _, f := range g.files {
		left[f] = true
	}
	degree := func(f string, adj map[string][]string) int {
		n := 0
		for _, x := range adj[f] {
			if left[x] {
				n++
			}
		}
		return n
	}
	var head, tail []string
	for len(left) > 0 {
		for changed := true; changed; {
			changed = false
			for _, f := range g.files {
				if left[f] && degree(f, out) == 0 {
					tail = append([]string{f}, tail...)
					delete(left, f)
					changed = true
				}
			}
			for _, f := range g.files {
				if left[f] && degree(f, in) == 0 {
					head = append(head, f)
					delete(left, f)
					changed = true
				}
			}
		}
		best, bestScore := "", 0
		for _, f := range g.files {
			if score := degree(f, out) - degree(f, in); left[f] && (best == "" || score > bestScore) {
				best, bestScore = f, score
			}
		}
		if best != "" {
			head = append(head, best)
			delete(left, best)
		}
	}
	order := append(head, tail...)
	for cur := len(g.back(order)); ; {
		var next []string
		for i := range order {
			for j := range order {
				if i == j {
					continue
				}
				o := slices.Clone(order)
				f := o[i]
				o = slices.Insert(slices.Delete(o, i, i+1), j, f)
				if n := len(g.back(o)); n < cur {
					next, cur = o, n
				}
			}
		}
		if next == nil {
			return order
		}
		order = next
	}
}

// load type-checks package pattern (with the export data go list gives
// its imports) from dir, and finds its references between files.
func load(dir, pattern string) (*graph, error) {
	out, err := goList(dir, "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", pattern)
	if err != nil {
		return nil, err
	}
	exports := map[string]string{}
	for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
		if path, file, ok := strings.Cut(sc.Text(), "\t"); ok {
			exports[path] = file
		}
	}
	out, err = goList(dir, "-f", "{{.ImportPath}}\n{{.Dir}}\n{{join .GoFiles \"\\n\"}}", pattern)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 3 {
		return nil, fmt.Errorf("%s: one package with Go files expected", pattern)
	}
	path, pkgDir, names := lines[0], lines[1], lines[2:]
	fset := token.NewFileSet()
	files := make([]*ast.File, 0, len(names))
	for _, n := range names {
		f, err := parser.ParseFile(fset, filepath.Join(pkgDir, n), nil, 0)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	imp := importer.ForCompiler(fset, "gc", func(p string) (io.ReadCloser, error) {
		if exports[p] == "" {
			return nil, fmt.Errorf("no export data for %s", p)
		}
		return os.Open(exports[p])
	})
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, err := (&types.Config{Importer: imp}).Check(path, fset, files, info)
	if err != nil {
		return nil, err
	}

	base := func(p token.Pos) string { return filepath.Base(fset.Position(p).Filename) }
	idents := make([]*ast.Ident, 0, len(info.Uses))
	for id := range info.Uses {
		idents = append(idents, id)
	}
	sort.Slice(idents, func(i, j int) bool { return idents[i].Pos() < idents[j].Pos() })
	g := &graph{pkg: path, files: slices.Sorted(slices.Values(names))}
	seen := map[[2]string]bool{}
	for _, id := range idents {
		obj := info.Uses[id]
		if obj.Pkg() != pkg || !obj.Pos().IsValid() || !counted(pkg, obj) {
			continue
		}
		a, b := base(id.Pos()), base(obj.Pos())
		if a == b || !slices.Contains(g.files, b) || seen[[2]string{a, b}] {
			continue
		}
		seen[[2]string{a, b}] = true
		g.refs = append(g.refs, ref{from: a, to: b, name: obj.Name()})
	}
	sort.SliceStable(g.refs, func(i, j int) bool {
		x, y := g.refs[i], g.refs[j]
		return x.from < y.from || x.from == y.from && x.to < y.to
	})
	return g, nil
}

// counted reports whether a use of obj is a reference: a package-level
// identifier or a method.
func counted(pkg *types.Package, obj types.Object) bool {
	if obj.Parent() == pkg.Scope() {
		return true
	}
	f, ok := obj.(*types.Func)
	return ok && f.Signature().Recv() != nil
}

func goList(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}
