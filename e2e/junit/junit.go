package junit

import (
	"encoding/xml"
	"fmt"
	"os"
	"strings"

	"github.com/onsi/ginkgo/v2/reporters"
)

// Load reads a JUnit file; a missing one (a run that died before writing
// it) or one that is not JUnit is an error naming it.
func Load(path string) (reporters.JUnitTestSuites, error) {
	var r reporters.JUnitTestSuites
	data, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := xml.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%s: not a JUnit file: %w", path, err)
	}
	return r, nil
}

// Outcome is what became of a test case.
type Outcome int

const (
	Passed Outcome = iota
	Failed
	Skipped
)

// OutcomeOf reads a test case's status the way Ginkgo's JUnit reporter
// writes it: skipped and pending specs did not run; every other state
// but passed is a failure (failed, timedout, interrupted, aborted,
// panicked).
func OutcomeOf(tc reporters.JUnitTestCase) Outcome {
	switch tc.Status {
	case "passed":
		return Passed
	case "skipped", "pending":
		return Skipped
	}
	return Failed
}

// IsSpec tells a spec (an It) from the suite-level nodes Ginkgo also
// lists (BeforeSuite, ReportAfterSuite ...), which every run may have.
func IsSpec(tc reporters.JUnitTestCase) bool { return strings.HasPrefix(tc.Name, "[It] ") }

// SkipMessage is why a test case did not run: the message of its
// <skipped> element ("skipped - <reason>" for a Skip at run time, bare
// "skipped" for a spec skipped by --ginkgo.skip), else its status
// ("pending").
func SkipMessage(tc reporters.JUnitTestCase) string {
	if tc.Skipped == nil {
		return tc.Status
	}
	return tc.Skipped.Message
}

// SkipReason is the reason given to Skip at run time, without Ginkgo's
// "skipped - " prefix; "" when none was given.
func SkipReason(tc reporters.JUnitTestCase) string {
	msg := SkipMessage(tc)
	if reason, ok := strings.CutPrefix(msg, "skipped - "); ok {
		return strings.TrimSpace(reason)
	}
	return ""
}

// Selected tells a spec the run chose to run from one it did not: a
// pending spec, or one Ginkgo skipped without a reason, which is how it
// writes a spec left out by --ginkgo.skip, --ginkgo.focus or
// --ginkgo.label-filter. A spec that called Skip(reason) was selected:
// its skip is the driver's or the set-up's, and counts.
func Selected(tc reporters.JUnitTestCase) bool {
	return tc.Status != "pending" && !(tc.Status == "skipped" && SkipMessage(tc) == "skipped")
}

// ForEachTestCase calls f for every test case of a report, suite nodes
// included.
func ForEachTestCase(r reporters.JUnitTestSuites, f func(reporters.JUnitTestCase)) {
	for _, s := range r.TestSuites {
		for _, tc := range s.TestCases {
			f(tc)
		}
	}
}

// VersionGatePrefix begins the skip reason of a spec that the e2e suite
// skips only because the cluster's Kubernetes is older than the release
// the spec needs, and no other skip reason: such a spec cannot run on that
// cluster whatever the driver does, and a job on a newer release runs it.
// junitmerge accepts a spec that every run selecting it skipped so (and
// lists it); a spec skipped in every run for any other reason fails it.
const VersionGatePrefix = "Kubernetes version gate: "

// VersionGateReason is the skip reason of a spec that needs Kubernetes
// need or newer, on a server of version server; why says what need
// brings. The suite skips with it, junitmerge recognises it.
func VersionGateReason(need, server, why string) string {
	return fmt.Sprintf("%sneeds %s or newer, the server is %s: %s", VersionGatePrefix, need, server, why)
}

// VersionGated tells a test case the suite skipped at run time for the
// server's Kubernetes version (VersionGateReason).
func VersionGated(tc reporters.JUnitTestCase) bool {
	return OutcomeOf(tc) == Skipped && strings.HasPrefix(SkipReason(tc), VersionGatePrefix)
}
