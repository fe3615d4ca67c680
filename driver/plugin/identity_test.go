package plugin

import (
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	tests := []struct {
		name    string
		wantErr string
	}{
		{name: "zonepath.csi.dev"},
		{name: "nocap.zonepath.csi.dev"},
		{name: "a"},
		{name: "Zone-Path.example.COM"},
		{name: strings.Repeat("a", 63)},
		{name: "", wantErr: "required"},
		{name: strings.Repeat("a", 64), wantErr: "more than 63"},
		{name: ".zonepath", wantErr: "domain name notation"},
		{name: "zonepath-", wantErr: "domain name notation"},
		{name: "zone path", wantErr: "domain name notation"},
		{name: "zone/path", wantErr: "domain name notation"},
	}
	for _, tc := range tests {
		err := ValidateName(tc.name)
		if tc.wantErr == "" && err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", tc.name, err)
		}
		if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("ValidateName(%q) = %v, want an error containing %q", tc.name, err, tc.wantErr)
		}
	}
}

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
		{names: []string{CapModifyVolume}, want: Config{DisableModifyVolume: true}},
		{names: []string{CapGroupController}, want: Config{DisableGroupController: true}},
		{names: []string{CapVolumeHealth, CapListVolumeHealth, CapStorageHealth}, want: Config{DisableVolumeHealth: true, DisableListVolumeHealth: true, DisableStorageHealth: true}},
		{names: []string{"SNAPSHOT"}, wantErr: `unknown capability "SNAPSHOT"`},
		{names: []string{" X"}, wantErr: `unknown capability " X" (known: CONTROLLER_SERVICE, VOLUME_ACCESSIBILITY_CONSTRAINTS, SNAPSHOT_ACCESSIBILITY_CONSTRAINTS, MODIFY_VOLUME, GROUP_CONTROLLER_SERVICE, GET_VOLUME_HEALTH, LIST_VOLUME_HEALTH, GET_STORAGE_HEALTH)`},
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
			got.DisableSnapshotAccessibility != tc.want.DisableSnapshotAccessibility ||
			got.DisableModifyVolume != tc.want.DisableModifyVolume ||
			got.DisableGroupController != tc.want.DisableGroupController ||
			got.DisableVolumeHealth != tc.want.DisableVolumeHealth || got.DisableListVolumeHealth != tc.want.DisableListVolumeHealth ||
			got.DisableStorageHealth != tc.want.DisableStorageHealth {
			t.Errorf("DisableCapabilities(%q) = %+v, %v; want %+v", tc.names, got, err, tc.want)
		}
	}
}
