package sanity

import (
	"fmt"
	"io"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// Findings that do not fail a test, by the spec's keyword: a SHOULD the
// driver did not meet, or a MAY it used to go beyond what the CO asked.
const (
	shouldNotMet = "SHOULD not met"
	mayUsed      = "MAY used"
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
// recorded by warn, why extension tests were skipped, and the totals.
func PrintSummary(w io.Writer) func(Report) {
	return func(r Report) {
		var failed, warned, skips []string
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
				if strings.HasPrefix(e.Name, shouldNotMet) || strings.HasPrefix(e.Name, mayUsed) {
					warned = append(warned, fmt.Sprintf("WARN %s %s: %s", rule(s), e.Name, e.StringRepresentation()))
				}
			}
		}
		fmt.Fprintln(w, "\nzonepath-sanity summary")
		for _, l := range append(append(failed, warned...), skips...) {
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
