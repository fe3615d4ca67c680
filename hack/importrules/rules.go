package importrules

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Module is this repository's module path.
const Module = "github.com/zonepath/zonepath"

// Rule says what the code of one top-level folder (or of a deeper folder with its own rule) may import from this
// module, as folder prefixes ("driver/world" admits driver/world and its
// subpackages). A folder may always import itself.
type Rule struct {
	// Code: what non-test files may import.
	Code []string
	// Tests: what _test.go files may import besides Code.
	Tests []string
	// Why is printed with a violation.
	Why string
}

// Rules are the boundaries between the top-level folders. A folder that
// is not listed is a violation too, so a new one gets a rule on day one.
var Rules = map[string]Rule{
	"internal": {Why: "shared plumbing: it must not depend on what it serves"},
	"driver": {Code: []string{"internal"}, Tests: []string{"sanity"},
		Why: "the CSI driver stands alone: it knows nothing of Kubernetes controllers or the harness; tests run our sanity suite on it"},
	"controllers": {Code: []string{"internal"}, Tests: []string{"driver"},
		Why: "the controllers work with any CSI driver; tests may run ours"},
	"sanity": {Code: []string{"internal"}, Tests: []string{"driver"},
		Why: "vendors import sanity: it must not pull in the mock driver; tests prove each rule with a broken one"},
	"fakezones": {Code: []string{"driver", "controllers", "deploy/render", "internal"},
		Why: "fake zones run our driver and controllers in-process and apply deploy/'s RBAC, rendered by deploy/render"},
	"e2e": {Code: []string{"fakezones/spec", "internal"},
		Why: "the suite tests any driver through the Kubernetes API, never our internals"},
	// The matrix is no part of the suite: it runs zonepath's own
	// personalities on fake-zones clusters, and puts a personality's
	// driver fault file in force as zonepath-cluster's zone command does.
	"e2e/cmd/matrix": {Code: []string{"e2e", "fakezones/spec", "fakezones/cluster", "driver/faults", "internal"},
		Why: "the matrix drives zonepath's fake-zones clusters: it may use their fault files, nothing else of the driver"},
	"deploy": {Code: []string{"controllers", "driver/world", "internal"}, Tests: []string{"driver"},
		Why: "manifests are checked against the scheduler's args and the driver's topology"},
	"kind": {Tests: []string{"driver/world"},
		Why: "kind's tools turn configs into clusters and share no code with what runs on them; a test checks the config against the driver's topology file"},
	"bench": {Code: []string{"driver/drivertest", "controllers/snapshotapi", "fakezones", "internal"},
		Why: "benchmarks time our binaries over their sockets and the API: the driver only through drivertest's requests; no other folder imports bench"},
	"hack": {Tests: []string{"internal"},
		Why: "build and release tooling reads the tree as files and runs it as binaries; it shares no code with it"},
}

// Violation is one import that breaks a rule.
type Violation struct {
	File, Import string
	Rule         Rule
}

func (v Violation) String() string {
	return fmt.Sprintf("%s imports %s: %s", v.File, v.Import, v.Rule.Why)
}

// Check reads every .go file below root (a checkout of Module) and
// returns the imports that break rules, sorted by file. Folders holding
// their own go.mod, testdata and the output folders are not this module.
func Check(root string, rules map[string]Rule) ([]Violation, error) {
	var out []Violation
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			return skipDir(path, rel, d.Name())
		}
		if !strings.HasSuffix(rel, ".go") || !strings.Contains(rel, "/") {
			return nil
		}
		vs, err := checkFile(path, rel, rules)
		out = append(out, vs...)
		return err
	})
	return out, err
}

func skipDir(path, rel, name string) error {
	if rel == "." {
		return nil
	}
	if name == "testdata" || name == "bin" || name == "_output" || strings.HasPrefix(name, ".") {
		return filepath.SkipDir
	}
	if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
		return filepath.SkipDir // another module
	}
	return nil
}

func checkFile(path, rel string, rules map[string]Rule) ([]Violation, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	top, rule, known := ruleOf(rel, rules)
	var out []Violation
	for _, spec := range f.Imports {
		imp, err := strconv.Unquote(spec.Path.Value)
		if err != nil || !strings.HasPrefix(imp, Module+"/") {
			continue
		}
		target := strings.TrimPrefix(imp, Module+"/")
		if !known {
			out = append(out, Violation{File: rel, Import: imp, Rule: Rule{Why: "top-level folder " + top + " has no rule in hack/importrules"}})
			continue
		}
		if !rule.allows(top, target, strings.HasSuffix(rel, "_test.go")) {
			out = append(out, Violation{File: rel, Import: imp, Rule: rule})
		}
	}
	return out, nil
}

// ruleOf is the rule of the deepest folder holding rel that has one, and
// that folder; a top-level folder without a rule is not known.
func ruleOf(rel string, rules map[string]Rule) (string, Rule, bool) {
	top, _, _ := strings.Cut(rel, "/")
	key := top
	for k := range rules {
		if strings.HasPrefix(rel, k+"/") && len(k) > len(key) {
			key = k
		}
	}
	rule, known := rules[key]
	return key, rule, known
}

func (r Rule) allows(self, target string, test bool) bool {
	allowed := append([]string{self}, r.Code...)
	if test {
		allowed = append(allowed, r.Tests...)
	}
	return slices.ContainsFunc(allowed, func(prefix string) bool {
		return target == prefix || strings.HasPrefix(target, prefix+"/")
	})
}
