package main

import (
	"context"
	"strings"
	"testing"

	"github.com/zonepath/zonepath/driver/plugin"
)

// TestConfigDriverName: --drivername reaches plugin.Config.Name, and a name
// that is not a CSI driver name stops the start with an error naming the
// flag.
func TestConfigDriverName(t *testing.T) {
	tests := []struct {
		name, disable string
		wantErr       string
		wantSnapshot  bool // snapshot accessibility still advertised
	}{
		{name: plugin.DefaultName, wantSnapshot: true},
		{name: "nocap.zonepath.csi.dev", disable: "SNAPSHOT_ACCESSIBILITY_CONSTRAINTS"},
		{name: "", wantErr: "--drivername: a CSI driver name is required"},
		{name: "-zonepath.csi.dev", wantErr: "--drivername: CSI driver name \"-zonepath.csi.dev\" is not in domain name notation"},
		{name: "zone_path", wantErr: "not in domain name notation"},
		{name: strings.Repeat("z", 64), wantErr: "has 64 characters, more than 63"},
		{name: "zonepath.csi.dev", disable: "SNAPSHOTS", wantErr: `--disable-capabilities: unknown capability "SNAPSHOTS"`},
	}
	for _, tc := range tests {
		t.Run(tc.name+"/"+tc.disable, func(t *testing.T) {
			o := options{name: tc.name, disable: tc.disable, controller: true, stateDir: t.TempDir()}
			cfg, err := o.config(context.Background())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("config() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Name != tc.name {
				t.Errorf("Config.Name = %q, want %q", cfg.Name, tc.name)
			}
			if got := !cfg.DisableSnapshotAccessibility; got != tc.wantSnapshot {
				t.Errorf("snapshot accessibility advertised = %v, want %v", got, tc.wantSnapshot)
			}
		})
	}
}
