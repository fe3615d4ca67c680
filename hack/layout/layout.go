package layout

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// codeSpan is a backticked name in a table cell: `driver/`, `controllers/cmd/*`.
var codeSpan = regexp.MustCompile("`([^`]+)`")

// FirstColumn returns the names in the first cell of every row of the
// Markdown table whose header row begins with header ("| folder |"), in
// order: each backticked name in the cell, without a trailing slash.
func FirstColumn(markdown, header string) ([]string, error) {
	var names []string
	inTable, found := false, false
	sc := bufio.NewScanner(strings.NewReader(markdown))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, header):
			inTable, found = true, true
		case inTable && !strings.HasPrefix(line, "|"):
			inTable = false
		case inTable && !strings.HasPrefix(line, "|---"):
			cell, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
			for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
				names = append(names, strings.TrimSuffix(m[1], "/"))
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("no table with header %q", header)
	}
	return names, sc.Err()
}

// Diff compares the names a table gives with the folders of the tree. A
// name may end in "/*" for every folder below it ("controllers/cmd/*"),
// which must match at least one. It returns the folders the table leaves
// out and the names that match nothing.
func Diff(names, folders []string) (missing, unknown []string) {
	covered := map[string]bool{}
	for _, n := range names {
		matched := false
		for _, f := range folders {
			if n == f || (strings.HasSuffix(n, "/*") && path.Dir(f) == strings.TrimSuffix(n, "/*")) {
				covered[f], matched = true, true
			}
		}
		if !matched {
			unknown = append(unknown, n)
		}
	}
	for _, f := range folders {
		if !covered[f] {
			missing = append(missing, f)
		}
	}
	return missing, unknown
}

// TrackedFiles are the files git tracks below root, slash-separated.
func TrackedFiles(root string) ([]string, error) {
	out, err := exec.Command("git", "-C", root, "ls-files").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files in %s: %w", root, err)
	}
	return strings.Fields(string(out)), nil
}

// TopFolders are the top-level folders holding a tracked file.
func TopFolders(files []string) []string {
	set := map[string]bool{}
	for _, f := range files {
		if top, _, ok := strings.Cut(f, "/"); ok {
			set[top] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// GoFiles are the tracked Go files of this module: not in the root
// folder, not under testdata, not below another module's go.mod.
func GoFiles(files []string) []string {
	modules := map[string]bool{}
	for _, f := range files {
		if path.Base(f) == "go.mod" && f != "go.mod" {
			modules[path.Dir(f)] = true
		}
	}
	var out []string
	for _, f := range files {
		dir := path.Dir(f)
		if strings.HasSuffix(f, ".go") && dir != "." && !strings.Contains("/"+dir+"/", "/testdata/") && !below(dir, modules) {
			out = append(out, f)
		}
	}
	return out
}

// GoPackages are the folders of GoFiles.
func GoPackages(files []string) []string {
	set := map[string]bool{}
	for _, f := range GoFiles(files) {
		set[path.Dir(f)] = true
	}
	return slices.Sorted(maps.Keys(set))
}

func below(dir string, modules map[string]bool) bool {
	for d := dir; d != "."; d = path.Dir(d) {
		if modules[d] {
			return true
		}
	}
	return false
}

// MainPackages are the packages of GoFiles whose non-test files are
// package main.
func MainPackages(root string, files []string) ([]string, error) {
	set := map[string]bool{}
	for _, f := range GoFiles(files) {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), path.Join(root, f), nil, parser.PackageClauseOnly)
		if err != nil {
			if os.IsNotExist(err) {
				continue // tracked but deleted in the working tree
			}
			return nil, err
		}
		if parsed.Name.Name == "main" {
			set[path.Dir(f)] = true
		}
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// OffConvention are the main packages not at <area>/cmd/<name>.
func OffConvention(mains []string) []string {
	var out []string
	for _, m := range mains {
		parts := strings.Split(m, "/")
		if len(parts) != 3 || parts[1] != "cmd" {
			out = append(out, m)
		}
	}
	return out
}

// mdLink is a Markdown link's target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// BrokenLinks are the relative links of one Markdown file, at path below
// root, whose file or folder does not exist; URLs and anchors within the
// page are not checked.
func BrokenLinks(root, file, markdown string) []string {
	var out []string
	for _, m := range mdLink.FindAllStringSubmatch(markdown, -1) {
		target, _, _ := strings.Cut(m[1], "#")
		if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, path.Dir(file), target)); err != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// CitedDocs are the Markdown documents that one non-Markdown file, at
// path below root, names in its text ("see design.md §6", "(README.md
// \"Scheduler\")") but that exist neither below root nor beside the file:
// a reader of a workflow or manifest can open only what the repository
// holds. URLs are not checked.
func CitedDocs(root, file, text string) []string {
	var out []string
	for _, word := range strings.Fields(text) {
		word = strings.TrimRight(strings.TrimLeft(word, "`'\"(["), "`'\"()[],.;:")
		doc, _, _ := strings.Cut(word, "#")
		if !strings.HasSuffix(doc, ".md") || strings.Contains(doc, "://") {
			continue
		}
		if !exists(filepath.Join(root, doc)) && !exists(filepath.Join(root, path.Dir(file), doc)) {
			out = append(out, word)
		}
	}
	return out
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
