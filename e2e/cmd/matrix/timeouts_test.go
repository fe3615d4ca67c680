package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A driver file may leave SnapshotCreate to the framework's default or
// set it at or above the snapshotter's longest backoff; shorter (the 3m
// the late-ready personality first had) is rejected, and so is a value
// that is no duration.
func TestCheckSnapshotTimeout(t *testing.T) {
	for _, tc := range []struct {
		name, timeouts, wantErr string
	}{
		{name: "unset", timeouts: "Timeouts:\n  ClaimProvision: 1m\n"},
		{name: "no Timeouts", timeouts: ""},
		{name: "the backoff", timeouts: "Timeouts:\n  SnapshotCreate: 5m\n"},
		{name: "longer", timeouts: "Timeouts:\n  SnapshotCreate: 10m\n"},
		{name: "shorter", timeouts: "Timeouts:\n  SnapshotCreate: 3m\n", wantErr: "shorter than csi-snapshotter's --retry-interval-max"},
		{name: "not a duration", timeouts: "Timeouts:\n  SnapshotCreate: soon\n", wantErr: "Timeouts.SnapshotCreate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "driver.yaml")
			if err := os.WriteFile(file, []byte("DriverInfo:\n  Name: x.csi.dev\n"+tc.timeouts), 0o644); err != nil {
				t.Fatal(err)
			}
			err := checkSnapshotTimeout(file)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
