package main

import (
	"regexp"
	"slices"
	"strconv"

	"github.com/onsi/ginkgo/v2/reporters"

	"github.com/zonepath/zonepath/e2e/junit"
)

// scenarioID finds a spec's scenario in its name ("scenario 16a: ...").
var scenarioID = regexp.MustCompile(`\bscenario (\d+[a-z]?):`)

// failedScenarios reads a JUnit file of the suite and returns the
// scenarios with a failed or errored test case, in scenario order.
func failedScenarios(path string) ([]string, error) {
	suites, err := junit.Load(path)
	if err != nil {
		return nil, err
	}
	var failed []string
	junit.ForEachTestCase(suites, func(tc reporters.JUnitTestCase) {
		m := scenarioID.FindStringSubmatch(tc.Name)
		if m == nil || (tc.Failure == nil && tc.Error == nil) || slices.Contains(failed, m[1]) {
			return
		}
		failed = append(failed, m[1])
	})
	slices.SortFunc(failed, compareScenarios)
	return failed, nil
}

// compareScenarios orders "2" before "16a" before "16b".
func compareScenarios(a, b string) int {
	na, sa := splitScenario(a)
	nb, sb := splitScenario(b)
	if na != nb {
		return na - nb
	}
	switch {
	case sa < sb:
		return -1
	case sa > sb:
		return 1
	}
	return 0
}

func splitScenario(s string) (int, string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, _ := strconv.Atoi(s[:i])
	return n, s[i:]
}
