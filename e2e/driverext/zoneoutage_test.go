package driverext

import (
	"strings"
	"testing"
)

func TestZoneOutage(t *testing.T) {
	const base = `snapshotTopology: true
featureGates: {VolumeSnapshotTopology: true}
segments:
- {r: region-1, z: zone-a}
- {r: region-1, z: zone-c}
- {r: region-2, z: zone-b}
regionWideSnapshotClassParameters: {scope: region}
`
	keys := []string{"r", "z"}
	tests := []struct {
		name, section, regionKey, wantErr string
	}{
		{name: "valid", section: "zoneOutage: {segment: {r: region-1, z: zone-c}, zone: zone-c, downCommand: down, upCommand: up}"},
		{name: "no command", section: "zoneOutage: {segment: {r: region-1, z: zone-c}, zone: zone-c, downCommand: down}", wantErr: "all required"},
		{name: "alone in its region", section: "zoneOutage: {segment: {r: region-2, z: zone-b}, zone: zone-b, downCommand: down, upCommand: up}", wantErr: "no other of segments shares its region"},
		{name: "unknown key", section: "zoneOutage: {segment: {r: region-1, zz: zone-c}, zone: zone-c, downCommand: down, upCommand: up}", wantErr: `zoneOutage.segment: key "zz"`},
		{name: "no regionKey", regionKey: "-", section: "zoneOutage: {segment: {r: region-1, z: zone-c}, zone: zone-c, downCommand: down, upCommand: up}", wantErr: "needs regionKey"},
		{name: "misspelt key", section: "zoneOutage: {segment: {r: region-1, z: zone-c}, zones: zone-c, downCommand: down, upCommand: up}", wantErr: "zoneOutage.{segment, zone, downCommand, upCommand}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := base + tt.section + "\n"
			if tt.regionKey != "-" {
				data += "regionKey: r\n"
			}
			f, err := Parse([]byte(data))
			if err == nil {
				err = f.Validate(keys)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			case err == nil && (f.ZoneOutageMissing() != "" || f.RegionMate(f.ZoneOutage.Segment).String() != "{r=region-1,z=zone-a}"):
				t.Fatalf("missing %q, region mate %v; want none missing, zone-a", f.ZoneOutageMissing(), f.RegionMate(f.ZoneOutage.Segment))
			}
		})
	}
}
