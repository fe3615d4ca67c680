package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/reporters"
)

// spec is a test case as Ginkgo writes it.
func spec(name, status, skipMessage string) reporters.JUnitTestCase {
	tc := reporters.JUnitTestCase{Name: "[It] " + name, Status: status}
	switch status {
	case "skipped", "pending":
		tc.Skipped = &reporters.JUnitSkipped{Message: skipMessage}
	case "failed":
		tc.Failure = &reporters.JUnitFailure{Message: "boom"}
	}
	return tc
}

func report(cases ...reporters.JUnitTestCase) reporters.JUnitTestSuites {
	return reporters.JUnitTestSuites{TestSuites: []reporters.JUnitTestSuite{{Name: "suite", TestCases: cases}}}
}

func TestJudge(t *testing.T) {
	noRegion := spec("scenario 16c: restores", "skipped", "skipped - driver ext: regionKey is not set")
	modify := spec("ModifyVolume", "skipped", "skipped - ControllerModifyVolume not supported")
	split := spec("Node Service", "skipped", "skipped - Controller Service not provided: CreateVolume not supported")
	unknown := spec("scenario 1: x", "skipped", "skipped - something nobody classified")
	tests := []struct {
		name     string
		suite    string
		report   reporters.JUnitTestSuites
		lacks    []string
		counts   string // passed/failed/skipped
		selected int    // NotSelected
		problems []string
	}{{
		name:   "passes, a skip its lacks explain",
		suite:  e2eSuite,
		report: report(spec("a", "passed", ""), noRegion),
		lacks:  []string{"region-key"},
		counts: "1/0/1",
	}, {
		name:     "a skip whose capability the personality does not lack",
		suite:    e2eSuite,
		report:   report(spec("a", "passed", ""), noRegion),
		lacks:    []string{"exhaustion"},
		counts:   "1/0/1",
		problems: []string{"e2e: 1 skips not explained by lacks:"},
	}, {
		name:     "a skip no rule knows, whatever the lacks",
		suite:    e2eSuite,
		report:   report(unknown),
		lacks:    capabilityNames(),
		counts:   "0/0/1",
		problems: []string{"e2e: 1 skips not explained by lacks:"},
	}, {
		name:   "what every personality lacks explains a skip without lacks:",
		suite:  sanitySuite,
		report: report(split),
		counts: "0/0/1",
	}, {
		name:     "a ModifyVolume skip: zonepath has MODIFY_VOLUME",
		suite:    sanitySuite,
		report:   report(modify),
		counts:   "0/0/1",
		problems: []string{"sanity: 1 skips not explained by lacks:"},
	}, {
		name:   "the other suite's reason explains nothing",
		suite:  e2eSuite,
		report: report(split),
		counts: "0/0/1", problems: []string{"e2e: 1 skips not explained by lacks:"},
	}, {
		name:     "failed, timed out and panicked specs fail",
		suite:    sanitySuite,
		report:   report(spec("a", "failed", ""), spec("b", "timedout", ""), spec("c", "panicked", "")),
		counts:   "0/3/0",
		problems: []string{"sanity: 3 failed"},
	}, {
		name:     "a failed suite node fails without a spec",
		suite:    e2eSuite,
		report:   report(reporters.JUnitTestCase{Name: "[BeforeSuite]", Status: "failed"}, spec("a", "passed", "")),
		counts:   "1/1/0",
		problems: []string{"e2e: 1 failed"},
	}, {
		name:     "specs left out by a filter and pending ones are neither run nor skipped",
		suite:    sanitySuite,
		report:   report(spec("a", "skipped", "skipped"), spec("b", "pending", "pending"), spec("c", "passed", "")),
		counts:   "1/0/0",
		selected: 2,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := judge(tt.suite, tt.report, tt.lacks)
			if got := r.counts(); got != tt.counts {
				t.Errorf("counts = %s, want %s", got, tt.counts)
			}
			if r.NotSelected != tt.selected {
				t.Errorf("NotSelected = %d, want %d", r.NotSelected, tt.selected)
			}
			if got := r.problems(tt.suite); !slices.Equal(got, tt.problems) {
				t.Errorf("problems = %q, want %q", got, tt.problems)
			}
		})
	}
}

func TestRowVerdict(t *testing.T) {
	p := personality{Name: "zone-only", Lacks: []string{"region-key", "exhaustion"}}
	ok := row{Personality: p,
		Sanity: judge(sanitySuite, report(spec("a", "passed", "")), p.Lacks),
		E2E:    judge(e2eSuite, report(spec("scenario 16c: x", "skipped", "skipped - driver ext: regionKey is not set")), p.Lacks)}
	if !ok.passed() {
		t.Errorf("explained skip: problems %q", ok.problems())
	}
	if got := ok.unusedLacks(); !slices.Equal(got, []string{"exhaustion"}) {
		t.Errorf("unusedLacks = %q, want [exhaustion]", got)
	}
	broken := ok
	broken.Sanity.Err = errString("no JUnit")
	if broken.passed() || !strings.HasPrefix(broken.problems()[0], "sanity: no JUnit") {
		t.Errorf("a run without JUnit: problems %q", broken.problems())
	}
	if got := broken.Sanity.counts(); got != "1/0/0" {
		t.Errorf("counts of an errored run with specs = %s", got)
	}
	if got := (suiteResult{Err: errString("x")}).counts(); got != "error" {
		t.Errorf("counts of a run that said nothing = %s, want error", got)
	}
	var out strings.Builder
	if verdict(&out, []row{ok}, 2) {
		t.Error("one of two personalities ran, and the verdict passed")
	}
	out.Reset()
	if !verdict(&out, []row{ok}, 1) || !strings.Contains(out.String(), "note: zone-only lacks exhaustion, but no skip needed it") {
		t.Errorf("verdict of a passing row: %s", out.String())
	}
}

type errString string

func (e errString) Error() string { return string(e) }
