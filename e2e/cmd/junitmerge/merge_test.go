package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/reporters"
)

// tc is a test case as Ginkgo writes it: "[It] <text>", a status, and a
// <skipped> element for skips.
func tc(name, status string) reporters.JUnitTestCase {
	c := reporters.JUnitTestCase{Name: "[It] " + name, Classname: "zonepath e2e", Status: status}
	switch status {
	case "skipped":
		c.Skipped = &reporters.JUnitSkipped{Message: "skipped - driver ext: featureGates.VolumeSnapshotTopology is true in this cluster"}
	case "failed":
		c.Failure = &reporters.JUnitFailure{Message: "boom", Type: "failed"}
	}
	return c
}

func newRun(name string, seconds float64, cases ...reporters.JUnitTestCase) Run {
	return Run{Name: name, Report: reporters.JUnitTestSuites{TestSuites: []reporters.JUnitTestSuite{
		{Name: "zonepath e2e", Time: seconds, TestCases: cases}}}}
}

func TestMerge(t *testing.T) {
	beforeSuite := reporters.JUnitTestCase{Name: "[BeforeSuite]", Classname: "zonepath e2e", Status: "passed"}
	tests := []struct {
		name string
		runs []Run
		// want is the merged file's test cases, as "run: name status".
		want    []string
		summary string
		// problems are substrings of the problems, in order.
		problems []string
	}{{
		name:    "disjoint runs, all passed",
		runs:    []Run{newRun("zonepath", 90, tc("s1", "passed"), tc("s2", "passed")), newRun("gate-off", 2.5, tc("s14", "passed"))},
		want:    []string{"zonepath: [It] s1 passed", "zonepath: [It] s2 passed", "gate-off: [It] s14 passed"},
		summary: "e2e: 3 passed, 0 failed, 0 skipped; runs: zonepath 90.0s (2 specs), gate-off 2.5s (1 specs)",
	}, {
		name:    "a run-time skip of a spec another run ran is dropped",
		runs:    []Run{newRun("zonepath", 90, tc("s1", "passed"), tc("s14", "skipped")), newRun("gate-off", 2.5, tc("s14", "passed"))},
		want:    []string{"zonepath: [It] s1 passed", "gate-off: [It] s14 passed"},
		summary: "e2e: 2 passed, 0 failed, 0 skipped; runs: zonepath 90.0s (1 specs), gate-off 2.5s (1 specs)",
	}, {
		name:     "skipped in every run",
		runs:     []Run{newRun("zonepath", 90, tc("s14", "skipped")), newRun("gate-off", 2.5, tc("s14", "skipped"))},
		want:     []string{"zonepath: [It] s14 skipped", "gate-off: [It] s14 skipped"},
		summary:  "e2e: 0 passed, 0 failed, 2 skipped; runs: zonepath 90.0s (1 specs), gate-off 2.5s (1 specs)",
		problems: []string{"[It] s14: skipped in every run that selected it (run zonepath: skipped - driver ext: featureGates.VolumeSnapshotTopology is true"},
	}, {
		name:     "pending is not run",
		runs:     []Run{newRun("zonepath", 1, tc("s7", "pending"))},
		want:     []string{"zonepath: [It] s7 pending"},
		summary:  "e2e: 0 passed, 0 failed, 1 skipped; runs: zonepath 1.0s (1 specs)",
		problems: []string{"[It] s7: skipped in every run that selected it (run zonepath: pending)"},
	}, {
		name:     "passed in two runs",
		runs:     []Run{newRun("zonepath", 90, tc("s15", "passed")), newRun("gate-off", 2.5, tc("s15", "passed"), tc("s14", "passed"))},
		want:     []string{"zonepath: [It] s15 passed", "gate-off: [It] s15 passed", "gate-off: [It] s14 passed"},
		summary:  "e2e: 3 passed, 0 failed, 0 skipped; runs: zonepath 90.0s (1 specs), gate-off 2.5s (2 specs)",
		problems: []string{"[It] s15: ran 2 times (runs zonepath, gate-off)"},
	}, {
		name:     "failed in one run, passed in another is run twice too",
		runs:     []Run{newRun("a", 1, tc("s", "failed")), newRun("b", 1, tc("s", "passed"))},
		want:     []string{"a: [It] s failed", "b: [It] s passed"},
		summary:  "e2e: 1 passed, 1 failed, 0 skipped; runs: a 1.0s (1 specs), b 1.0s (1 specs)",
		problems: []string{"[It] s: ran 2 times (runs a, b)"},
	}, {
		name:    "a failure is counted, not a merge problem",
		runs:    []Run{newRun("zonepath", 3, tc("s1", "failed"), tc("s2", "timedout"))},
		want:    []string{"zonepath: [It] s1 failed", "zonepath: [It] s2 timedout"},
		summary: "e2e: 0 passed, 2 failed, 0 skipped; runs: zonepath 3.0s (2 specs)",
	}, {
		name:    "suite nodes of every run are kept, not specs",
		runs:    []Run{newRun("a", 1, beforeSuite, tc("s1", "passed")), newRun("b", 1, beforeSuite, tc("s2", "passed"))},
		want:    []string{"a: [BeforeSuite] passed", "a: [It] s1 passed", "b: [BeforeSuite] passed", "b: [It] s2 passed"},
		summary: "e2e: 2 passed, 0 failed, 0 skipped; runs: a 1.0s (1 specs), b 1.0s (1 specs)",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			merged, summary, problems := Merge(tt.runs)
			var got []string
			for _, s := range merged.TestSuites {
				for _, c := range s.TestCases {
					run := strings.TrimSuffix(s.Name[strings.LastIndex(s.Name, "[")+1:], "]")
					got = append(got, run+": "+c.Name+" "+c.Status)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("merged\n%q\nwant\n%q", got, tt.want)
			}
			if summary.String() != tt.summary {
				t.Errorf("summary\n%s\nwant\n%s", summary, tt.summary)
			}
			if len(problems) != len(tt.problems) {
				t.Fatalf("problems %q, want %d containing %q", problems, len(tt.problems), tt.problems)
			}
			for i, p := range problems {
				if !strings.Contains(p, tt.problems[i]) {
					t.Errorf("problem %d %q does not contain %q", i, p, tt.problems[i])
				}
			}
		})
	}
}

// TestMergeCounts: the merged file's counts are those of its test cases,
// not of the runs' files.
func TestMergeCounts(t *testing.T) {
	merged, _, _ := Merge([]Run{
		newRun("zonepath", 90, tc("s1", "passed"), tc("s14", "skipped"), tc("s9", "skipped"), tc("s2", "failed")),
		newRun("gate-off", 2.5, tc("s14", "passed")),
	})
	s := merged.TestSuites[0]
	if s.Name != "zonepath e2e [zonepath]" || s.Tests != 3 || s.Skipped != 1 || s.Failures != 1 {
		t.Errorf("suite %q: tests %d skipped %d failures %d, want zonepath e2e [zonepath]: 3, 1, 1", s.Name, s.Tests, s.Skipped, s.Failures)
	}
	if merged.Tests != 4 || merged.Disabled != 1 || merged.Failures != 1 || merged.Time != 92.5 {
		t.Errorf("testsuites: tests %d disabled %d failures %d time %v, want 4, 1, 1, 92.5", merged.Tests, merged.Disabled, merged.Failures, merged.Time)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("junit-gate-off.xml", `<testsuites><testsuite name="zonepath e2e"><testcase name="[It] s14" status="passed"></testcase></testsuite></testsuites>`)
	again := filepath.Join(t.TempDir(), "junit-gate-off.xml")
	if err := os.WriteFile(again, []byte("<testsuites/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		paths   []string
		wantErr string
	}{
		{name: "good", paths: []string{good}},
		{name: "missing file", paths: []string{good, filepath.Join(dir, "junit-zonepath.xml")}, wantErr: "junit-zonepath.xml: no such file"},
		{name: "not XML", paths: []string{write("junit-x.xml", "Ran 0 specs")}, wantErr: "junit-x.xml: not a JUnit file"},
		{name: "one run twice", paths: []string{good, again}, wantErr: `are both run "gate-off"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			runs, err := load(tt.paths)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			case err == nil && (runs[0].Name != "gate-off" || len(runs[0].Report.TestSuites[0].TestCases) != 1):
				t.Fatalf("runs %+v, want run gate-off with one test case", runs)
			}
		})
	}
}

func TestRunName(t *testing.T) {
	for path, want := range map[string]string{
		"/o/e2e/junit-zonepath.xml": "zonepath",
		"junit-gate-off.xml":        "gate-off",
		"report.xml":                "report",
		"junit-.xml":                "junit-",
	} {
		if got := runName(path); got != want {
			t.Errorf("runName(%q) = %q, want %q", path, got, want)
		}
	}
}
