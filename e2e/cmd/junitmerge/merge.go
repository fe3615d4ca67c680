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
	// Skipped does not count the version-gated specs.
	Passed, Failed, Skipped int
	// VersionGated are the specs every run that selected them skipped
	// for the server's Kubernetes version (junit.VersionGatePrefix), as
	// "name: reason", sorted: accepted, and listed.
	VersionGated []string
	// Runs are "name: wall time (specs)", in the order given.
	Runs []string
}

// String is the one-line summary make conformance prints; version-gated
// specs are counted only where there are some.
func (s Summary) String() string {
	gated := ""
	if n := len(s.VersionGated); n > 0 {
		gated = fmt.Sprintf(", %d skipped for the Kubernetes version", n)
	}
	return fmt.Sprintf("e2e: %d passed, %d failed, %d skipped%s; runs: %s", s.Passed, s.Failed, s.Skipped, gated, strings.Join(s.Runs, ", "))
}

func specKey(tc reporters.JUnitTestCase) string { return tc.Classname + " " + tc.Name }

// Merge joins the runs into one report, one test suite per run, in which
// every spec appears once: where it ran. A spec that one run skipped at
// run time and another ran is listed only as run. Problems are the specs
// that would make the merged file lie: skipped in every run that listed
// it (it never ran), or run more than once (label filters that overlap,
// so it would count twice). The one exception: a spec that every run
// selecting it skipped for the server's Kubernetes version (a job on an
// older release) is no problem; it is listed where it was so skipped and
// in Summary.VersionGated.
func Merge(runs []Run) (reporters.JUnitTestSuites, Summary, []string) {
	ran := map[string][]string{} // spec → the runs it passed or failed in
	gated := map[string]string{} // spec → the version-gate skip message of its first run
	otherSkip := map[string]bool{}
	for _, r := range runs {
		forEachSpec(r, func(tc reporters.JUnitTestCase) {
			key := specKey(tc)
			switch {
			case junit.OutcomeOf(tc) != junit.Skipped:
				ran[key] = append(ran[key], r.Name)
			case junit.VersionGated(tc):
				if _, ok := gated[key]; !ok {
					gated[key] = tc.Name + ": " + junit.SkipReason(tc)
				}
			case junit.Selected(tc):
				otherSkip[key] = true
			}
		})
	}
	for key := range gated {
		if len(ran[key]) > 0 || otherSkip[key] {
			delete(gated, key)
		}
	}
	merged, summary := join(runs, ran, gated)
	return merged, summary, check(runs, ran, gated)
}

// check lists each spec that never ran (but those gated by the Kubernetes
// version) or ran more than once, once.
func check(runs []Run, ran map[string][]string, gated map[string]string) []string {
	var problems []string
	seen := map[string]bool{}
	for _, r := range runs {
		forEachSpec(r, func(tc reporters.JUnitTestCase) {
			key := specKey(tc)
			if seen[key] {
				return
			}
			seen[key] = true
			if _, ok := gated[key]; ok {
				return
			}
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
// skips of specs that ran elsewhere, and of gated specs only their
// version-gate skips, with their counts redone.
func join(runs []Run, ran map[string][]string, gated map[string]string) (reporters.JUnitTestSuites, Summary) {
	var out reporters.JUnitTestSuites
	var sum Summary
	for _, g := range gated {
		sum.VersionGated = append(sum.VersionGated, g)
	}
	slices.Sort(sum.VersionGated)
	for _, r := range runs {
		specs, seconds := 0, 0.0
		for _, s := range r.Report.TestSuites {
			s.Name = s.Name + " [" + r.Name + "]"
			s.Properties.Properties = append(slices.Clone(s.Properties.Properties), reporters.JUnitProperty{Name: "Run", Value: r.Name})
			var kept []reporters.JUnitTestCase
			for _, tc := range s.TestCases {
				if !junit.IsSpec(tc) {
					kept = append(kept, tc)
					continue
				}
				_, isGated := gated[specKey(tc)]
				skipped := junit.OutcomeOf(tc) == junit.Skipped
				if skipped && (len(ran[specKey(tc)]) > 0 || isGated && !junit.VersionGated(tc)) {
					continue
				}
				kept = append(kept, tc)
				specs++
				if !isGated {
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
