// Command filerefs counts, inside a package, the references between its
// files that point back: issue 28 asks that at most 20% of toolkit's do.
//
// A reference is a pair of files (A, B), A not B, such that A uses a
// package-level identifier or a method declared in B (resolved by
// go/types, so a method call counts for the file that declares the
// method; struct fields and local names do not count: a field is read
// with its type). Each pair counts once, however many identifiers it
// involves. It points back when B comes before A in the package's reading
// order: a reader who reads the files in that order has already left B.
//
// The reading order is the one the package states in a comment line
// "// Reading order: a.go b.go ..." (in any of its files; files it does
// not name follow, alphabetically); a package that states none is read in
// go list's order, alphabetically. A pair of files that refer to each
// other has one reference pointing back in any order: the count of such
// pairs is printed too, the floor no reading order can go under.
//
//	go run ./internal/filerefs [-v] [package ...]   (default ./toolkit)
//
// -v lists the references that point back, with one identifier each.
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
	verbose := flag.Bool("v", false, "list the references that point back")
	flag.Parse()
	pkgs := flag.Args()
	if len(pkgs) == 0 {
		pkgs = []string{"./toolkit"}
	}
	for _, p := range pkgs {
		r, err := count(".", p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "filerefs:", err)
			os.Exit(1)
		}
		fmt.Printf("%s: %d of %d references between files (%.0f%%) point back (reading order: %s); %d pairs of files refer to each other\n",
			r.pkg, r.back, len(r.refs), r.percent(), r.orderFrom, r.mutual)
		if *verbose {
			for _, ref := range r.refs {
				if ref.back {
					fmt.Printf("\t%s -> %s (%s)\n", ref.from, ref.to, ref.name)
				}
			}
		}
	}
}

// ref is one reference between two files, with the first identifier (in
// source order) that makes it.
type ref struct {
	from, to, name string
	back           bool
}

type result struct {
	pkg       string
	refs      []ref // ordered by from, then to, in reading order
	back      int
	mutual    int
	orderFrom string // "stated" or "alphabetical"
}

func (r result) percent() float64 {
	if len(r.refs) == 0 {
		return 0
	}
	return 100 * float64(r.back) / float64(len(r.refs))
}

// count type-checks package pattern (with the export data go list gives
// its imports) from dir, and counts its references between files.
func count(dir, pattern string) (result, error) {
	out, err := goList(dir, "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", pattern)
	if err != nil {
		return result{}, err
	}
	exports := map[string]string{}
	for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
		if path, file, ok := strings.Cut(sc.Text(), "\t"); ok {
			exports[path] = file
		}
	}
	out, err = goList(dir, "-f", "{{.ImportPath}}\n{{.Dir}}\n{{join .GoFiles \"\\n\"}}", pattern)
	if err != nil {
		return result{}, err
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 3 {
		return result{}, fmt.Errorf("%s: one package with Go files expected", pattern)
	}
	path, pkgDir, names := lines[0], lines[1], lines[2:]
	fset := token.NewFileSet()
	files := make([]*ast.File, 0, len(names))
	for _, n := range names {
		f, err := parser.ParseFile(fset, filepath.Join(pkgDir, n), nil, parser.ParseComments)
		if err != nil {
			return result{}, err
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
		return result{}, err
	}

	order, from := readingOrder(names, files)
	rank := map[string]int{}
	for i, n := range order {
		rank[n] = i
	}
	base := func(p token.Pos) string { return filepath.Base(fset.Position(p).Filename) }
	first := map[[2]string]ref{}
	idents := make([]*ast.Ident, 0, len(info.Uses))
	for id := range info.Uses {
		idents = append(idents, id)
	}
	sort.Slice(idents, func(i, j int) bool { return idents[i].Pos() < idents[j].Pos() })
	for _, id := range idents {
		obj := info.Uses[id]
		if obj.Pkg() != pkg || !obj.Pos().IsValid() || !counted(pkg, obj) {
			continue
		}
		a, b := base(id.Pos()), base(obj.Pos())
		if _, ours := rank[b]; a == b || !ours {
			continue
		}
		if _, seen := first[[2]string{a, b}]; !seen {
			first[[2]string{a, b}] = ref{from: a, to: b, name: obj.Name(), back: rank[b] < rank[a]}
		}
	}
	r := result{pkg: path, orderFrom: from}
	for k, x := range first {
		r.refs = append(r.refs, x)
		if x.back {
			r.back++
		}
		if _, both := first[[2]string{k[1], k[0]}]; both && k[0] < k[1] {
			r.mutual++
		}
	}
	sort.Slice(r.refs, func(i, j int) bool {
		x, y := r.refs[i], r.refs[j]
		if x.from != y.from {
			return rank[x.from] < rank[y.from]
		}
		return rank[x.to] < rank[y.to]
	})
	return r, nil
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

const orderMark = "// Reading order:"

// readingOrder returns the files in the order the package states, those it
// does not name after them alphabetically; or alphabetically.
func readingOrder(names []string, files []*ast.File) ([]string, string) {
	for _, f := range files {
		for _, g := range f.Comments {
			for _, c := range g.List {
				if stated, ok := strings.CutPrefix(c.Text, orderMark); ok {
					return readingOrderOf(names, stated)
				}
			}
		}
	}
	return slices.Sorted(slices.Values(names)), "alphabetical"
}

// readingOrderOf returns names in the stated order, those it does not name
// after them alphabetically.
func readingOrderOf(names []string, stated string) ([]string, string) {
	rest := slices.Sorted(slices.Values(names))
	var order []string
	for _, n := range strings.Fields(stated) {
		if i := slices.Index(rest, n); i >= 0 {
			order = append(order, n)
			rest = slices.Delete(rest, i, i+1)
		}
	}
	return append(order, rest...), "stated"
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
