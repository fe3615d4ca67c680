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
