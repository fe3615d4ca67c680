package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/reporters"

	"github.com/zonepath/zonepath/e2e/junit"
)

// skip is one spec a run skipped, and what explains it.
type skip struct {
	Spec, Reason string
	// Capability is what the reason says is missing; "" when the
	// classifier does not know the reason.
	Capability string
	// Explained: the personality (or every personality, driverLacks)
	// lacks Capability.
	Explained bool
}

// suiteResult is what one run of a suite showed.
type suiteResult struct {
	Passed, Failed, Skipped int
	// NotSelected counts specs the run's filters left out and pending
	// ones: neither run nor skipped.
	NotSelected int
	Skips       []skip
	// Err is a run that could not say anything, or that failed without
	// a failed spec to show for it.
	Err  error
	Took time.Duration
}

// judge counts a suite's JUnit report and explains each skip by the
// capabilities lacks names.
func judge(suite string, report reporters.JUnitTestSuites, lacks []string) suiteResult {
	var r suiteResult
	junit.ForEachTestCase(report, func(tc reporters.JUnitTestCase) {
		switch {
		case !junit.IsSpec(tc):
			// A failed BeforeSuite or ReportAfterSuite is a failure too.
			if junit.OutcomeOf(tc) == junit.Failed {
				r.Failed++
			}
		case !junit.Selected(tc):
			r.NotSelected++
		case junit.OutcomeOf(tc) == junit.Passed:
			r.Passed++
		case junit.OutcomeOf(tc) == junit.Failed:
			r.Failed++
		default:
			r.Skipped++
			r.Skips = append(r.Skips, explain(suite, tc, lacks))
		}
	})
	return r
}

func explain(suite string, tc reporters.JUnitTestCase, lacks []string) skip {
	s := skip{Spec: strings.TrimPrefix(tc.Name, "[It] "), Reason: junit.SkipReason(tc)}
	s.Capability = classify(suite, s.Reason)
	s.Explained = s.Capability != "" && (slices.Contains(lacks, s.Capability) || slices.Contains(driverLacks, s.Capability))
	return s
}

// Unexplained counts the skips nothing the personality lacks explains.
func (r suiteResult) Unexplained() int {
	n := 0
	for _, s := range r.Skips {
		if !s.Explained {
			n++
		}
	}
	return n
}

// problems say why a suite's run fails the matrix; none when it passes.
func (r suiteResult) problems(suite string) []string {
	var out []string
	if r.Err != nil {
		out = append(out, fmt.Sprintf("%s: %v", suite, r.Err))
	}
	if r.Failed > 0 {
		out = append(out, fmt.Sprintf("%s: %d failed", suite, r.Failed))
	}
	if n := r.Unexplained(); n > 0 {
		out = append(out, fmt.Sprintf("%s: %d skips not explained by lacks:", suite, n))
	}
	return out
}

// counts is the table's passed/failed/skipped cell.
func (r suiteResult) counts() string {
	if r.Err != nil && r.Passed+r.Failed+r.Skipped == 0 {
		return "error"
	}
	return fmt.Sprintf("%d/%d/%d", r.Passed, r.Failed, r.Skipped)
}

// row is one personality's line of the table.
type row struct {
	Personality personality
	Sanity, E2E suiteResult
	Took        time.Duration
}

// namedResult is a suite's result and the suite's name.
type namedResult struct {
	name string
	res  suiteResult
}

// suites are the row's two runs, in the order they ran.
func (r row) suites() []namedResult {
	return []namedResult{{sanitySuite, r.Sanity}, {e2eSuite, r.E2E}}
}

func (r row) problems() []string {
	var out []string
	for _, s := range r.suites() {
		out = append(out, s.res.problems(s.name)...)
	}
	return out
}

func (r row) passed() bool { return len(r.problems()) == 0 }

// unusedLacks are lacks: no skip of the row used: a claim the runs did
// not need, worth a look (it may hide a skip that appears later), not a
// failure.
func (r row) unusedLacks() []string {
	var out []string
	for _, c := range r.Personality.Lacks {
		used := slices.ContainsFunc(r.suites(), func(s namedResult) bool {
			return slices.ContainsFunc(s.res.Skips, func(k skip) bool { return k.Capability == c })
		})
		if !used {
			out = append(out, c)
		}
	}
	return out
}
