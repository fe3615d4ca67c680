package main

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2/reporters"

	"github.com/zonepath/zonepath/e2e/junit"
)

// counts is one suite's tally.
type counts struct{ passed, failed, skipped int }

// table tallies the selected specs of one or more reports by suite.
type table struct {
	suites map[string]*counts
	// skips maps a skip reason to the specs that gave it.
	skips    map[string][]string
	failures []string
}

func newTable() *table {
	return &table{suites: map[string]*counts{}, skips: map[string][]string{}}
}

// suiteRE finds the upstream suite of a storage spec: the word after the
// test pattern, as testsuites name their specs ("External Storage [Driver:
// d] [Testpattern: Dynamic PV (block volmode)] volumeMode should ...").
var suiteRE = regexp.MustCompile(`\[Testpattern: ([^\]]*)\] (\S+)`)

// suiteOf names the row a spec counts in: "<suite> (<pattern>)", or
// "other" for a spec outside the storage suites.
func suiteOf(name string) string {
	m := suiteRE.FindStringSubmatch(name)
	if m == nil {
		return "other"
	}
	return m[2] + " (" + m[1] + ")"
}

// add counts one test case; suite nodes and specs the run did not select
// (--ginkgo.focus/skip) are left out.
func (t *table) add(tc reporters.JUnitTestCase) {
	if !junit.IsSpec(tc) || !junit.Selected(tc) {
		return
	}
	name := strings.TrimPrefix(tc.Name, "[It] ")
	c := t.suites[suiteOf(name)]
	if c == nil {
		c = &counts{}
		t.suites[suiteOf(name)] = c
	}
	switch junit.OutcomeOf(tc) {
	case junit.Passed:
		c.passed++
	case junit.Failed:
		c.failed++
		t.failures = append(t.failures, name)
	case junit.Skipped:
		c.skipped++
		reason := junit.SkipReason(tc)
		if reason == "" {
			reason = junit.SkipMessage(tc)
		}
		t.skips[reason] = append(t.skips[reason], name)
	}
}

func (t *table) names() []string { return slices.Sorted(maps.Keys(t.suites)) }

func (t *table) skipReasons() []string { return slices.Sorted(maps.Keys(t.skips)) }

func (t *table) total() counts {
	var all counts
	for _, c := range t.suites {
		all.passed += c.passed
		all.failed += c.failed
		all.skipped += c.skipped
	}
	return all
}

// verdict fails on any failure, and on a run in which nothing passed.
func (t *table) verdict() error {
	all := t.total()
	switch {
	case all.failed > 0:
		return fmt.Errorf("%d of %d specs failed", all.failed, all.passed+all.failed+all.skipped)
	case all.passed == 0:
		return errors.New("no spec passed: did the focus select anything?")
	}
	return nil
}
