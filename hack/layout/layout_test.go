package layout

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const root = "../.."

// The tables and their headers, as README.md and ARCHITECTURE.md write them.
var tables = []struct {
	file, header string
	folders      func(files []string) []string
}{
	{"README.md", "| folder |", TopFolders},
	{"ARCHITECTURE.md", "| package |", GoPackages},
}

// TestTablesMatchTree fails when README's folder table or ARCHITECTURE's
// package table names a folder that does not exist or leaves one out.
func TestTablesMatchTree(t *testing.T) {
	files, err := TrackedFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tables {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(root, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			names, err := FirstColumn(string(data), tc.header)
			if err != nil {
				t.Fatalf("%s: %v", tc.file, err)
			}
			missing, unknown := Diff(names, tc.folders(files))
			for _, m := range missing {
				t.Errorf("%s's table %q leaves out %s", tc.file, tc.header, m)
			}
			for _, u := range unknown {
				t.Errorf("%s's table %q names %s, which does not exist", tc.file, tc.header, u)
			}
		})
	}
}

// TestBinariesFollowConvention fails when a main package lives anywhere
// but <area>/cmd/<name>.
func TestBinariesFollowConvention(t *testing.T) {
	files, err := TrackedFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	mains, err := MainPackages(root, files)
	if err != nil {
		t.Fatal(err)
	}
	if len(mains) == 0 {
		t.Fatal("no main package found: the walk is broken")
	}
	for _, m := range OffConvention(mains) {
		t.Errorf("main package %s: binaries live at <area>/cmd/<name>", m)
	}
}

func TestFirstColumn(t *testing.T) {
	md := strings.Join([]string{
		"text",
		"| folder | what |",
		"|---|---|",
		"| [`driver/`](driver/README.md) | the driver, not `hack/` |",
		"| `a/cmd/*`, `b` | two |",
		"",
		"| other | x |",
		"| `c` | not this table |",
	}, "\n")
	got, err := FirstColumn(md, "| folder |")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"driver", "a/cmd/*", "b"}; !slices.Equal(got, want) {
		t.Errorf("FirstColumn = %q, want %q", got, want)
	}
	if _, err := FirstColumn(md, "| package |"); err == nil {
		t.Error("FirstColumn of a missing table: no error")
	}
}

func TestDiff(t *testing.T) {
	folders := []string{"a", "a/cmd/x", "a/cmd/y", "b"}
	tests := []struct {
		name             string
		names            []string
		missing, unknown []string
	}{
		{"all named", []string{"a", "a/cmd/x", "a/cmd/y", "b"}, nil, nil},
		{"a wildcard covers cmd", []string{"a", "a/cmd/*", "b"}, nil, nil},
		{"one left out", []string{"a", "a/cmd/*"}, []string{"b"}, nil},
		{"one that does not exist", []string{"a", "a/cmd/*", "b", "c"}, nil, []string{"c"}},
		{"a wildcard matching nothing", []string{"a", "a/cmd/*", "b", "b/cmd/*"}, nil, []string{"b/cmd/*"}},
		{"a prefix is not the folder", []string{"a/cmd", "b"}, []string{"a", "a/cmd/x", "a/cmd/y"}, []string{"a/cmd"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			missing, unknown := Diff(tc.names, folders)
			if !slices.Equal(missing, tc.missing) || !slices.Equal(unknown, tc.unknown) {
				t.Errorf("Diff = missing %q unknown %q, want %q %q", missing, unknown, tc.missing, tc.unknown)
			}
		})
	}
}

func TestGoPackagesAndConvention(t *testing.T) {
	files := []string{"go.mod", "a/x.go", "a/testdata/t.go", "hack/components/etcd/go.mod", "hack/components/etcd/tools.go",
		"a/cmd/tool/main.go", "b/tool/main.go", "README.md"}
	if got, want := GoPackages(files), []string{"a", "a/cmd/tool", "b/tool"}; !slices.Equal(got, want) {
		t.Errorf("GoPackages = %q, want %q", got, want)
	}
	if got, want := TopFolders(files), []string{"a", "b", "hack"}; !slices.Equal(got, want) {
		t.Errorf("TopFolders = %q, want %q", got, want)
	}
	if got, want := OffConvention([]string{"a/cmd/tool", "b/tool", "c/cmd/x/y"}), []string{"b/tool", "c/cmd/x/y"}; !slices.Equal(got, want) {
		t.Errorf("OffConvention = %q, want %q", got, want)
	}
}

// TestMarkdownLinks fails when a tracked Markdown file links to a file or
// folder of the tree that does not exist, as moves leave behind.
func TestMarkdownLinks(t *testing.T) {
	forTracked(t, "Markdown file", func(f string) bool { return strings.HasSuffix(f, ".md") }, func(f, text string) {
		for _, l := range BrokenLinks(root, f, text) {
			t.Errorf("%s links to %s, which does not exist", f, l)
		}
	})
}

// forTracked calls check with the text of every tracked file keep
// admits, and fails when there is none (the walk would be broken).
func forTracked(t *testing.T, what string, keep func(string) bool, check func(file, text string)) {
	t.Helper()
	files, err := TrackedFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		if !keep(f) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		checked++
		check(f, string(data))
	}
	if checked == 0 {
		t.Fatalf("no %s found: the walk is broken", what)
	}
}

func TestBrokenLinks(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "b", "x.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	md := "[ok](b/x.go) [dir](b) [anchor](b/x.go#L3) [up](../a/b) [page](#top) [web](https://k8s.io/x) [gone](c/y.go) [gone too](../z#s)"
	got := BrokenLinks(dir, "a/README.md", md)
	if want := []string{"c/y.go", "../z#s"}; !slices.Equal(got, want) {
		t.Errorf("BrokenLinks = %q, want %q", got, want)
	}
}

// citingFolders hold the files a user reads beside the repository
// (workflows, the vendor action, manifests): every document they cite
// must be in it.
var citingFolders = []string{".github/", "deploy/"}

// TestConfigCitesRepositoryDocs fails when a workflow, action or manifest
// cites a Markdown document the repository does not hold. Go files aside:
// their strings and comments name documents of other modules (the CSI
// spec.md).
func TestConfigCitesRepositoryDocs(t *testing.T) {
	keep := func(f string) bool {
		return !strings.HasSuffix(f, ".md") && !strings.HasSuffix(f, ".go") &&
			slices.ContainsFunc(citingFolders, func(d string) bool { return strings.HasPrefix(f, d) })
	}
	forTracked(t, "workflow or manifest", keep, func(f, text string) {
		for _, d := range CitedDocs(root, f, text) {
			t.Errorf("%s cites %s, which is not in the repository", f, d)
		}
	})
}

func TestCitedDocs(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"README.md", "a/b/NOTES.md"} {
		if err := os.MkdirAll(filepath.Join(dir, path.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, file, text string
		want             []string
	}{
		{"root document", "x/w.yaml", `# (README.md "Scheduler")`, nil},
		{"path from the root", "x/w.yaml", "# see a/b/NOTES.md#usage.", nil},
		{"beside the file", "a/b/w.yaml", "# NOTES.md", nil},
		{"up from the file", "a/b/w.yaml", "# see ../../README.md.", nil},
		{"a URL", "x/w.yaml", "# https://example.com/docs/design.md", nil},
		{"not a document", "x/w.yaml", "# design.mdx, md, .md5", nil},
		{"outside the repository", "x/w.yaml", "# recorded in design.md §6.", []string{"design.md"}},
		{"wrong folder", "x/w.yaml", "# x/NOTES.md and `b/README.md`", []string{"x/NOTES.md", "b/README.md"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := CitedDocs(dir, tc.file, tc.text); !slices.Equal(got, tc.want) {
				t.Errorf("CitedDocs = %q, want %q", got, tc.want)
			}
		})
	}
}
