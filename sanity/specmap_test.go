package sanity_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// specMapFile is the spec-to-check map TestSpecMap holds to the code.
const specMapFile = "SPEC-MAP.md"

// mapRow is one clause of the map.
type mapRow struct {
	id, section, kw, clause string
	checks, mutants         []string // backticked tokens
	note                    string
}

// known is everything a map row may name: what exists in the code.
type known struct {
	spec      string              // spec.md
	rules     map[string]bool     // rule:<name> labels of the extensions
	scenarios map[string]bool     // e2e scenario numbers
	upstream  string              // csi-sanity's test source
	mutants   map[string]string   // mutants_test.go row: its rule
	proofs    map[string][]string // proof_test.go row: the rules it fails (or warns)
	e2e       map[string][]string // make e2e-mutants set-up: the scenarios that catch it
}

// TestSpecMap fails when SPEC-MAP.md names a check or mutant that does not
// exist, quotes words its section of spec.md does not hold, or states
// counts that are not its table's.
func TestSpecMap(t *testing.T) {
	data, err := os.ReadFile(specMapFile)
	if err != nil {
		t.Fatal(err)
	}
	k := loadKnown(t)
	rows, errs := parseMap(string(data))
	errs = append(errs, checkMap(string(data), rows, k)...)
	for _, e := range errs {
		t.Error(e)
	}
	checked, withMutant := counts(rows)
	t.Logf("%d clauses, %d checked, %d with a mutant", len(rows), checked, withMutant)
}

// TestSpecMapCatches feeds the checker rows that each break one thing it
// must catch: it proves TestSpecMap can fail.
func TestSpecMapCatches(t *testing.T) {
	k := loadKnown(t)
	good := "| SA-1 | CreateSnapshot | MUST | This operation MUST be idempotent. | `rule:idempotent` | `proof:non-idempotent CreateSnapshot` | x |"
	for name, row := range map[string]string{
		"unknown rule":          strings.Replace(good, "rule:idempotent", "rule:idempotence", 1),
		"unknown proof":         strings.Replace(good, "proof:non-idempotent CreateSnapshot", "proof:no such proof", 1),
		"unknown mutant":        strings.Replace(good, "`proof:non-idempotent CreateSnapshot`", "`mutant:no-such-mutant`", 1),
		"unknown e2e mutant":    strings.Replace(good, "`proof:non-idempotent CreateSnapshot`", "`e2e-mutant:no-such-set-up`", 1),
		"unknown scenario":      strings.Replace(good, "`rule:idempotent`", "`scenario 99`", 1),
		"unknown upstream":      strings.Replace(good, "`rule:idempotent`", "`upstream:should do what no test does`", 1),
		"words not in spec":     strings.Replace(good, "MUST be idempotent", "MUST be fast", 1),
		"wrong section":         strings.Replace(good, "| CreateSnapshot |", "| NodeGetInfo |", 1),
		"keyword missing":       strings.Replace(good, "| MUST |", "| SHOULD |", 1),
		"mutant, no check":      strings.Replace(good, "`rule:idempotent`", "—", 1),
		"proof of another rule": strings.Replace(good, "rule:idempotent", "rule:requisite", 1),
		"e2e mutant of another scenario": strings.Replace(strings.Replace(good, "`rule:idempotent`", "`scenario 11`", 1),
			"`proof:non-idempotent CreateSnapshot`", "`e2e-mutant:ignore-requisite`", 1),
		"no check, no why": "| SA-1 | CreateSnapshot | MUST | This operation MUST be idempotent. | — | — | |",
		"too long":         strings.Replace(good, "This operation MUST be idempotent.", "If a snapshot corresponding to the specified snapshot name is successfully cut and ready to use", 1),
	} {
		doc := "Counts: 1 clauses, 1 checked, 1 with a mutant.\n" + row + "\n"
		rows, errs := parseMap(doc)
		if errs = append(errs, checkMap(doc, rows, k)...); len(errs) == 0 {
			t.Errorf("%s: the checker accepted %s", name, row)
		}
	}
	doc := "Counts: 1 clauses, 1 checked, 1 with a mutant.\n" + good + "\n"
	rows, errs := parseMap(doc)
	if errs = append(errs, checkMap(doc, rows, k)...); len(errs) > 0 {
		t.Errorf("the checker refused a good row: %v", errs)
	}
	if _, errs := parseMap(strings.Replace(doc, "Counts: 1 clauses", "Counts: 2 clauses", 1)); len(errs) != 0 {
		t.Fatal("parseMap judges counts; checkMap should")
	}
	if errs := checkMap(strings.Replace(doc, "Counts: 1 clauses", "Counts: 2 clauses", 1), rows, k); len(errs) == 0 {
		t.Error("the checker accepted wrong counts")
	}
}

var (
	rowID      = regexp.MustCompile(`^[A-Z]{2}-\d+$`)
	backticked = regexp.MustCompile("`([^`]+)`")
	countsLine = regexp.MustCompile(`Counts: (\d+) clauses, (\d+) checked, (\d+) with a mutant\.`)
)

// parseMap reads the rows of the map's tables: lines whose first cell is
// an ID such as SA-1.
func parseMap(doc string) ([]mapRow, []error) {
	var rows []mapRow
	var errs []error
	seen := map[string]bool{}
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if !rowID.MatchString(strings.TrimSpace(cells[0])) {
			continue
		}
		if len(cells) != 7 {
			errs = append(errs, fmt.Errorf("row %q: %d cells, want 7", cells[0], len(cells)))
			continue
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		r := mapRow{id: cells[0], section: cells[1], kw: cells[2], clause: cells[3], checks: tokens(cells[4]), mutants: tokens(cells[5]), note: cells[6]}
		if seen[r.id] {
			errs = append(errs, fmt.Errorf("row %s: ID given twice", r.id))
		}
		seen[r.id] = true
		rows = append(rows, r)
	}
	return rows, errs
}

func tokens(cell string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

// checkMap holds every row, and the counts line, to what exists.
func checkMap(doc string, rows []mapRow, k known) []error {
	var errs []error
	named := map[string]bool{}
	for _, r := range rows {
		for _, e := range checkRow(r, k, named) {
			errs = append(errs, fmt.Errorf("row %s: %w", r.id, e))
		}
	}
	if len(rows) > 1 { // the whole map, not a test's row
		for name := range k.mutants {
			if !named[name] {
				errs = append(errs, fmt.Errorf("mutant %q of mutants_test.go is named by no row", name))
			}
		}
	}
	m := countsLine.FindStringSubmatch(doc)
	if m == nil {
		return append(errs, fmt.Errorf("no line %q", "Counts: N clauses, N checked, N with a mutant."))
	}
	checked, withMutant := counts(rows)
	if want := fmt.Sprintf("%d %d %d", len(rows), checked, withMutant); strings.Join(m[1:], " ") != want {
		errs = append(errs, fmt.Errorf("counts say %v clauses, checked, with a mutant; the table has %s", m[1:], want))
	}
	return errs
}

func counts(rows []mapRow) (checked, withMutant int) {
	for _, r := range rows {
		if len(r.checks) > 0 {
			checked++
		}
		if len(r.mutants) > 0 {
			withMutant++
		}
	}
	return checked, withMutant
}

var keywords = []string{"MUST", "MUST NOT", "SHALL", "SHALL NOT", "SHOULD", "code", "def"}

func checkRow(r mapRow, k known, named map[string]bool) []error {
	var errs []error
	if !slices.Contains(keywords, r.kw) {
		errs = append(errs, fmt.Errorf("keyword %q is none of %v", r.kw, keywords))
	} else if r.kw != "code" && r.kw != "def" && !strings.Contains(r.clause, r.kw) {
		errs = append(errs, fmt.Errorf("clause %q does not carry its keyword %s", r.clause, r.kw))
	}
	clause := normalize(r.clause)
	if n := len(strings.Fields(clause)); n > 15 {
		errs = append(errs, fmt.Errorf("clause has %d words, more than 15", n))
	}
	if text, ok := section(k.spec, r.section); !ok {
		errs = append(errs, fmt.Errorf("spec.md has no section %q", r.section))
	} else if !strings.Contains(text, clause) {
		errs = append(errs, fmt.Errorf("section %q of spec.md does not say %q", r.section, clause))
	}
	rules, scenarios := map[string]bool{}, map[string]bool{}
	for _, c := range r.checks {
		if rule, ok := strings.CutPrefix(c, "rule:"); ok {
			rules[rule] = true
		}
		scenarios[c] = strings.HasPrefix(c, "scenario ")
		if err := k.check(c); err != nil {
			errs = append(errs, err)
		}
	}
	for _, m := range r.mutants {
		named[strings.TrimPrefix(m, "mutant:")] = true
		if err := k.mutant(m, rules, scenarios); err != nil {
			errs = append(errs, err)
		}
	}
	switch {
	case len(r.checks) == 0 && len(r.mutants) > 0:
		errs = append(errs, fmt.Errorf("a mutant without a check that catches it"))
	case len(r.checks) == 0 && strings.TrimSpace(r.note) == "":
		errs = append(errs, fmt.Errorf("no check and no reason why"))
	}
	return errs
}

// check reports whether a check token names something that exists.
func (k known) check(c string) error {
	switch {
	case strings.HasPrefix(c, "rule:"):
		if !k.rules[strings.TrimPrefix(c, "rule:")] {
			return fmt.Errorf("no extension test carries the label %q", c)
		}
	case strings.HasPrefix(c, "scenario "):
		if !k.scenarios[strings.TrimPrefix(c, "scenario ")] {
			return fmt.Errorf("the e2e suite has no %s", c)
		}
	case strings.HasPrefix(c, "upstream:"):
		if !strings.Contains(k.upstream, `It("`+strings.TrimPrefix(c, "upstream:")+`"`) {
			return fmt.Errorf("csi-sanity has no test %q", strings.TrimPrefix(c, "upstream:"))
		}
	default:
		return fmt.Errorf("check %q is none of rule:, scenario , upstream:", c)
	}
	return nil
}

// mutant reports whether a mutant token names a set-up that exists and
// is caught by a check the row names: a rule for sanity's, a scenario for
// the e2e suite's.
func (k known) mutant(m string, rules, scenarios map[string]bool) error {
	kind, name, _ := strings.Cut(m, ":")
	switch kind {
	case "mutant":
		rule, ok := k.mutants[name]
		if !ok {
			return fmt.Errorf("mutants_test.go has no mutant %q", name)
		}
		if !rules[rule] {
			return fmt.Errorf("mutant %q fails rule:%s, which the row does not name", name, rule)
		}
	case "proof":
		caught, ok := k.proofs[name]
		if !ok {
			return fmt.Errorf("proof_test.go has no proof %q", name)
		}
		if !slices.ContainsFunc(caught, func(r string) bool { return rules[r] }) {
			return fmt.Errorf("proof %q fails (or warns) %v, none of which the row names", name, caught)
		}
	case "e2e-mutant":
		caught, ok := k.e2e[name]
		if !ok {
			return fmt.Errorf("e2e/cmd/mutants has no mutant %q", name)
		}
		if !slices.ContainsFunc(caught, func(c string) bool { return scenarios["scenario "+c] }) {
			return fmt.Errorf("e2e mutant %q is caught by scenarios %v, none of which the row names", name, caught)
		}
	default:
		return fmt.Errorf("mutant %q is none of mutant:, proof:, e2e-mutant:", m)
	}
	return nil
}

// normalize makes spec.md's text and a quote comparable: no backticks, no
// comment markers, one space between words.
func normalize(s string) string {
	var words []string
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimSpace(strings.TrimPrefix(line, "//"))
		words = append(words, strings.Fields(strings.ReplaceAll(line, "`", ""))...)
	}
	return strings.Join(words, " ")
}

var heading = regexp.MustCompile(`^(#+) (.*)$`)

// section is the normalized text of spec.md's section of that heading,
// to the next heading of the same or a higher level.
func section(spec, name string) (string, bool) {
	lines := strings.Split(spec, "\n")
	for i, l := range lines {
		m := heading.FindStringSubmatch(l)
		if m == nil || strings.ReplaceAll(m[2], "`", "") != name {
			continue
		}
		end := len(lines)
		for j := i + 1; j < len(lines); j++ {
			if n := heading.FindStringSubmatch(lines[j]); n != nil && len(n[1]) <= len(m[1]) {
				end = j
				break
			}
		}
		return normalize(strings.Join(lines[i:end], "\n")), true
	}
	return "", false
}

// loadKnown gathers what the map may name: spec.md v1.13.0 and csi-sanity
// from the module cache, the rule labels of the extensions' source, the e2e
// scenarios, and the three mutant tables.
func loadKnown(t *testing.T) known {
	t.Helper()
	k := known{rules: ruleLabels(t), scenarios: map[string]bool{}, mutants: map[string]string{}, proofs: map[string][]string{}, e2e: map[string][]string{}}
	k.spec = readAll(t, filepath.Join(moduleDir(t, "github.com/container-storage-interface/spec"), "spec.md"))
	files, err := filepath.Glob(filepath.Join(moduleDir(t, "github.com/kubernetes-csi/csi-test/v5"), "pkg", "sanity", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("csi-sanity's source: %v", err)
	}
	for _, f := range files {
		k.upstream += readAll(t, f)
	}
	e2eFiles, err := filepath.Glob("../e2e/*_test.go")
	if err != nil || len(e2eFiles) == 0 {
		t.Fatalf("the e2e suite's source: %v", err)
	}
	scenario := regexp.MustCompile("[\"`]scenario (\\d+[a-z]?):")
	for _, f := range e2eFiles {
		for _, m := range scenario.FindAllStringSubmatch(readAll(t, f), -1) {
			k.scenarios[m[1]] = true
		}
	}
	k.e2e = e2eMutants(t)
	for _, m := range mutants {
		k.mutants[m.name] = m.rule
	}
	tests := itRules(t)
	for _, p := range proofs {
		k.proofs[p.name] = proofRules(p.fails, p.alsoFails, p.says, tests)
	}
	if len(k.e2e) == 0 || len(k.scenarios) == 0 {
		t.Fatalf("found %d e2e mutants and %d scenarios: the patterns no longer match the source", len(k.e2e), len(k.scenarios))
	}
	return k
}

// ruleLabels are the rule:<name> arguments of Label calls in the
// extensions' source, the labels their tests carry.
func ruleLabels(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	eachCall(t, func(call *ast.CallExpr, _ string) {
		if name, _ := callName(call); name != "Label" {
			return
		}
		for _, s := range stringArgs(call) {
			if rule, ok := strings.CutPrefix(s, "rule:"); ok {
				out[rule] = true
			}
		}
	})
	if len(out) == 0 {
		t.Fatal("no rule:<name> label found in the extensions' source")
	}
	return out
}

// eachCall calls f with every call expression of the extensions' source
// (not their tests), and the variable a var declaration assigns it to.
func eachCall(t *testing.T, f func(call *ast.CallExpr, assigned string)) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, v := range n.Values {
					if call, ok := v.(*ast.CallExpr); ok && i < len(n.Names) {
						f(call, n.Names[i].Name)
					}
				}
			case *ast.CallExpr:
				f(n, "")
			}
			return true
		})
	}
}

func stringArgs(call *ast.CallExpr) []string {
	var out []string
	for _, a := range call.Args {
		if s, ok := stringLit(a); ok {
			out = append(out, s)
		}
	}
	return out
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

func callName(call *ast.CallExpr) (string, bool) {
	if call == nil {
		return "", false
	}
	id, ok := call.Fun.(*ast.Ident)
	if !ok {
		return "", false
	}
	return id.Name, true
}

func moduleDir(t *testing.T, module string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("go list -m %s: %v", module, err)
	}
	return strings.TrimSpace(string(out))
}

func readAll(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// e2eMutants are the set-ups of e2e/cmd/mutants, each with the scenarios
// that catch it.
func e2eMutants(t *testing.T) map[string][]string {
	t.Helper()
	src := readAll(t, "../e2e/cmd/mutants/mutants.go")
	name := regexp.MustCompile(`(?m)^\t\tname:\s+"([^"]+)"`)
	catchers := regexp.MustCompile(`catchers:\s+\[\]string\{([^}]*)\}`)
	out := map[string][]string{}
	names := name.FindAllStringSubmatchIndex(src, -1)
	for i, m := range names {
		end := len(src)
		if i+1 < len(names) {
			end = names[i+1][0]
		}
		c := catchers.FindStringSubmatch(src[m[1]:end])
		if c == nil {
			t.Fatalf("e2e mutant %q names no catchers", src[m[2]:m[3]])
		}
		var scenarios []string
		for _, q := range strings.Split(c[1], ",") {
			if v, err := strconv.Unquote(strings.TrimSpace(q)); err == nil {
				scenarios = append(scenarios, v)
			}
		}
		out[src[m[2]:m[3]]] = scenarios
	}
	if len(out) == 0 {
		t.Fatal("no mutant found in e2e/cmd/mutants/mutants.go: the pattern no longer matches")
	}
	return out
}

// itRules maps each extension test's description to its rule: It calls
// whose second argument is a variable set by Label(..., "rule:<name>").
func itRules(t *testing.T) map[string]string {
	t.Helper()
	labels, its := map[string]string{}, map[string]string{} // variable: rule; description: variable
	eachCall(t, func(call *ast.CallExpr, assigned string) {
		name, _ := callName(call)
		switch {
		case name == "Label" && assigned != "":
			for _, s := range stringArgs(call) {
				if rule, ok := strings.CutPrefix(s, "rule:"); ok {
					labels[assigned] = rule
				}
			}
		case name == "It" && len(call.Args) > 1:
			desc, ok := stringLit(call.Args[0])
			if v, isIdent := call.Args[1].(*ast.Ident); ok && isIdent {
				its[desc] = v.Name
			}
		}
	})
	out := map[string]string{}
	for desc, v := range its {
		if rule, ok := labels[v]; ok {
			out[desc] = rule
		}
	}
	return out
}

// proofRules are the rules a proof fails (the tests it names), or the rule
// of the WARN line it must print.
func proofRules(fails, alsoFails, says string, tests map[string]string) []string {
	var out []string
	for _, f := range []string{fails, alsoFails} {
		// A test named with its container: "Snapshot topology [zonepath] answers ...".
		if _, leaf, ok := strings.Cut(f, "[zonepath] "); ok {
			f = leaf
		}
		for desc, rule := range tests {
			if f != "" && strings.Contains(desc, f) {
				out = append(out, rule)
			}
		}
	}
	if m := regexp.MustCompile(`\[rule:([a-z-]+)\]`).FindStringSubmatch(says); m != nil {
		out = append(out, m[1])
	}
	return out
}
