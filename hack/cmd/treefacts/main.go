// Command treefacts prints facts about the layout of a zonepath checkout
// (its tracked files, as hack/layout reads them):
// each top-level folder, its Go packages and lines, and which other
// top-level folders it imports; the main packages that do not live at
// <area>/cmd/<name>; and, for the packages named by -pkg, the largest file
// and the longest function. Issue 24 compares its output before and after
// the house move:
//
//	go run ./hack/cmd/treefacts -root . -pkg driver/plugin
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/zonepath/zonepath/hack/layout"
)

const module = "github.com/zonepath/zonepath/"

// folder is what treefacts knows about one top-level folder.
type folder struct {
	packages map[string]bool
	files    int
	lines    int
	imports  map[string]bool // by code
	tests    map[string]bool // by _test.go files only
}

func main() {
	root := flag.String("root", ".", "the checkout to read")
	pkgs := flag.String("pkg", "driver/plugin", "comma-separated package folders whose largest file and longest function to print")
	flag.Parse()
	if err := run(*root, strings.Split(*pkgs, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "treefacts:", err)
		os.Exit(1)
	}
}

func run(root string, pkgs []string) error {
	files, err := layout.TrackedFiles(root)
	if err != nil {
		return err
	}
	folders := map[string]*folder{}
	for _, f := range layout.GoFiles(files) {
		if err := count(folders, root, f); err != nil {
			return err
		}
	}
	mains, err := layout.MainPackages(root, files)
	if err != nil {
		return err
	}
	printFolders(folders)
	printMains(mains)
	for _, p := range pkgs {
		if err := printPackage(filepath.Join(root, p), p); err != nil {
			return err
		}
	}
	return nil
}

// count adds one Go file, rel to root, to its top-level folder's facts.
func count(folders map[string]*folder, root, rel string) error {
	path := filepath.Join(root, rel)
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, data, parser.ImportsOnly)
	if err != nil {
		return err
	}
	top, _, _ := strings.Cut(rel, "/")
	fo := folders[top]
	if fo == nil {
		fo = &folder{packages: map[string]bool{}, imports: map[string]bool{}, tests: map[string]bool{}}
		folders[top] = fo
	}
	fo.packages[filepath.ToSlash(filepath.Dir(rel))] = true
	fo.files++
	fo.lines += strings.Count(string(data), "\n")
	for _, imp := range f.Imports {
		p := strings.Trim(imp.Path.Value, `"`)
		if !strings.HasPrefix(p, module) {
			continue
		}
		switch other, _, _ := strings.Cut(strings.TrimPrefix(p, module), "/"); {
		case other == top:
		case strings.HasSuffix(rel, "_test.go"):
			fo.tests[other] = true
		default:
			fo.imports[other] = true
		}
	}
	return nil
}

func printFolders(folders map[string]*folder) {
	fmt.Println("top-level folder  packages  files  lines  imports (zonepath folders; tests only in brackets)")
	for _, name := range slices.Sorted(maps.Keys(folders)) {
		fo := folders[name]
		imports := slices.Sorted(maps.Keys(fo.imports))
		for _, t := range slices.Sorted(maps.Keys(fo.tests)) {
			if !fo.imports[t] {
				imports = append(imports, "["+t+"]")
			}
		}
		fmt.Printf("%-17s %8d %6d %6d  %s\n", name, len(fo.packages), fo.files, fo.lines, strings.Join(imports, ", "))
	}
}

// printMains lists the main packages and whether each follows
// <area>/cmd/<name> (layout.OffConvention, the rule hack/layout's test holds).
func printMains(mains []string) {
	off := layout.OffConvention(mains)
	fmt.Println("\nmain packages (convention <area>/cmd/<name>)")
	for _, dir := range mains {
		verdict := "ok"
		if slices.Contains(off, dir) {
			verdict = "elsewhere"
		}
		fmt.Printf("  %-45s %s\n", dir, verdict)
	}
}

// printPackage prints the largest file and the longest function of one
// package folder, tests left out (they are tables, not logic), and the
// longest test function apart.
func printPackage(dir, name string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	var bigFile, longFunc, longTest string
	var bigLines, funcLines, testLines int
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			return err
		}
		isTest := strings.HasSuffix(e.Name(), "_test.go")
		if n := fset.File(f.Pos()).LineCount(); n > bigLines && !isTest {
			bigFile, bigLines = e.Name(), n
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			switch {
			case isTest && n > testLines:
				longTest, testLines = e.Name()+" "+fn.Name.Name, n
			case !isTest && n > funcLines:
				longFunc, funcLines = e.Name()+" "+fn.Name.Name, n
			}
		}
	}
	fmt.Printf("\n%s: largest file %s (%d lines); longest function %s (%d lines); longest test function %s (%d lines)\n",
		name, bigFile, bigLines, longFunc, funcLines, longTest, testLines)
	return nil
}
