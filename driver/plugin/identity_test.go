package plugin

import (
	"strings"
	"testing"
)

func TestDisableCapabilities(t *testing.T) {
	tests := []struct {
		names   []string
		want    Config
		wantErr string
	}{
		{names: nil},
		{names: []string{""}},
		{names: []string{" SNAPSHOT_ACCESSIBILITY_CONSTRAINTS "}, want: Config{DisableSnapshotAccessibility: true}},
		{names: []string{CapControllerService, CapVolumeAccessibility}, want: Config{DisableControllerService: true, DisableVolumeAccessibility: true}},
		{names: []string{"SNAPSHOT"}, wantErr: `unknown capability "SNAPSHOT"`},
	}
	for _, tc := range tests {
		var got Config
		err := got.DisableCapabilities(tc.names)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("DisableCapabilities(%q) = %v, want %q", tc.names, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got.DisableControllerService != tc.want.DisableControllerService ||
			got.DisableVolumeAccessibility != tc.want.DisableVolumeAccessibility ||
			got.DisableSnapshotAccessibility != tc.want.DisableSnapshotAccessibility {
			t.Errorf("DisableCapabilities(%q) = %+v, %v; want %+v", tc.names, got, err, tc.want)
		}
	}
}
