package junit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/reporters"
)

func TestOutcomeOf(t *testing.T) {
	tests := []struct {
		status string
		want   Outcome
	}{
		{"passed", Passed},
		{"skipped", Skipped},
		{"pending", Skipped},
		{"failed", Failed},
		{"timedout", Failed},
		{"interrupted", Failed},
		{"aborted", Failed},
		{"panicked", Failed},
		{"", Failed}, // unknown: never counted as a pass
	}
	for _, tt := range tests {
		if got := OutcomeOf(reporters.JUnitTestCase{Status: tt.status}); got != tt.want {
			t.Errorf("OutcomeOf(%q) = %d, want %d", tt.status, got, tt.want)
		}
	}
}

func TestIsSpec(t *testing.T) {
	for name, want := range map[string]bool{
		"[It] zonepath scenario 1: x": true,
		"[BeforeSuite]":               false,
		"[ReportAfterSuite] report":   false,
		"It without brackets":         false,
	} {
		if got := IsSpec(reporters.JUnitTestCase{Name: name}); got != want {
			t.Errorf("IsSpec(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestSkipReasonAndSelected(t *testing.T) {
	tests := []struct {
		name        string
		tc          reporters.JUnitTestCase
		msg, reason string
		selected    bool
	}{
		{"Skip at run time", reporters.JUnitTestCase{Status: "skipped", Skipped: &reporters.JUnitSkipped{Message: "skipped - ControllerModifyVolume not supported"}},
			"skipped - ControllerModifyVolume not supported", "ControllerModifyVolume not supported", true},
		{"skipped by --ginkgo.skip", reporters.JUnitTestCase{Status: "skipped", Skipped: &reporters.JUnitSkipped{Message: "skipped"}}, "skipped", "", false},
		{"pending", reporters.JUnitTestCase{Status: "pending", Skipped: &reporters.JUnitSkipped{Message: "pending"}}, "pending", "", false},
		{"passed", reporters.JUnitTestCase{Status: "passed"}, "passed", "", true},
		{"failed", reporters.JUnitTestCase{Status: "failed"}, "failed", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SkipMessage(tt.tc); got != tt.msg {
				t.Errorf("SkipMessage = %q, want %q", got, tt.msg)
			}
			if got := SkipReason(tt.tc); got != tt.reason {
				t.Errorf("SkipReason = %q, want %q", got, tt.reason)
			}
			if got := Selected(tt.tc); got != tt.selected {
				t.Errorf("Selected = %v, want %v", got, tt.selected)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "junit.xml")
	if err := os.WriteFile(good, []byte(`<testsuites><testsuite name="s"><testcase name="[It] a" status="passed"></testcase><testcase name="[BeforeSuite]" status="failed"></testcase></testsuite></testsuites>`), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.xml")
	if err := os.WriteFile(bad, []byte("not xml <"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Load(good)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ForEachTestCase(r, func(tc reporters.JUnitTestCase) { names = append(names, tc.Name+" "+tc.Status) })
	if got := strings.Join(names, ", "); got != "[It] a passed, [BeforeSuite] failed" {
		t.Errorf("test cases = %q", got)
	}
	if _, err := Load(filepath.Join(dir, "missing.xml")); err == nil {
		t.Error("a missing file gave no error")
	}
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("a file that is not JUnit: err = %v, want one naming it", err)
	}
}

// TestVersionGated: only a run-time skip whose reason begins with the
// version-gate prefix is version-gated; a reason that merely speaks of
// versions, as the suite's skip before the prefix did, is not.
func TestVersionGated(t *testing.T) {
	skip := func(msg string) reporters.JUnitTestCase {
		return reporters.JUnitTestCase{Status: "skipped", Skipped: &reporters.JUnitSkipped{Message: msg}}
	}
	gate := VersionGateReason("v1.37.0", "v1.35.8", "a field is on by default from it")
	tests := []struct {
		name string
		tc   reporters.JUnitTestCase
		want bool
	}{
		{"the suite's version-gate skip", skip("skipped - " + gate), true},
		{"another run-time skip", skip("skipped - driver ext: attachLimits.nodeWithoutCSINode is not set"), false},
		{"a reason speaking of versions", skip("skipped - server v1.35.8 is older than v1.37.0, where the field is on by default"), false},
		{"the prefix later in the reason", skip("skipped - see " + gate), false},
		{"left out by a filter", skip("skipped"), false},
		{"passed with the text", reporters.JUnitTestCase{Status: "passed", Skipped: &reporters.JUnitSkipped{Message: "skipped - " + gate}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := VersionGated(tt.tc); got != tt.want {
				t.Errorf("VersionGated = %v, want %v", got, tt.want)
			}
		})
	}
	if want := "Kubernetes version gate: needs v1.37.0 or newer, the server is v1.35.8: a field is on by default from it"; gate != want {
		t.Errorf("VersionGateReason = %q, want %q", gate, want)
	}
}
