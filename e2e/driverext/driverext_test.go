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
		{name: "no segments", file: "snapshotTopology: true\n", wantErr: "segments: none given"},
		{name: "one segment (a one-zone cluster)", file: "segments:\n- {topology.kubernetes.io/zone: zone-a}\n"},
		{name: "no volume topology", file: "volumeTopology: false\nattachLimits: {maxVolumesPerNode: 4}\n"},
		{name: "no volume topology, with segments", file: "volumeTopology: false\nsegments:\n- {topology.kubernetes.io/zone: zone-a}\n", wantErr: "segments: 1 given with volumeTopology: false"},
		{name: "no volume topology, node-local", file: "volumeTopology: false\nnodeLocal: true\n", wantErr: "nodeLocal: true with volumeTopology: false"},
		{name: "no volume topology, regionKey", file: "volumeTopology: false\nregionKey: topology.kubernetes.io/region\n", wantErr: "regionKey: set with volumeTopology: false"},
		{name: "no volume topology, exhaustion", file: "volumeTopology: false\n" + exhaustion("exhaustAfter: 2"), wantErr: "exhaustion: set with volumeTopology: false"},
		{name: "no volume topology, bad attachLimits", file: "volumeTopology: false\nattachLimits: {maxVolumesPerNode: 0}\n", wantErr: "attachLimits.maxVolumesPerNode: 0"},
		{name: "node-local", file: good + "nodeLocal: true\nrestoresInSourceSegmentOnly: true\n"},
		{name: "empty segment", file: "segments:\n- {topology.kubernetes.io/zone: zone-a}\n- {}\n", wantErr: "segments[1]: empty segment"},
		{name: "unknown topology key", file: "segments:\n- {topology.kubernetes.io/zone: zone-a}\n- {zone: zone-b}\n", wantErr: `segments[1]: key "zone" is not one of DriverInfo.TopologyKeys`},
		{name: "empty value", file: "segments:\n- {topology.kubernetes.io/zone: zone-a}\n- {topology.kubernetes.io/zone: ''}\n", wantErr: `segments[1]: key "topology.kubernetes.io/zone" has an empty value`},
		{name: "repeated segment", file: "segments:\n- {topology.kubernetes.io/zone: zone-a}\n- {topology.kubernetes.io/zone: zone-a}\n", wantErr: "segments[1]: {topology.kubernetes.io/zone=zone-a} repeats segments[0]"},
		{name: "regionKey not a topology key", file: "regionKey: region\nsegments:\n- {topology.kubernetes.io/zone: zone-a}\n- {topology.kubernetes.io/zone: zone-b}\n", wantErr: `regionKey: "region" is not one of`},
		{name: "unrestricted parameters", file: good + "unrestrictedSnapshotClassParameters:\n  zonepath.csi.dev/snapshotScope: global\n"},
		{name: "unrestricted parameters with an empty key", file: good + "unrestrictedSnapshotClassParameters:\n  '': global\n", wantErr: "unrestrictedSnapshotClassParameters: empty key"},
		{name: "restricted parameters", file: good + "restrictedSnapshotClassParameters:\n  zonepath.csi.dev/snapshotScope: zone\n"},
		{name: "restricted parameters with an empty key", file: good + "restrictedSnapshotClassParameters:\n  '': zone\n", wantErr: "restrictedSnapshotClassParameters: empty key"},
		{name: "typo'd restricted parameters", file: good + "restrictedSnapshotClassParameter:\n  a: b\n", wantErr: `unknown field "restrictedSnapshotClassParameter"`},
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

const attachLimits = `
attachLimits:
  maxVolumesPerNode: 4
  nodeWithoutCSINode: node-b-3
  nodeWithoutDriver: node-b-2
  lateNode: node-a-3
  registerCommand: kubectl label node node-a-3 zonepath.csi.dev/register=true
  unregisterCommand: kubectl label node node-a-3 zonepath.csi.dev/register-
`

func TestAttachLimits(t *testing.T) {
	for _, tc := range []struct {
		name, section, wantErr string
	}{
		{name: "complete", section: attachLimits},
		{name: "limit only", section: "attachLimits: {maxVolumesPerNode: 16}\n"},
		{name: "typo'd key", section: strings.Replace(attachLimits, "lateNode", "lateNodes", 1), wantErr: `unknown field "lateNodes"`},
		{name: "known keys listed", section: strings.Replace(attachLimits, "lateNode", "lateNodes", 1), wantErr: "attachLimits.{maxVolumesPerNode, nodeLimits, nodeWithoutCSINode, nodeWithoutDriver, lateNode, registerCommand, unregisterCommand}"},
		{name: "limit not a number", section: "attachLimits: {maxVolumesPerNode: four}\n", wantErr: "maxVolumesPerNode"},
		{name: "no limit", section: "attachLimits: {nodeWithoutDriver: node-b-2}\n", wantErr: "attachLimits.maxVolumesPerNode: 0"},
		{name: "negative limit", section: "attachLimits: {maxVolumesPerNode: -1}\n", wantErr: "attachLimits.maxVolumesPerNode: -1"},
		{name: "per-node limits", section: "attachLimits: {maxVolumesPerNode: 8, nodeLimits: {node-a-2: 4, node-b-1: 12}}\n"},
		{name: "per-node limit 0", section: "attachLimits: {maxVolumesPerNode: 8, nodeLimits: {node-a-2: 4, node-b-1: 0}}\n", wantErr: "attachLimits.nodeLimits.node-b-1: 0"},
		{name: "per-node limit negative", section: "attachLimits: {maxVolumesPerNode: 8, nodeLimits: {node-a-2: -2}}\n", wantErr: "attachLimits.nodeLimits.node-a-2: -2"},
		{name: "one node, two cases", section: strings.Replace(attachLimits, "node-b-2", "node-b-3", 1), wantErr: `attachLimits.nodeWithoutDriver: node "node-b-3" is also attachLimits.nodeWithoutCSINode`},
		{name: "late node without commands", section: "attachLimits: {maxVolumesPerNode: 4, lateNode: node-a-3}\n", wantErr: `attachLimits.lateNode: "node-a-3" needs registerCommand and unregisterCommand`},
		{name: "late node without unregister", section: "attachLimits: {maxVolumesPerNode: 4, lateNode: node-a-3, registerCommand: 'true'}\n", wantErr: "needs registerCommand and unregisterCommand"},
		{name: "commands without late node", section: "attachLimits: {maxVolumesPerNode: 4, registerCommand: 'true', unregisterCommand: 'true'}\n", wantErr: "set without lateNode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(good + tc.section))
			if err == nil {
				err = f.Validate(keys)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestLimitOf: a node of nodeLimits has its own limit, others the
// default.
func TestLimitOf(t *testing.T) {
	a := AttachLimits{MaxVolumesPerNode: 8, NodeLimits: map[string]int32{"node-a-2": 4}}
	if a.LimitOf("node-a-2") != 4 || a.LimitOf("node-a-1") != 8 {
		t.Errorf("LimitOf = %d, %d; want 4 for node-a-2, 8 for node-a-1", a.LimitOf("node-a-2"), a.LimitOf("node-a-1"))
	}
}

func TestAttachLimitsMissing(t *testing.T) {
	full, err := Parse([]byte(good + attachLimits))
	if err != nil {
		t.Fatal(err)
	}
	limitOnly, err := Parse([]byte(good + "attachLimits: {maxVolumesPerNode: 4}\n"))
	if err != nil {
		t.Fatal(err)
	}
	none, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		f    *File
		keys []string
		want string
	}{
		{name: "section absent", f: none, want: "driver ext: attachLimits is not set"},
		{name: "limit is enough", f: limitOnly},
		{name: "node missing", f: limitOnly, keys: []string{"nodeWithoutCSINode"}, want: "driver ext: attachLimits.nodeWithoutCSINode is not set"},
		{name: "second key missing", f: limitOnly, keys: []string{"lateNode", "registerCommand"}, want: "attachLimits.lateNode is not set"},
		{name: "all there", f: full, keys: []string{"nodeWithoutCSINode", "nodeWithoutDriver", "lateNode", "registerCommand", "unregisterCommand"}},
		{name: "unknown key never passes", f: full, keys: []string{"lateNodes"}, want: "attachLimits.lateNodes is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f.AttachLimitsMissing(tc.keys...); (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Errorf("AttachLimitsMissing(%v) = %q, want %q", tc.keys, got, tc.want)
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
		gateOff     string
		// unrestricted and exhaustion default to "is not set".
		unrestricted, exhaustion string
	}{
		{name: "no capability", f: File{FeatureGates: FeatureGates{VolumeSnapshotTopology: true}},
			topo: "snapshotTopology is false", wide: "regionWideSnapshotClassParameters is not set", otherRegion: "regionKey is not set",
			gateOff: "featureGates.VolumeSnapshotTopology is true"},
		{name: "gate off", f: File{SnapshotTopology: true},
			topo: "featureGates.VolumeSnapshotTopology is false", wide: "regionWideSnapshotClassParameters is not set", otherRegion: "regionKey is not set"},
		{name: "gate off, no capability", f: File{},
			topo: "snapshotTopology is false", wide: "regionWideSnapshotClassParameters is not set", otherRegion: "regionKey is not set",
			gateOff: "snapshotTopology is false"},
		{name: "one region", f: File{SnapshotTopology: true, FeatureGates: FeatureGates{VolumeSnapshotTopology: true}, RegionKey: "r",
			Segments: []Segment{{"r": "1", "z": "a"}, {"r": "1", "z": "b"}}, RegionWideSnapshotClassParameters: map[string]string{"scope": "region"}},
			otherRegion: "every segment has r=1", gateOff: "featureGates.VolumeSnapshotTopology is true"},
		{name: "unrestricted and exhaustion declared", f: File{SnapshotTopology: true, FeatureGates: FeatureGates{VolumeSnapshotTopology: true},
			UnrestrictedSnapshotClassParameters: map[string]string{"scope": "global"}, Exhaustion: &Exhaustion{ExhaustedSegment: Segment{"z": "d"}, ExhaustAfter: 2}},
			wide: "regionWideSnapshotClassParameters is not set", otherRegion: "regionKey is not set", unrestricted: "-", exhaustion: "-",
			gateOff: "featureGates.VolumeSnapshotTopology is true"},
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
			check("GateOffMissing", tc.f.GateOffMissing(), tc.gateOff)
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

// TestExampleFiles: the extension files make conformance and the README
// use parse, fit zonepath's topology keys, and say which specs they run.
func TestExampleFiles(t *testing.T) {
	for _, tc := range []struct {
		file    string
		gateOff bool
	}{
		{file: "zonepath-ext.yaml"},
		{file: "zonepath-cluster-2-ext.yaml", gateOff: true},
		{file: "kind/zonepath-ext.yaml"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			f, err := Load(filepath.Join("..", "testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Validate(keys); err != nil {
				t.Fatal(err)
			}
			if why := f.GateOffMissing(); (why == "") != tc.gateOff {
				t.Errorf("GateOffMissing() = %q; want the gate-off specs to run: %v", why, tc.gateOff)
			}
			if why := f.RegionWideMissing(); why != "" {
				t.Errorf("RegionWideMissing() = %q", why)
			}
		})
	}
}

func TestSegmentString(t *testing.T) {
	for want, s := range map[string]Segment{
		"{}":                   {},
		"{r=1,z=a}":            {"z": "a", "r": "1"},
		"{a=,topology/zone=b}": {"topology/zone": "b", "a": ""},
	} {
		if got := s.String(); got != want {
			t.Errorf("%#v.String() = %s, want %s", s, got, want)
		}
	}
}
