package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2/reporters"

	"github.com/zonepath/zonepath/e2e/junit"
)

// Run is the JUnit file of one bin/zonepath-e2e invocation.
type Run struct {
	// Name says which run it was (zonepath, gate-off, ...).
	Name   string
	Report reporters.JUnitTestSuites
}

// Summary counts the specs of a merge.
type Summary struct {
	Passed, Failed, Skipped int
	// Runs are "name: wall time (specs)", in the order given.
	Runs []string
}

// String is the one-line summary make conformance prints.
func (s Summary) String() string {
	return fmt.Sprintf("e2e: %d passed, %d failed, %d skipped; runs: %s", s.Passed, s.Failed, s.Skipped, strings.Join(s.Runs, ", "))
}

func specKey(tc reporters.JUnitTestCase) string { return tc.Classname + " " + tc.Name }

// Merge joins the runs into one report, one test suite per run, in which
// every spec appears once: where it ran. A spec that one run skipped at
// run time and another ran is listed only as run. Problems are the specs
// that would make the merged file lie: skipped in every run that listed
// it (it never ran), or run more than once (label filters that overlap,
// so it would count twice).
func Merge(runs []Run) (reporters.JUnitTestSuites, Summary, []string) {
	ran := map[string][]string{} // spec → the runs it passed or failed in
	for _, r := range runs {
		forEachSpec(r, func(tc reporters.JUnitTestCase) {
			if junit.OutcomeOf(tc) != junit.Skipped {
				ran[specKey(tc)] = append(ran[specKey(tc)], r.Name)
			}
		})
	}
	merged, summary := join(runs, ran)
	return merged, summary, check(runs, ran)
}

// check lists each spec that never ran or ran more than once, once.
func check(runs []Run, ran map[string][]string) []string {
	var problems []string
	seen := map[string]bool{}
	for _, r := range runs {
		forEachSpec(r, func(tc reporters.JUnitTestCase) {
			key := specKey(tc)
			if seen[key] {
				return
			}
			seen[key] = true
			switch in := ran[key]; {
			case len(in) == 0:
				problems = append(problems, fmt.Sprintf("%s: skipped in every run that selected it (run %s: %s)", tc.Name, r.Name, junit.SkipMessage(tc)))
			case len(in) > 1:
				problems = append(problems, fmt.Sprintf("%s: ran %d times (runs %s); the runs' label filters overlap", tc.Name, len(in), strings.Join(in, ", ")))
			}
		})
	}
	return problems
}

// join builds the merged report: each run's suites, without the run-time
// skips of specs that ran elsewhere, with their counts redone.
func join(runs []Run, ran map[string][]string) (reporters.JUnitTestSuites, Summary) {
	var out reporters.JUnitTestSuites
	var sum Summary
	for _, r := range runs {
		specs, seconds := 0, 0.0
		for _, s := range r.Report.TestSuites {
			s.Name = s.Name + " [" + r.Name + "]"
			s.Properties.Properties = append(slices.Clone(s.Properties.Properties), reporters.JUnitProperty{Name: "Run", Value: r.Name})
			var kept []reporters.JUnitTestCase
			for _, tc := range s.TestCases {
				if junit.IsSpec(tc) && junit.OutcomeOf(tc) == junit.Skipped && len(ran[specKey(tc)]) > 0 {
					continue
				}
				kept = append(kept, tc)
				if junit.IsSpec(tc) {
					specs++
					sum.add(junit.OutcomeOf(tc))
				}
			}
			s.TestCases = kept
			recount(&s)
			out.TestSuites = append(out.TestSuites, s)
			seconds += s.Time
			out.Tests += s.Tests
			out.Disabled += s.Disabled + s.Skipped // as Ginkgo counts it
			out.Errors += s.Errors
			out.Failures += s.Failures
			out.Time += s.Time
		}
		sum.Runs = append(sum.Runs, fmt.Sprintf("%s %.1fs (%d specs)", r.Name, seconds, specs))
	}
	return out, sum
}

func (s *Summary) add(o junit.Outcome) {
	switch o {
	case junit.Passed:
		s.Passed++
	case junit.Failed:
		s.Failed++
	default:
		s.Skipped++
	}
}

// recount sets a suite's counts from its test cases, by Ginkgo's JUnit
// reporter's rules.
func recount(s *reporters.JUnitTestSuite) {
	s.Tests, s.Disabled, s.Skipped, s.Errors, s.Failures = len(s.TestCases), 0, 0, 0, 0
	for _, tc := range s.TestCases {
		switch tc.Status {
		case "skipped":
			s.Skipped++
		case "pending":
			s.Disabled++
		case "failed", "timedout":
			s.Failures++
		case "interrupted", "aborted", "panicked":
			s.Errors++
		}
	}
}

// forEachSpec calls f for every spec of a run.
func forEachSpec(r Run, f func(reporters.JUnitTestCase)) {
	junit.ForEachTestCase(r.Report, func(tc reporters.JUnitTestCase) {
		if junit.IsSpec(tc) {
			f(tc)
		}
	})
}
