package driverext

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var keys = []string{"topology.kubernetes.io/region", "topology.kubernetes.io/zone"}

const good = `
snapshotTopology: true
featureGates:
  VolumeSnapshotTopology: true
regionKey: topology.kubernetes.io/region
segments:
- {topology.kubernetes.io/region: region-1, topology.kubernetes.io/zone: zone-a}
- {topology.kubernetes.io/region: region-1, topology.kubernetes.io/zone: zone-c}
- {topology.kubernetes.io/region: region-2, topology.kubernetes.io/zone: zone-b}
regionWideSnapshotClassParameters:
  zonepath.csi.dev/snapshotScope: region
`

// exhaustion is an exhaustion section for zone-d with more keys.
func exhaustion(more string) string {
	return "exhaustion:\n  exhaustedSegment: {topology.kubernetes.io/region: region-2, topology.kubernetes.io/zone: zone-d}\n  " + more + "\n"
}

func TestParseAndValidate(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		// wantErr is a substring of the error; "" means no error.
		wantErr string
	}{
		{name: "complete", file: good},
		{name: "typo'd top-level key", file: good + "snapshotTopolgy: true\n", wantErr: `unknown field "snapshotTopolgy"`},
		{name: "typo'd gate", file: strings.Replace(good, "VolumeSnapshotTopology: true", "VolumeSnapshotTopolog: true", 1), wantErr: `unknown field "VolumeSnapshotTopolog"`},
		{name: "duplicate key", file: good + "snapshotTopology: false\n", wantErr: `"snapshotTopology"`},
		{name: "wrong type", file: "snapshotTopology: yes please\n", wantErr: "snapshotTopology"},
		{name: "no segments", file: "snapshotTopology: true\n", wantErr: "segments: 0 given"},
		{name: "one segment", file: "segments:\n- {topology.kubernetes.io/zone: zone-a}\n", wantErr: "segments: 1 given"},
		{name: "empty segment", file: "segments:\n- {topology.kubernetes.io/zone: zone-a}\n- {}\n", wantErr: "segments[1]: empty segment"},
		{name: "unknown topology key", file: "segments:\n- {topology.kubernetes.io/zone: zone-a}\n- {zone: zone-b}\n", wantErr: `segments[1]: key "zone" is not one of DriverInfo.TopologyKeys`},
		{name: "empty value", file: "segments:\n- {topology.kubernetes.io/zone: zone-a}\n- {topology.kubernetes.io/zone: ''}\n", wantErr: `segments[1]: key "topology.kubernetes.io/zone" has an empty value`},
		{name: "repeated segment", file: "segments:\n- {topology.kubernetes.io/zone: zone-a}\n- {topology.kubernetes.io/zone: zone-a}\n", wantErr: "segments[1]: {topology.kubernetes.io/zone=zone-a} repeats segments[0]"},
		{name: "regionKey not a topology key", file: "regionKey: region\nsegments:\n- {topology.kubernetes.io/zone: zone-a}\n- {topology.kubernetes.io/zone: zone-b}\n", wantErr: `regionKey: "region" is not one of`},
		{name: "unrestricted parameters", file: good + "unrestrictedSnapshotClassParameters:\n  zonepath.csi.dev/snapshotScope: global\n"},
		{name: "unrestricted parameters with an empty key", file: good + "unrestrictedSnapshotClassParameters:\n  '': global\n", wantErr: "unrestrictedSnapshotClassParameters: empty key"},
		{name: "exhaustion filled by snapshots", file: good + exhaustion("exhaustAfter: 2")},
		{name: "exhaustion lifted by a command", file: good + exhaustion("liftCommand: raise-quota zone-d\n  liftTimeout: 2m")},
		{name: "typo'd exhaustion key", file: good + exhaustion("exhaustAftr: 2"), wantErr: `unknown field "exhaustAftr"`},
		{name: "exhaustion without a segment", file: good + "exhaustion:\n  exhaustAfter: 2\n", wantErr: "exhaustion.exhaustedSegment: missing"},
		{name: "exhausted segment with a foreign key", file: good + "exhaustion:\n  exhaustedSegment: {zone: zone-d}\n  exhaustAfter: 2\n", wantErr: `exhaustion.exhaustedSegment: key "zone" is not one of DriverInfo.TopologyKeys`},
		{name: "negative exhaustAfter", file: good + exhaustion("exhaustAfter: -1"), wantErr: "exhaustion.exhaustAfter: must be from 0 to 1000, got -1"},
		{name: "exhaustAfter and liftCommand", file: good + exhaustion("exhaustAfter: 2\n  liftCommand: true"), wantErr: "exhaustion.liftCommand: is for a segment exhausted from the start"},
		{name: "no way to lift", file: good + exhaustion("liftTimeout: 1m"), wantErr: "exhaustion: neither exhaustAfter nor liftCommand"},
		{name: "negative liftTimeout", file: good + exhaustion("liftCommand: true\n  liftTimeout: -1s"), wantErr: "exhaustion.liftTimeout: must not be negative"},
		{name: "segment without region", file: "regionKey: topology.kubernetes.io/region\nsegments:\n- {topology.kubernetes.io/zone: zone-a}\n- {topology.kubernetes.io/zone: zone-b}\n", wantErr: `segments[0]: {topology.kubernetes.io/zone=zone-a} has no value for regionKey`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(tc.file))
			if err == nil {
				err = f.Validate(keys)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("no error, want one containing %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error %q does not contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestNoTopologyKeys(t *testing.T) {
	f, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Validate(nil); err == nil || !strings.Contains(err.Error(), "DriverInfo.TopologyKeys is empty") {
		t.Fatalf("Validate(nil) = %v, want the empty TopologyKeys error", err)
	}
}

func TestLoadNamesFileAndKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ext.yaml")
	if err := os.WriteFile(path, []byte(good+"segmnets: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `"segmnets"`) {
		t.Fatalf("Load = %v, want an error naming %s and the key segmnets", err, path)
	}
}

func TestReasons(t *testing.T) {
	for _, tc := range []struct {
		name        string
		f           File
		topo, wide  string
		otherRegion string
		// unrestricted and exhaustion default to "is not set".
		unrestricted, exhaustion string
	}{
		{name: "no capability", f: File{FeatureGates: FeatureGates{VolumeSnapshotTopology: true}},
			topo: "snapshotTopology is false", wide: "regionWideSnapshotClassParameters is not set", otherRegion: "regionKey is not set"},
		{name: "gate off", f: File{SnapshotTopology: true},
			topo: "featureGates.VolumeSnapshotTopology is false", wide: "regionWideSnapshotClassParameters is not set", otherRegion: "regionKey is not set"},
		{name: "one region", f: File{SnapshotTopology: true, FeatureGates: FeatureGates{VolumeSnapshotTopology: true}, RegionKey: "r",
			Segments: []Segment{{"r": "1", "z": "a"}, {"r": "1", "z": "b"}}, RegionWideSnapshotClassParameters: map[string]string{"scope": "region"}},
			otherRegion: "every segment has r=1"},
		{name: "unrestricted and exhaustion declared", f: File{SnapshotTopology: true, FeatureGates: FeatureGates{VolumeSnapshotTopology: true},
			UnrestrictedSnapshotClassParameters: map[string]string{"scope": "global"}, Exhaustion: &Exhaustion{ExhaustedSegment: Segment{"z": "d"}, ExhaustAfter: 2}},
			wide: "regionWideSnapshotClassParameters is not set", otherRegion: "regionKey is not set", unrestricted: "-", exhaustion: "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(what, got, want string) {
				t.Helper()
				if (want == "") != (got == "") || !strings.Contains(got, want) {
					t.Errorf("%s = %q, want %q", what, got, want)
				}
			}
			check("SnapshotTopologyMissing", tc.f.SnapshotTopologyMissing(), tc.topo)
			check("RegionWideMissing", tc.f.RegionWideMissing(), tc.wide)
			declared := func(want, missing string) string {
				switch want {
				case "":
					return missing
				case "-":
					return ""
				}
				return want
			}
			check("UnrestrictedMissing", tc.f.UnrestrictedMissing(), declared(tc.unrestricted, "unrestrictedSnapshotClassParameters is not set"))
			check("ExhaustionMissing", tc.f.ExhaustionMissing(), declared(tc.exhaustion, "exhaustion is not set"))
			if len(tc.f.Segments) == 0 {
				tc.f.Segments = []Segment{{"z": "a"}}
			}
			_, why := tc.f.OtherRegion()
			check("OtherRegion", why, tc.otherRegion)
		})
	}
}

func TestRegions(t *testing.T) {
	f, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	other, why := f.OtherRegion()
	if why != "" || other["topology.kubernetes.io/zone"] != "zone-b" {
		t.Fatalf("OtherRegion = %v, %q, want zone-b", other, why)
	}
	if same := f.SameRegion(); same["topology.kubernetes.io/zone"] != "zone-c" {
		t.Fatalf("SameRegion = %v, want zone-c", same)
	}
}
