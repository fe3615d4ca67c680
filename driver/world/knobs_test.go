package world_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/zonepath/zonepath/driver/world"
)

// TestParseKnobs: the settings that make the driver play another driver
// family parse, get their defaults, and refuse combinations the driver
// could not honour, with a message naming the field.
func TestParseKnobs(t *testing.T) {
	const twoRegions = "regions:\n- name: r1\n  zones: [{name: a}, {name: b}]\n- name: r2\n  zones: [{name: c}]\n"
	const sameZoneName = "regions:\n- name: r1\n  zones: [{name: a}]\n- name: r2\n  zones: [{name: a}]\n"
	tests := []struct {
		name, doc       string
		wantScope       string
		wantSourceOnly  bool
		wantPreattached int64
		wantErr         string
	}{
		{"defaults", twoRegions, world.ScopeZone, false, 0, ""},
		{"region default scope", "snapshots: {defaultScope: region}\n" + twoRegions, world.ScopeRegion, false, 0, ""},
		{"global default scope", "snapshots: {defaultScope: global}\n" + twoRegions, world.ScopeGlobal, false, 0, ""},
		{"source zone only", "snapshots: {sourceZoneOnly: true}\n" + twoRegions, world.ScopeZone, true, 0, ""},
		{"restore where cut only", "snapshots: {restoreWhereCutOnly: true}\n" + twoRegions, world.ScopeZone, false, 0, ""},
		{"restore where cut only, region scope", "snapshots: {restoreWhereCutOnly: true, defaultScope: region}\n" + twoRegions, "", false, 0, "snapshots.restoreWhereCutOnly restores it only where it is cut"},
		{"restore where cut only, global scope", "snapshots: {restoreWhereCutOnly: true, defaultScope: global}\n" + twoRegions, "", false, 0, "snapshots.restoreWhereCutOnly restores it only where it is cut"},
		{"unknown scope", "snapshots: {defaultScope: rack}\n" + twoRegions, "", false, 0, `snapshots.defaultScope: "rack" must be zone, region or global`},
		{"unknown snapshots field", "snapshots: {scope: zone}\n" + twoRegions, "", false, 0, `unknown field "scope"`},
		{"omitRegion with unique zones", "keys: {omitRegion: true}\n" + twoRegions, world.ScopeZone, false, 0, ""},
		{"omitRegion with a zone name in two regions", "keys: {omitRegion: true}\n" + sameZoneName, "", false, 0, `keys.omitRegion: zone "a" is in regions r1 and r2`},
		{"omitRegion with region scope", "keys: {omitRegion: true}\nsnapshots: {defaultScope: region}\n" + twoRegions, "", false, 0, "snapshots.defaultScope: \"region\" needs a region key"},
		{"omitRegion with global scope", "keys: {omitRegion: true}\nsnapshots: {defaultScope: global}\n" + twoRegions, world.ScopeGlobal, false, 0, ""},
		{"omitZone", "keys: {omitZone: true}\n" + twoRegions, world.ScopeZone, false, 0, ""},
		{"omitZone with a zone name in two regions", "keys: {omitZone: true}\n" + sameZoneName, world.ScopeZone, false, 0, ""},
		{"omitZone with region scope", "keys: {omitZone: true}\nsnapshots: {defaultScope: region}\n" + twoRegions, world.ScopeRegion, false, 0, ""},
		{"omitZone with source zone only", "keys: {omitZone: true}\nsnapshots: {sourceZoneOnly: true}\n" + twoRegions, world.ScopeZone, true, 0, ""},
		{"omitZone with omitRegion", "keys: {omitZone: true, omitRegion: true}\n" + twoRegions, "", false, 0, "keys.omitZone and keys.omitRegion: the driver would report no key at all"},
		{"omitZone with nodeZone", "keys: {omitZone: true, nodeZone: example.com/zone}\n" + twoRegions, "", false, 0, `keys.nodeZone: "example.com/zone" is a zone key, but keys.omitZone reports the region alone`},
		{"omitZone with racks", "keys: {omitZone: true}\nregions:\n- name: r1\n  zones: [{name: a, racks: [k1]}]\n", "", false, 0, "keys.omitZone: zones have racks"},
		{"omitZone with restore where cut only", "keys: {omitZone: true}\nsnapshots: {restoreWhereCutOnly: true}\n" + twoRegions, "", false, 0, "snapshots.restoreWhereCutOnly: restores a snapshot only in its copies' zones, which keys.omitZone does not report"},
		{"omitZone with replicas", "keys: {omitZone: true}\nvolumes: {replicas: 2}\n" + twoRegions, "", false, 0, "volumes.replicas: 2: under keys.omitZone every volume is already usable from its whole region"},
		{"omitZone with one replica", "keys: {omitZone: true}\nvolumes: {replicas: 1}\n" + twoRegions, world.ScopeZone, false, 0, ""},
		{"preattached under the limit", "maxVolumesPerNode: 3\npreattachedVolumesPerNode: 2\n" + twoRegions, world.ScopeZone, false, 2, ""},
		{"preattached at the limit", "maxVolumesPerNode: 2\npreattachedVolumesPerNode: 2\n" + twoRegions, "", false, 0, "preattachedVolumesPerNode: 2 must be less than maxVolumesPerNode (2)"},
		{"preattached without a limit", "preattachedVolumesPerNode: 1\n" + twoRegions, "", false, 0, "preattachedVolumesPerNode: 1 must be less than maxVolumesPerNode (0)"},
		{"preattached negative", "maxVolumesPerNode: 2\npreattachedVolumesPerNode: -1\n" + twoRegions, "", false, 0, "preattachedVolumesPerNode: must not be negative"},
		{"preattached filling a node's own limit", "maxVolumesPerNode: 4\npreattachedVolumesPerNode: 1\nnodes: [{id: n1, zone: a, maxVolumesPerNode: 1}]\n" + twoRegions, "", false, 0,
			"nodes[0]: maxVolumesPerNode 1 must be more than preattachedVolumesPerNode (1)"},
		{"preattached beside a node without a limit", "maxVolumesPerNode: 4\npreattachedVolumesPerNode: 1\nnodes: [{id: n1, zone: a, maxVolumesPerNode: 0}]\n" + twoRegions, world.ScopeZone, false, 1, ""},
		{"publishLimit above the node's limit", "maxVolumesPerNode: 4\nnodes: [{id: n1, zone: a, maxVolumesPerNode: 2, publishLimit: 6}]\n" + twoRegions, world.ScopeZone, false, 0, ""},
		{"publishLimit above the default limit", "maxVolumesPerNode: 4\nnodes: [{id: n1, zone: a, publishLimit: 4}]\n" + twoRegions, world.ScopeZone, false, 0, ""},
		{"publishLimit below the node's limit", "maxVolumesPerNode: 4\nnodes: [{id: n1, zone: a, publishLimit: 3}]\n" + twoRegions, "", false, 0,
			"publishLimit 3 is below the node's maxVolumesPerNode 4"},
		{"publishLimit without a reported limit", "nodes: [{id: n1, zone: a, publishLimit: 3}]\n" + twoRegions, "", false, 0, "publishLimit 3 needs a maxVolumesPerNode"},
		{"publishLimit negative", "maxVolumesPerNode: 4\nnodes: [{id: n1, zone: a, publishLimit: -1}]\n" + twoRegions, "", false, 0, "publishLimit must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topo := parseOrRefuse(t, tc.doc, tc.wantErr)
			if topo == nil {
				return
			}
			if topo.Snapshots.DefaultScope != tc.wantScope || topo.Snapshots.SourceZoneOnly != tc.wantSourceOnly || topo.PreattachedVolumesPerNode() != tc.wantPreattached {
				t.Errorf("got scope %q, sourceZoneOnly %t, preattached %d; want %q, %t, %d", topo.Snapshots.DefaultScope, topo.Snapshots.SourceZoneOnly,
					topo.PreattachedVolumesPerNode(), tc.wantScope, tc.wantSourceOnly, tc.wantPreattached)
			}
		})
	}
}

// TestParseReadyAfter: snapshots.readyAfter is a duration, absent is 0
// (ready at once), and a negative or malformed one stops the driver at
// start naming the field.
func TestParseReadyAfter(t *testing.T) {
	const oneZone = "regions:\n- name: r1\n  zones: [{name: a}]\n"
	tests := []struct {
		name, doc string
		want      time.Duration
		wantErr   string
	}{
		{"absent", oneZone, 0, ""},
		{"twenty seconds", "snapshots: {readyAfter: 20s}\n" + oneZone, 20 * time.Second, ""},
		{"minutes", "snapshots: {readyAfter: 2m30s}\n" + oneZone, 150 * time.Second, ""},
		{"negative", "snapshots: {readyAfter: -1s}\n" + oneZone, 0, "snapshots.readyAfter: must not be negative"},
		{"a number without a unit", "snapshots: {readyAfter: 20}\n" + oneZone, 0, "readyAfter"},
		{"no unit", "snapshots: {readyAfter: \"20\"}\n" + oneZone, 0, "missing unit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topo := parseOrRefuse(t, tc.doc, tc.wantErr)
			if topo != nil && topo.Snapshots.ReadyAfter.Duration != tc.want {
				t.Fatalf("readyAfter %v; want %v", topo.Snapshots.ReadyAfter.Duration, tc.want)
			}
		})
	}
}

// parseOrRefuse parses doc; with wantErr it checks the refusal names it
// and returns nil.
func parseOrRefuse(t *testing.T, doc, wantErr string) *world.Topology {
	t.Helper()
	topo, err := world.Parse([]byte(doc))
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("Parse = %v, want error containing %q", err, wantErr)
		}
		return nil
	}
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return topo
}

// TestOmitRegion: under keys.omitRegion the driver's segments carry no
// region key, and a requested segment with one names no zone: skipped
// beside one that does, an ErrUnknownTopology requisite alone.
func TestOmitRegion(t *testing.T) {
	topo := mustParse(t, "keys: {omitRegion: true}\nregions:\n- name: r1\n  zones: [{name: a, racks: [k1]}, {name: b}]\n- name: r2\n  zones: [{name: c}]\n")
	if got := topo.Segment(2); !reflect.DeepEqual(got, seg(kZ, "c")) {
		t.Errorf("Segment(c) = %v, want the zone key only", got)
	}
	if got, err := topo.NodeSegment(0, "k1"); err != nil || !reflect.DeepEqual(got, seg(kZ, "a", kK, "k1")) {
		t.Errorf("NodeSegment(a, k1) = %v, %v; want zone and rack keys only", got, err)
	}
	if got := topo.SegmentOf("gone", "z"); !reflect.DeepEqual(got, seg(kZ, "z")) {
		t.Errorf("SegmentOf(a zone left the file) = %v, want the zone key only", got)
	}
	if got := topo.NodeLabelKeys(); !reflect.DeepEqual(got, []string{kZ, kK}) {
		t.Errorf("NodeLabelKeys = %v, want zone and rack", got)
	}
	checkCandidates(t, topo, []candidatesCase{
		{"zone key", []*csi.Topology{{Segments: seg(kZ, "b")}}, []int{1}, ""},
		{"zone and rack", []*csi.Topology{{Segments: seg(kZ, "a", kK, "k1")}}, []int{0}, ""},
		{"region and zone beside a zone", []*csi.Topology{{Segments: seg(kR, "r2", kZ, "c")}, {Segments: seg(kZ, "b")}}, []int{1}, ""},
		{"region and zone alone", []*csi.Topology{{Segments: seg(kR, "r1", kZ, "a")}}, nil, "names no zone of this driver"},
		{"region alone", []*csi.Topology{{Segments: seg(kR, "r1")}}, nil, "names no zone of this driver"},
		{"unknown key", []*csi.Topology{{Segments: seg("example.com/x", "a")}}, nil, "this driver uses " + kZ + " and " + kK},
	})
	if _, _, err := topo.FindSegment(seg(kR, "r1", kZ, "b")); err == nil {
		t.Errorf("FindSegment of labels with a region key: no error, want one (the driver reports no region)")
	}
	if z, _, err := topo.FindSegment(seg(kZ, "b")); err != nil || z != 1 {
		t.Errorf("FindSegment(zone b) = %d, %v; want 1", z, err)
	}
}

// TestOmitZone: under keys.omitZone the driver's segments carry the
// region key alone, a requested {region} selects every zone of it, and
// one with the zone key names no zone: skipped beside one that does, an
// ErrUnknownTopology requisite alone. A node's labels still place it in
// its zone.
func TestOmitZone(t *testing.T) {
	topo := mustParse(t, "keys: {omitZone: true, nodeOS: kubernetes.io/os}\nregions:\n- name: r1\n  zones: [{name: a}, {name: b}]\n- name: r2\n  zones: [{name: c}]\n")
	if got := topo.Segment(1); !reflect.DeepEqual(got, seg(kR, "r1")) {
		t.Errorf("Segment(b) = %v, want the region key only", got)
	}
	if got, err := topo.NodeSegment(2, ""); err != nil || !reflect.DeepEqual(got, seg(kR, "r2", kOS, "linux")) {
		t.Errorf("NodeSegment(c) = %v, %v; want the region and OS keys only", got, err)
	}
	if got := topo.SegmentOf("gone", "z"); !reflect.DeepEqual(got, seg(kR, "gone")) {
		t.Errorf("SegmentOf(a zone left the file) = %v, want the region key only", got)
	}
	if got := topo.NodeLabelKeys(); !reflect.DeepEqual(got, []string{kR, kZ}) {
		t.Errorf("NodeLabelKeys = %v, want region and zone (the zone places the node)", got)
	}
	checkCandidates(t, topo, []candidatesCase{
		{"region", []*csi.Topology{{Segments: seg(kR, "r1")}}, []int{0, 1}, ""},
		{"region and OS", []*csi.Topology{{Segments: seg(kR, "r2", kOS, "linux")}}, []int{2}, ""},
		{"region and zone beside a region", []*csi.Topology{{Segments: seg(kR, "r1", kZ, "a")}, {Segments: seg(kR, "r2")}}, []int{2}, ""},
		{"region and zone alone", []*csi.Topology{{Segments: seg(kR, "r1", kZ, "a")}}, nil, "names no zone of this driver"},
		{"zone alone", []*csi.Topology{{Segments: seg(kZ, "a")}}, nil, "names no zone of this driver"},
		{"unknown region", []*csi.Topology{{Segments: seg(kR, "r9")}}, nil, "names no zone of this driver"},
		{"unknown key", []*csi.Topology{{Segments: seg("example.com/x", "a")}}, nil, "this driver uses " + kR + " and " + kK},
	})
	if _, err := topo.Select(seg(kR, "r1", kZ, "b")); err == nil {
		t.Errorf("Select of a segment with the zone key: no error, want one (the driver reports no zone)")
	}
	if z, _, err := topo.FindSegment(seg(kR, "r1", kZ, "b")); err != nil || z != 1 {
		t.Errorf("FindSegment(a node's labels r1, b) = %d, %v; want 1", z, err)
	}
	if _, _, err := topo.FindSegment(seg(kR, "r1")); err == nil {
		t.Errorf("FindSegment(region only) = no error, want one: the region's two zones leave the node's zone open")
	}
}

// candidatesCase is a requisite and the zones Candidates gives for it, or
// the error it names.
type candidatesCase struct {
	name      string
	requisite []*csi.Topology
	want      []int
	wantErr   string
}

func checkCandidates(t *testing.T, topo *world.Topology, cases []candidatesCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := topo.Candidates(&csi.TopologyRequirement{Requisite: tc.requisite})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Candidates = %v, %v; want error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Candidates = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
