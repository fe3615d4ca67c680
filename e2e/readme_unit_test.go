package e2e

import (
	"bufio"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	"k8s.io/kubernetes/test/e2e/storage/external"
	"sigs.k8s.io/yaml"
)

// The numbers and samples of e2e/README.md and of the personalities'
// README are checked here against what they describe: the spec tree (as
// ginkgo.PreviewSpecs expands it, without a cluster), the label filters
// of hack/conformance.sh and kind/e2e.sh, and the personality files. A
// change of the suite, a filter or a personality that leaves a page
// stale fails these tests.

const readme = "README.md"

var suiteSpecs struct {
	once  sync.Once
	specs types.SpecReports
	err   error
}

// ourSpecs are zonepath's specs (the It nodes outside upstream's common
// specs) as defined for testdata/zonepath.yaml, expanded once by
// ginkgo.PreviewSpecs. A suite run (--kubeconfig, -storage.testdriver)
// skips: its own driver file defines the specs, and a second definition
// here would join them.
func ourSpecs(t *testing.T) types.SpecReports {
	t.Helper()
	unitRunOnly(t)
	suiteSpecs.once.Do(func() {
		if err := external.AddDriverDefinition("testdata/zonepath.yaml"); err != nil {
			suiteSpecs.err = err
			return
		}
		r := ginkgo.PreviewSpecs("zonepath e2e")
		for _, s := range r.SpecReports {
			if s.LeafNodeType == types.NodeTypeIt && !strings.Contains(s.LeafNodeLocation.FileName, upstreamCommonSpecs) {
				suiteSpecs.specs = append(suiteSpecs.specs, s)
			}
		}
	})
	if suiteSpecs.err != nil {
		t.Fatal(suiteSpecs.err)
	}
	if len(suiteSpecs.specs) == 0 {
		t.Fatal("PreviewSpecs found none of zonepath's specs: the driver file defined no suite")
	}
	return suiteSpecs.specs
}

// unitRunOnly skips a suite run (--kubeconfig, -storage.testdriver): the
// binary then runs from wherever it was started, not from e2e/, and its
// driver file defines the specs.
func unitRunOnly(t *testing.T) {
	t.Helper()
	if askedForSuite(flag.CommandLine) {
		t.Skip("a suite run: the README's figures are checked by go test ./e2e")
	}
}

// selected counts the specs a --ginkgo.label-filter selects.
func selected(t *testing.T, specs types.SpecReports, filter string) int {
	t.Helper()
	match, err := types.ParseLabelFilter(filter)
	if err != nil {
		t.Fatalf("label filter %q: %v", filter, err)
	}
	n := 0
	for _, s := range specs {
		if match(s.Labels()) {
			n++
		}
	}
	return n
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// tableRows returns the cells of every row of the Markdown table whose
// header row begins with header, the header and separator left out; a
// cell's "\|" is a "|". hack/layout's FirstColumn scans tables the same
// way; hack/importrules lets neither folder import the other.
func tableRows(markdown, header string) ([][]string, error) {
	var rows [][]string
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
			line = strings.ReplaceAll(strings.Trim(line, "|"), `\|`, "\x00")
			var cells []string
			for c := range strings.SplitSeq(line, "|") {
				cells = append(cells, strings.ReplaceAll(strings.TrimSpace(c), "\x00", "|"))
			}
			rows = append(rows, cells)
		}
	}
	if !found {
		return nil, fmt.Errorf("no table with header %q", header)
	}
	return rows, sc.Err()
}

// code is the text of a cell that is one code span, without the backticks.
func code(cell string) string { return strings.Trim(cell, "`") }

// scriptFilters returns, by run name, the label filter of each line of a
// shell script that calls fn with the run's name first and
// --ginkgo.label-filter among its words, or (kind/e2e.sh) the filter as
// the last word of a "run NAME ..." line.
var quotedOrWord = `('[^']*'|\S+)`

func scriptFilters(script string, re *regexp.Regexp) map[string]string {
	script = strings.ReplaceAll(script, "\\\n", " ")
	out := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(script, -1) {
		out[m[1]] = strings.Trim(m[2], "'")
	}
	return out
}

// conformanceRuns: hack/conformance.sh's "e2e RUN DIR DRIVER EXT ... --ginkgo.label-filter FILTER".
var conformanceRuns = regexp.MustCompile(`(?m)^[ \t]*e2e (\S+) .*--ginkgo\.label-filter ` + quotedOrWord)

// kindRuns: kind/e2e.sh's "NAME) run NAME OVERLAY EXT FILTER ;;".
var kindRuns = regexp.MustCompile(`(?m)^\s*\S+\) run (\S+) \S+ \S+ ` + quotedOrWord + ` ;;`)

// TestREADMESpecCounts: the suite's size, the runs table of make
// conformance (its label filters as hack/conformance.sh has them, and the
// specs each selects) and junitmerge's sample line.
func TestREADMESpecCounts(t *testing.T) {
	specs := ourSpecs(t)
	md := readFile(t, readme)

	m := regexp.MustCompile(`The suite has (\d+) specs`).FindStringSubmatch(md)
	if m == nil {
		t.Fatal(`README.md: no "The suite has N specs"`)
	}
	if n, _ := strconv.Atoi(m[1]); n != len(specs) {
		t.Errorf("README.md: the suite has %d specs, the spec tree %d", n, len(specs))
	}

	filters := scriptFilters(readFile(t, "../hack/conformance.sh"), conformanceRuns)
	if len(filters) == 0 {
		t.Fatal("hack/conformance.sh: no e2e run with a --ginkgo.label-filter found")
	}
	rows, err := tableRows(md, "| run | cluster | extension file | label filter | specs |")
	if err != nil {
		t.Fatal(err)
	}
	runSpecs := map[string]int{}
	for _, r := range rows {
		if len(r) != 5 {
			t.Errorf("runs table row %q: want 5 cells", r)
			continue
		}
		name, filter := code(r[0]), code(r[3])
		if want, ok := filters[name]; !ok {
			t.Errorf("runs table: run %s is not one of hack/conformance.sh's (%v)", name, slices.Sorted(maps.Keys(filters)))
		} else if filter != want {
			t.Errorf("runs table: run %s's label filter is %q, hack/conformance.sh's %q", name, filter, want)
		}
		n, err := strconv.Atoi(r[4])
		if err != nil {
			t.Errorf("runs table: run %s: specs %q is no number", name, r[4])
		}
		if got := selected(t, specs, filter); n != got {
			t.Errorf("runs table: run %s selects %d specs, the table says %d", name, got, n)
		}
		runSpecs[name] = n
	}
	if len(runSpecs) != len(filters) {
		t.Errorf("runs table lists %d runs, hack/conformance.sh has %d", len(runSpecs), len(filters))
	}

	// junitmerge's sample line: every run with its spec count, and
	// passed + failed + skipped their sum.
	line := regexp.MustCompile("`(e2e: (\\d+) passed, (\\d+) failed, (\\d+) skipped; runs: [^`]*)`").FindStringSubmatch(strings.ReplaceAll(md, "\n", " "))
	if line == nil {
		t.Fatal("README.md: no junitmerge sample line `e2e: N passed, ...`")
	}
	total := 0
	for _, c := range line[2:5] {
		n, _ := strconv.Atoi(c)
		total += n
	}
	sum := 0
	seen := 0
	for _, r := range regexp.MustCompile(`(\S+) [\d.]+s \((\d+) specs\)`).FindAllStringSubmatch(line[1], -1) {
		n, _ := strconv.Atoi(r[2])
		sum += n
		seen++
		if want, ok := runSpecs[r[1]]; !ok || n != want {
			t.Errorf("junitmerge sample: run %s has %d specs, the runs table %d", r[1], n, want)
		}
	}
	if seen != len(runSpecs) {
		t.Errorf("junitmerge sample names %d runs, the runs table %d", seen, len(runSpecs))
	}
	if total != sum {
		t.Errorf("junitmerge sample: %d passed+failed+skipped, its runs %d specs", total, sum)
	}
}

// TestKindRunsCoverEverySpec: kind/e2e.sh's runs, which the README says
// run every spec, select each spec exactly once.
func TestKindRunsCoverEverySpec(t *testing.T) {
	specs := ourSpecs(t)
	filters := scriptFilters(readFile(t, "../kind/e2e.sh"), kindRuns)
	if len(filters) == 0 {
		t.Fatal("kind/e2e.sh: no run with a label filter found")
	}
	for _, s := range specs {
		var in []string
		for name, f := range filters {
			if match, err := types.ParseLabelFilter(f); err != nil {
				t.Fatalf("kind/e2e.sh run %s: %v", name, err)
			} else if match(s.Labels()) {
				in = append(in, name)
			}
		}
		if len(in) != 1 {
			t.Errorf("kind/e2e.sh: spec %q (labels %v) runs in %d runs %v, not one", s.LeafNodeText, s.Labels(), len(in), in)
		}
	}
}

// personality is what these tests read of a personality.yaml.
type personality struct {
	Cluster  string   `json:"cluster"`
	Lacks    []string `json:"lacks"`
	E2EFlags []string `json:"e2eFlags"`
}

const personalities = "testdata/personalities"

func loadPersonalities(t *testing.T) map[string]personality {
	t.Helper()
	unitRunOnly(t)
	dirs, err := filepath.Glob(filepath.Join(personalities, "*", "personality.yaml"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no %s/*/personality.yaml: %v", personalities, err)
	}
	out := map[string]personality{}
	for _, f := range dirs {
		var p personality
		if err := yaml.Unmarshal([]byte(readFile(t, f)), &p); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		name := filepath.Base(filepath.Dir(f))
		if p.Cluster == "" {
			p.Cluster = name
		}
		out[name] = p
	}
	return out
}

// labelFilter is a personality's --ginkgo.label-filter ("" for none).
func (p personality) labelFilter() string {
	filter := ""
	for _, f := range p.E2EFlags {
		if v, ok := strings.CutPrefix(strings.TrimLeft(f, "-"), "ginkgo.label-filter="); ok {
			filter = v
		}
	}
	return filter
}

// TestREADMEMatrixTable: e2e/README.md's table of the conformance matrix
// has one row per personality folder, with its cluster and the number of
// specs its e2eFlags' label filter selects.
func TestREADMEMatrixTable(t *testing.T) {
	specs := ourSpecs(t)
	ps := loadPersonalities(t)
	rows, err := tableRows(readFile(t, readme), "| personality | cluster | e2e specs |")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rows {
		if len(r) != 3 {
			t.Errorf("matrix table row %q: want 3 cells", r)
			continue
		}
		name := code(r[0])
		names = append(names, name)
		p, ok := ps[name]
		if !ok {
			t.Errorf("matrix table: %s is no folder of %s", name, personalities)
			continue
		}
		if code(r[1]) != p.Cluster {
			t.Errorf("matrix table: %s runs on %s's cluster, the table says %s", name, p.Cluster, r[1])
		}
		if n, err := strconv.Atoi(r[2]); err != nil || n != selected(t, specs, p.labelFilter()) {
			t.Errorf("matrix table: %s's label filter %q selects %d specs, the table says %s", name, p.labelFilter(), selected(t, specs, p.labelFilter()), r[2])
		}
	}
	for name := range ps {
		if !slices.Contains(names, name) {
			t.Errorf("matrix table leaves out personality %s", name)
		}
	}
}

// TestPersonalitiesREADMETable: testdata/personalities/README.md's table
// names every personality with its cluster ("own" or the owner's name)
// and its lacks.
func TestPersonalitiesREADMETable(t *testing.T) {
	ps := loadPersonalities(t)
	rows, err := tableRows(readFile(t, filepath.Join(personalities, readme)), "| personality | cluster |")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rows {
		name := code(r[0])
		names = append(names, name)
		p, ok := ps[name]
		if !ok {
			t.Errorf("personalities table: %s is no folder", name)
			continue
		}
		cluster := code(strings.Fields(r[1] + " x")[0])
		if cluster == "own" {
			cluster = name
		}
		if cluster != p.Cluster {
			t.Errorf("personalities table: %s runs on %s's cluster, the table says %q", name, p.Cluster, r[1])
		}
		var lacks []string
		for l := range strings.SplitSeq(r[len(r)-1], ",") {
			if l = code(strings.TrimSpace(l)); l != "" {
				lacks = append(lacks, l)
			}
		}
		if !slices.Equal(lacks, p.Lacks) {
			t.Errorf("personalities table: %s lacks %q, the table says %q", name, p.Lacks, lacks)
		}
	}
	for name := range ps {
		if !slices.Contains(names, name) {
			t.Errorf("personalities table leaves out %s", name)
		}
	}
}

// TestREADMEPersonalityExample: the personality.yaml that e2e/README.md
// shows is the file it names, line for line once its comments are taken
// out (the README's trailing "# ..." notes, the file's comment lines).
func TestREADMEPersonalityExample(t *testing.T) {
	unitRunOnly(t)
	md := readFile(t, readme)
	const file = "testdata/personalities/zone-only/personality.yaml"
	i := strings.Index(md, "[`"+file+"`]")
	if i < 0 {
		t.Fatalf("README.md: no link [`%s`] before its example", file)
	}
	start := strings.Index(md[i:], "```yaml\n")
	if start < 0 {
		t.Fatalf("README.md: no ```yaml block after the link to %s", file)
	}
	block := md[i+start+len("```yaml\n"):]
	block, _, _ = strings.Cut(block, "```")
	trailing := regexp.MustCompile(`\s+#.*$`)
	if got, want := yamlLines(block, trailing), yamlLines(readFile(t, file), nil); !slices.Equal(got, want) {
		t.Errorf("README.md's example of %s, its notes left out:\n%s\nthe file, its comments left out:\n%s",
			file, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// yamlLines are the lines of a YAML text without blank and comment lines,
// and without what trailing matches (nil: nothing).
func yamlLines(text string, trailing *regexp.Regexp) []string {
	var out []string
	for l := range strings.Lines(text) {
		if trailing != nil {
			l = trailing.ReplaceAllString(strings.TrimRight(l, "\n"), "")
		}
		l = strings.TrimRight(l, " \n")
		if l == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		out = append(out, l)
	}
	return out
}
