package e2e

import (
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/reporters"

	"github.com/zonepath/zonepath/e2e/junit"
)

// TestPreventSchedulingSkip: 15c-15g skip before v1.37 with the reason
// junitmerge accepts as a version gate (as Ginkgo writes it into the
// JUnit file), and run from v1.37 on.
func TestPreventSchedulingSkip(t *testing.T) {
	tests := []struct {
		version  string
		wantSkip bool
		wantErr  string
	}{
		{version: "v1.35.8", wantSkip: true},
		{version: "v1.36.4", wantSkip: true},
		{version: "v1.37.0-rc.1", wantSkip: true},
		{version: "v1.37.0", wantSkip: false},
		{version: "v1.37.1+k3s1", wantSkip: false},
		{version: "v1.38.0", wantSkip: false},
		{version: "1.36", wantErr: `parsing the server version "1.36"`},
	}
	for _, tc := range tests {
		t.Run(tc.version, func(t *testing.T) {
			why, err := preventSchedulingSkip(tc.version)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (why != "") != tc.wantSkip {
				t.Fatalf("skip %q, want a skip: %v", why, tc.wantSkip)
			}
			written := reporters.JUnitTestCase{Status: "skipped", Skipped: &reporters.JUnitSkipped{Message: "skipped - " + why}}
			if tc.wantSkip && (!junit.VersionGated(written) || !strings.Contains(why, tc.version)) {
				t.Errorf("skip reason %q is not a version gate naming the server's %s", why, tc.version)
			}
		})
	}
}
