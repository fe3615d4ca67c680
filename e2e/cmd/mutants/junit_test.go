package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestFailedScenarios(t *testing.T) {
	junit := `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="5" failures="2">
  <testsuite name="zonepath e2e" tests="5">
    <testcase name="[It] External Storage [Driver: zonepath.csi.dev] zonepath scenario 16a: provisions ..." status="failed"><failure message="x" type="failed">boom</failure></testcase>
    <testcase name="[It] External Storage [Driver: zonepath.csi.dev] zonepath scenario 2: places ..." status="failed"><failure message="x" type="failed">boom</failure></testcase>
    <testcase name="[It] External Storage [Driver: zonepath.csi.dev] zonepath scenario 3: keeps ..." status="panicked"><error message="x" type="panicked">boom</error></testcase>
    <testcase name="[It] External Storage [Driver: zonepath.csi.dev] zonepath scenario 1: gives ..." status="passed"></testcase>
    <testcase name="[It] External Storage [Driver: zonepath.csi.dev] zonepath scenario 5: places ..." status="skipped"><skipped message="skipped - no capability"></skipped></testcase>
    <testcase name="[SynchronizedAfterSuite] scenario-less node" status="failed"><failure message="x" type="failed">boom</failure></testcase>
  </testsuite>
</testsuites>`
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(path, []byte(junit), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := failedScenarios(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"2", "3", "16a"}; !slices.Equal(got, want) {
		t.Fatalf("failed scenarios = %v, want %v (failed and errored, in scenario order; passed and skipped left out)", got, want)
	}
	if _, err := failedScenarios(filepath.Join(t.TempDir(), "missing.xml")); err == nil {
		t.Fatal("a missing JUnit file gave no error")
	}
}

func TestResultCaught(t *testing.T) {
	m := mutant{catchers: []string{"1", "5"}}
	cases := []struct {
		name   string
		failed []string
		want   bool
	}{
		{"every catcher failed", []string{"1", "3", "5"}, true},
		{"one catcher passed", []string{"1", "3"}, false},
		{"nothing failed", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := (result{mutant: m, failed: tc.failed}).caught(); got != tc.want {
				t.Fatalf("caught() = %v, want %v", got, tc.want)
			}
		})
	}
}

// Every mutant names what it breaks, a run, and at least one catcher;
// names are unique (they are --only's values and directory names).
func TestMutantsTable(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range mutants {
		if m.name == "" || m.breaks == "" || m.run == nil || len(m.catchers) == 0 {
			t.Errorf("mutant %+v: needs a name, what it breaks, a run and catchers", m)
		}
		if seen[m.name] {
			t.Errorf("mutant %q repeats", m.name)
		}
		seen[m.name] = true
		for _, c := range m.catchers {
			if scenarioID.FindString("scenario "+c+":") == "" {
				t.Errorf("mutant %q: catcher %q is not a scenario ID", m.name, c)
			}
		}
	}
}
