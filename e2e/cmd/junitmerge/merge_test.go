package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/reporters"

	"github.com/zonepath/zonepath/e2e/junit"
	"github.com/zonepath/zonepath/internal/wanterr"
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

// gatedTC is a spec the suite skipped for the server's version.
func gatedTC(name string) reporters.JUnitTestCase {
	c := tc(name, "skipped")
	c.Skipped.Message = "skipped - " + junit.VersionGateReason("v1.37.0", "v1.35.8", "the field is on by default from it")
	return c
}

// unselected is a spec a run's label filter left out, as Ginkgo lists it.
func unselected(name string) reporters.JUnitTestCase {
	c := tc(name, "skipped")
	c.Skipped.Message = "skipped"
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
		name:    "skipped for the Kubernetes version in the one run selecting it",
		runs:    []Run{newRun("main", 90, tc("s1", "passed"), gatedTC("s15c")), newRun("gate-off", 2.5, unselected("s15c"), tc("s14", "passed"))},
		want:    []string{"main: [It] s1 passed", "main: [It] s15c skipped", "gate-off: [It] s14 passed"},
		summary: "e2e: 2 passed, 0 failed, 0 skipped, 1 skipped for the Kubernetes version; runs: main 90.0s (2 specs), gate-off 2.5s (1 specs)",
	}, {
		name:    "skipped for the Kubernetes version in two runs is listed once",
		runs:    []Run{newRun("a", 1, gatedTC("s15c")), newRun("b", 1, gatedTC("s15c"))},
		want:    []string{"a: [It] s15c skipped", "b: [It] s15c skipped"},
		summary: "e2e: 0 passed, 0 failed, 0 skipped, 1 skipped for the Kubernetes version; runs: a 1.0s (1 specs), b 1.0s (1 specs)",
	}, {
		name:    "gated in one run, run in another: listed as run",
		runs:    []Run{newRun("a", 1, gatedTC("s15c")), newRun("b", 1, tc("s15c", "passed"))},
		want:    []string{"b: [It] s15c passed"},
		summary: "e2e: 1 passed, 0 failed, 0 skipped; runs: a 1.0s (0 specs), b 1.0s (1 specs)",
	}, {
		name:     "gated in one run, skipped for another reason in another that selected it",
		runs:     []Run{newRun("a", 1, gatedTC("s15c")), newRun("b", 1, tc("s15c", "skipped"))},
		want:     []string{"a: [It] s15c skipped", "b: [It] s15c skipped"},
		summary:  "e2e: 0 passed, 0 failed, 2 skipped; runs: a 1.0s (1 specs), b 1.0s (1 specs)",
		problems: []string{"[It] s15c: skipped in every run that selected it (run a: skipped - Kubernetes version gate"},
	}, {
		name: "a reason that speaks of versions without the prefix",
		runs: []Run{newRun("main", 1, func() reporters.JUnitTestCase {
			c := tc("s15c", "skipped")
			c.Skipped.Message = "skipped - server v1.35.8 is older than v1.37.0, where CSIDriver.spec.preventPodSchedulingIfMissing is on by default"
			return c
		}())},
		want:     []string{"main: [It] s15c skipped"},
		summary:  "e2e: 0 passed, 0 failed, 1 skipped; runs: main 1.0s (1 specs)",
		problems: []string{"[It] s15c: skipped in every run that selected it (run main: skipped - server v1.35.8 is older"},
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

// TestRunKind135 merges kind-e2e's three JUnit files as a job on
// Kubernetes v1.35 writes them (testdata/kind-1.35: the files of a
// v1.37 make kind-e2e, cut to a few specs and without their output, with
// 15c-15g as the suite skips them before v1.37): the merge passes and
// lists the five; the same files with one of them skipped for any other
// reason, or with the reason the suite gave before the version gate,
// fail it.
func TestRunKind135(t *testing.T) {
	const gate = "skipped - " + junit.VersionGatePrefix + "needs v1.37.0 or newer, the server is v1.35.8"
	tests := []struct {
		name     string
		from, to string // replaced in the first n spec skips of run main
		n        int
		wantErr  string
		wantOut  []string
	}{
		{name: "as the suite writes it", wantOut: []string{
			"e2e: 6 passed, 0 failed, 0 skipped, 5 skipped for the Kubernetes version; runs: main 359.3s (9 specs), nocap 3.2s (1 specs), gate-off 3.4s (1 specs)",
			"junitmerge: skipped for the Kubernetes version, accepted: [It] External Storage [Driver: zonepath.csi.dev] [Testpattern: Dynamic PV (default fs)] zonepath scenario 15c:",
			"scenario 15g: with preventPodSchedulingIfMissing, a late registration of the driver lets the pending pod schedule [Driver: zonepath.csi.dev, attach-limits, Serial]: Kubernetes version gate: needs v1.37.0 or newer, the server is v1.35.8"}},
		{name: "one skipped for another reason", from: gate, to: "skipped - driver ext: attachLimits.nodeWithoutCSINode is not set", n: 1,
			wantErr: "1 specs were not run exactly once"},
		{name: "the suite's reason before the version gate", from: gate, to: "skipped - server v1.35.8 is older than v1.37.0", n: -1,
			wantErr: "5 specs were not run exactly once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var paths []string
			for _, run := range []string{"main", "nocap", "gate-off"} {
				data, err := os.ReadFile(filepath.Join("testdata", "kind-1.35", "junit-"+run+".xml"))
				if err != nil {
					t.Fatal(err)
				}
				text := string(data)
				if run == "main" && tt.n != 0 {
					if !strings.Contains(text, tt.from) {
						t.Fatalf("the fixture lacks %q", tt.from)
					}
					text = strings.Replace(text, tt.from, tt.to, tt.n)
				}
				paths = append(paths, filepath.Join(dir, "junit-"+run+".xml"))
				if err := os.WriteFile(paths[len(paths)-1], []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out, err := captureStdout(t, func() error { return run(filepath.Join(dir, "junit.xml"), paths) })
			if wanterr.Check(t, err, tt.wantErr) {
				return
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// captureStdout runs f with os.Stdout going to a file, and returns what
// f printed.
func captureStdout(t *testing.T, f func() error) (string, error) {
	t.Helper()
	file, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	saved := os.Stdout
	os.Stdout = file
	ferr := f()
	os.Stdout = saved
	data, err := os.ReadFile(file.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(data), ferr
}
