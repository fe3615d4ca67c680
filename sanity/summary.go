package sanity

import (
	"fmt"
	"io"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// Findings that do not fail a test, by the spec's keyword: a SHOULD the
// driver did not meet, a MAY it used to go beyond what the CO asked, or a
// choice the spec leaves to the driver, saying which it made.
const (
	shouldNotMet = "SHOULD not met"
	mayUsed      = "MAY used"
	choiceMade   = "choice the spec leaves open"
)

// warn records a finding that does not fail the test: Ginkgo's report and
// verbose output carry it, and the summary prints it as a WARN line.
func warn(keyword, what, detail string) {
	GinkgoHelper()
	name := keyword + ": " + what
	AddReportEntry(name, detail)
	fmt.Fprintf(GinkgoWriter, "WARNING (%s): %s\n", name, detail)
}

// PrintSummary returns a ReportAfterSuite body that prints one line per
// failed test, naming its rule and the check that failed, the findings
// recorded by warn, the verdict on each case of the idempotency table
// (CASE lines: what the driver answered, what the suite accepts), why
// extension tests were skipped, and the totals.
func PrintSummary(w io.Writer) func(Report) {
	return func(r Report) {
		var failed, warned, cases, skips []string
		passed, skipped := 0, 0
		for _, s := range r.SpecReports {
			if s.LeafNodeType != types.NodeTypeIt {
				continue
			}
			switch {
			case s.State.Is(types.SpecStateFailureStates):
				failed = append(failed, fmt.Sprintf("FAIL %s %s\n     %s", rule(s), s.FullText(), firstLine(s.Failure.Message)))
			case s.State == types.SpecStateSkipped:
				skipped++
				if why := firstLine(s.Failure.Message); why != "" && rule(s) != "[upstream]" {
					skips = append(skips, fmt.Sprintf("SKIP %s %s\n     %s", rule(s), s.LeafNodeText, why))
				}
			case s.State == types.SpecStatePassed:
				passed++
			}
			for _, e := range s.ReportEntries {
				switch {
				case strings.HasPrefix(e.Name, shouldNotMet) || strings.HasPrefix(e.Name, mayUsed) || strings.HasPrefix(e.Name, choiceMade):
					warned = append(warned, fmt.Sprintf("WARN %s %s: %s", rule(s), e.Name, e.StringRepresentation()))
				case strings.HasPrefix(e.Name, caseEntry):
					cases = append(cases, fmt.Sprintf("CASE %s %s: %s", rule(s), strings.TrimPrefix(e.Name, caseEntry), e.StringRepresentation()))
				}
			}
		}
		fmt.Fprintln(w, "\nzonepath-sanity summary")
		for _, l := range slices.Concat(failed, warned, cases, skips) {
			fmt.Fprintln(w, l)
		}
		fmt.Fprintf(w, "%d passed, %d failed, %d skipped\n", passed, len(failed), skipped)
	}
}

// rule is the spec's rule:... label, or "upstream" for csi-sanity's tests.
func rule(s types.SpecReport) string {
	for _, l := range s.Labels() {
		if strings.HasPrefix(l, "rule:") {
			return "[" + l + "]"
		}
	}
	return "[upstream]"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
