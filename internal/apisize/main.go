// Command apisize counts the exported identifiers of the library's public
// packages, the size of the API a user reads: package-level constants,
// variables, types and functions, and the methods of exported types
// (interface methods included). Struct fields are not counted: they are
// read with their type. Test files, package main and internal packages
// are left out. .ci/run prints it; issue 28's targets are toolkit at most
// 150 and the whole library at most 850.
//
//	go run ./internal/apisize [module root]
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	counts, err := count(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apisize:", err)
		os.Exit(1)
	}
	names := make([]string, 0, len(counts))
	total := 0
	for p, n := range counts {
		names = append(names, p)
		total += n
	}
	sort.Strings(names)
	for _, p := range names {
		fmt.Printf("%-26s %4d\n", p, counts[p])
	}
	fmt.Printf("%-26s %4d (toolkit %d)\n", "library", total, counts["toolkit"])
}

// skipped are the folders that hold no public package of the library.
var skipped = map[string]bool{"internal": true, "cmd": true, "bench": true, "clients": true, "docs": true, "testdata": true, "node_modules": true}

// count returns the exported identifiers of each public package under
// root, by its path relative to root.
func count(root string) (map[string]int, error) {
	out := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if path != root && (skipped[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		pkgs, err := parser.ParseDir(token.NewFileSet(), path, func(fi fs.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, p := range pkgs {
			if p.Name == "main" {
				continue
			}
			rel, _ := filepath.Rel(root, path)
			for _, f := range p.Files {
				out[filepath.ToSlash(rel)] += exported(f)
			}
		}
		return nil
	})
	return out, err
}

// exported counts a file's exported identifiers.
func exported(f *ast.File) int {
	n := 0
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() && (d.Recv == nil || exportedReceiver(d.Recv.List[0].Type)) {
				n++
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					n++
					if it, ok := s.Type.(*ast.InterfaceType); ok {
						for _, m := range it.Methods.List {
							for _, name := range m.Names {
								if name.IsExported() {
									n++
								}
							}
						}
					}
				case *ast.ValueSpec:
					for _, name := range s.Names {
						if name.IsExported() {
							n++
						}
					}
				}
			}
		}
	}
	return n
}

// exportedReceiver reports whether a method's receiver type is exported
// (T, *T, T[P], *T[P]).
func exportedReceiver(t ast.Expr) bool {
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.IsExported()
		default:
			return false
		}
	}
}
