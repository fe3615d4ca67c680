package sanity_test

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"google.golang.org/grpc/codes"

	"github.com/zonepath/zonepath/internal/idempotency"
)

var update = flag.Bool("update", false, "rewrite the idempotency table in sanity/README.md")

// caseLine is the summary's line for one case of internal/idempotency.
var caseLine = regexp.MustCompile(`(?m)^CASE \[rule:[a-z-]+\] (\S+): (.*); got (\S+); accepts (\S+)$`)

// verdict is what one run of zonepath-sanity said about a case.
type verdict struct{ text, got, accepts string }

// oldAnswers are the answers zonepath gave before issue 25 where they
// differ from today's: ALREADY_EXISTS for a snapshot usable beyond the new
// requisite, RESOURCE_EXHAUSTED for a requisite naming no zone, and
// (until issue 35) ALREADY_EXISTS for a retry with new mutable parameters.
// A fault rule per case plays that driver (the region-wide variant,
// refused with INVALID_ARGUMENT then, is not played).
var oldAnswers = map[string]codes.Code{
	"snapshot/usable-beyond-requisite":      codes.AlreadyExists,
	"snapshot/requisite-is-its-other-place": codes.AlreadyExists,
	"snapshot/requisite-only-unknown":       codes.ResourceExhausted,
	"snapshot/new-unknown-requisite":        codes.ResourceExhausted,
	"volume/requisite-only-unknown":         codes.ResourceExhausted,
	"volume/new-unknown-requisite":          codes.ResourceExhausted,
	"volume/retry-other-mutable-parameters": codes.AlreadyExists,
}

// TestIdempotencyTable is the one table of issue 25: every case of
// internal/idempotency (the table the driver's TestIdempotencyTable runs
// too) with its spec clause, what zonepath answers and zonepath-sanity's
// verdict, and what zonepath-sanity says of a driver answering as zonepath
// did before issue 25. It fails unless zonepath answers every case's Want
// and passes, unless zonepath-sanity fails exactly the old answers it does
// not accept, and unless sanity/README.md holds the same table
// (go test ./sanity -run TestIdempotencyTable -update rewrites it).
func TestIdempotencyTable(t *testing.T) {
	bin := buildSanity(t, "twice")
	now := caseVerdicts(t, bin, "")
	before := caseVerdicts(t, bin, oldRules())
	for _, k := range idempotency.Cases {
		v := now[k.ID]
		if v.text != "pass" || v.got != k.Want.String() {
			t.Errorf("%s: zonepath answered %s, zonepath-sanity said %q; want %v and pass (%s)", k.ID, v.got, v.text, k.Want, k.Clause)
		}
		old, played := oldAnswers[k.ID]
		if !played {
			continue
		}
		ok, _ := k.Accepts(old, codes.AlreadyExists)
		if b := before[k.ID]; b.got != old.String() || strings.HasPrefix(b.text, "FAIL") == ok {
			t.Errorf("%s before issue 25: zonepath-sanity said %q of %s; want it to accept it: %t", k.ID, b.text, b.got, ok)
		}
	}
	table := renderTable(now, before)
	t.Logf("the idempotency table (A, B: places the existing object is usable from; C: a place it is not; X: a misspelt zone)\n%s", table)
	checkReadme(t, table)
}

// caseVerdicts runs the idempotency and unknown-topology tests against
// zonepath with fault rules and reads each case's line of the summary.
func caseVerdicts(t *testing.T, bin, rules string) map[string]verdict {
	t.Helper()
	dir := t.TempDir()
	endpoint := serveDriver(t, dir, "", "rules:"+orEmpty(rules), nil, nil)
	res := runSanity(t, bin, endpoint, dir, baseConfig(t), "--ginkgo.label-filter", "rule:idempotent || rule:unknown-topology")
	out := map[string]verdict{}
	for _, m := range caseLine.FindAllStringSubmatch(res.output, -1) {
		out[m[1]] = verdict{text: m[2], got: m[3], accepts: m[4]}
	}
	if len(out) != len(idempotency.Cases) {
		t.Fatalf("zonepath-sanity reported %d of %d cases:\n%s", len(out), len(idempotency.Cases), res.output)
	}
	return out
}

// oldRules are fault rules answering each case of oldAnswers with its
// old code: the case's request is the second call of its name when it
// reuses one, the first otherwise.
func oldRules() string {
	var b strings.Builder
	for _, k := range idempotency.Cases {
		code, ok := oldAnswers[k.ID]
		if !ok {
			continue
		}
		nth := 1
		if k.Repeated() {
			nth = 2
		}
		fmt.Fprintf(&b, "\n- name: before-issue-25-%s\n  match: {rpc: %s, name: \"zp-%s*\", nth: %d}\n  action: {code: %s}",
			strings.ReplaceAll(k.ID, "/", "-"), k.RPC, strings.ReplaceAll(k.ID, "/", "-"), nth, code)
	}
	return b.String()
}

func renderTable(now, before map[string]verdict) string {
	var b strings.Builder
	b.WriteString("| case | existing object | request | spec clause | zonepath answers | zonepath-sanity accepts | verdict | before issue 25: answer, verdict |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, k := range idempotency.Cases {
		v, old := now[k.ID], "as now"
		if _, played := oldAnswers[k.ID]; played {
			old = csiCode(before[k.ID].got) + ", " + before[k.ID].text
		}
		accepts := strings.Split(v.accepts, "|")
		for i, a := range accepts {
			accepts[i] = csiCode(a)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s | %s |\n", k.ID, k.Object(), k.Request(),
			strings.ReplaceAll(k.Clause, "|", `\|`), csiCode(v.got), strings.Join(accepts, " or "), v.text, old)
	}
	return b.String()
}

// csiCode writes a gRPC code name as the spec does: AlreadyExists is
// ALREADY_EXISTS.
func csiCode(name string) string {
	if name == codes.OK.String() {
		return name
	}
	var b strings.Builder
	for i, r := range name {
		if i > 0 && unicode.IsUpper(r) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

const (
	tableStart = "<!-- idempotency table: go test ./sanity -run TestIdempotencyTable -update -->\n"
	tableEnd   = "<!-- end of the idempotency table -->\n"
)

// checkReadme compares the table with sanity/README.md's copy, or
// rewrites that with -update.
func checkReadme(t *testing.T, table string) {
	t.Helper()
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	start, end := strings.Index(readme, tableStart), strings.Index(readme, tableEnd)
	if start < 0 || end < start {
		t.Fatalf("README.md lacks the markers %q and %q", tableStart, tableEnd)
	}
	if got := readme[start+len(tableStart) : end]; got == table {
		return
	} else if !*update {
		t.Fatalf("README.md's idempotency table differs from the run's; rerun with -update. README:\n%s\nrun:\n%s", got, table)
	}
	readme = readme[:start+len(tableStart)] + table + readme[end:]
	if err := os.WriteFile("README.md", []byte(readme), 0o644); err != nil {
		t.Fatal(err)
	}
}
