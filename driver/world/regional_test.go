package world_test

import (
	"reflect"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/zonepath/zonepath/driver/world"
)

// TestParseVolumeReplicas: volumes.replicas is absent (1), or a count of
// zones every region holds; 0, a negative count, more than a region's
// zones, or replicas in "one region" of a driver that reports none stop
// the driver at start, naming the field.
func TestParseVolumeReplicas(t *testing.T) {
	const regions = "regions:\n- name: r1\n  zones: [{name: a}, {name: b}, {name: c}]\n- name: r2\n  zones: [{name: d}, {name: e}]\n"
	tests := []struct {
		name, doc string
		want      int
		wantErr   string
	}{
		{"absent", regions, 1, ""},
		{"one", "volumes: {replicas: 1}\n" + regions, 1, ""},
		{"two", "volumes: {replicas: 2}\n" + regions, 2, ""},
		{"one under omitRegion", "keys: {omitRegion: true}\nvolumes: {replicas: 1}\n" + regions, 1, ""},
		{"zero", "volumes: {replicas: 0}\n" + regions, 0, "volumes.replicas: 0 must be at least 1"},
		{"negative", "volumes: {replicas: -2}\n" + regions, 0, "volumes.replicas: -2 must be at least 1"},
		{"more than a region's zones", "volumes: {replicas: 3}\n" + regions, 0, "volumes.replicas: 3 is more than the 2 zones of region r2"},
		{"two under omitRegion", "keys: {omitRegion: true}\nvolumes: {replicas: 2}\n" + regions, 0, "keys.omitRegion reports no region"},
		{"not a number", "volumes: {replicas: two}\n" + regions, 0, "replicas"},
		{"unknown field", "volumes: {copies: 2}\n" + regions, 0, `unknown field "copies"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topo := parseOrRefuse(t, tc.doc, tc.wantErr)
			if topo != nil && topo.VolumeReplicas != tc.want {
				t.Fatalf("VolumeReplicas = %d, want %d", topo.VolumeReplicas, tc.want)
			}
		})
	}
}

const (
	kNodeZone = "topology.zonepath.csi.dev/zone"
	kOS       = "kubernetes.io/os"
)

// TestParseNodeKeys: keys.nodeZone and keys.nodeOS are label keys
// distinct from every other key; anything else stops the driver at start.
func TestParseNodeKeys(t *testing.T) {
	const oneZone = "regions:\n- name: r1\n  zones: [{name: a}]\n"
	tests := []struct {
		name, keys, wantErr string
	}{
		{"both", "{nodeZone: " + kNodeZone + ", nodeOS: " + kOS + "}", ""},
		{"zone only", "{nodeZone: " + kNodeZone + "}", ""},
		{"os only, no region", "{omitRegion: true, nodeOS: " + kOS + "}", ""},
		{"nodeZone is the zone key", "{nodeZone: " + kZ + "}", "keys.nodeZone: \"" + kZ + "\" is already keys.zone"},
		{"nodeOS is nodeZone", "{nodeZone: " + kOS + ", nodeOS: " + kOS + "}", "keys.nodeOS: \"" + kOS + "\" is already keys.nodeZone"},
		{"not a label key", "{nodeOS: \"a b\"}", "keys.nodeOS: \"a b\" is not a label key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parseOrRefuse(t, "keys: "+tc.keys+"\n"+oneZone, tc.wantErr)
		})
	}
}

// TestNodeKeys: NodeGetInfo's segment carries the node-only keys beside
// the zone key while volumes' segments do not, and a requested segment
// naming them selects what a node carrying them is in (the CO sends them
// back: CreateVolumeRequest.accessibility_requirements are built from
// NodeGetInfo's keys).
func TestNodeKeys(t *testing.T) {
	topo := mustParse(t, "keys: {omitRegion: true, nodeZone: "+kNodeZone+", nodeOS: "+kOS+"}\nregions:\n- name: r1\n  zones: [{name: a}, {name: b}]\n")
	if got, err := topo.NodeSegment(1, ""); err != nil || !reflect.DeepEqual(got, seg(kZ, "b", kNodeZone, "b", kOS, world.NodeOSValue)) {
		t.Fatalf("NodeSegment(b) = %v, %v; want the zone key, the vendor zone key and the OS key", got, err)
	}
	if got := topo.Segment(1); !reflect.DeepEqual(got, seg(kZ, "b")) {
		t.Fatalf("Segment(b) = %v, want the zone key only", got)
	}
	checkCandidates(t, topo, []candidatesCase{
		{"a node's whole segment", []*csi.Topology{{Segments: seg(kZ, "b", kNodeZone, "b", kOS, "linux")}}, []int{1}, ""},
		{"vendor zone key alone", []*csi.Topology{{Segments: seg(kNodeZone, "a")}}, []int{0}, ""},
		{"OS key alone", []*csi.Topology{{Segments: seg(kOS, "linux")}}, []int{0, 1}, ""},
		{"keys that disagree", []*csi.Topology{{Segments: seg(kZ, "a", kNodeZone, "b")}}, nil, "names no zone of this driver"},
		{"another OS beside a linux segment", []*csi.Topology{{Segments: seg(kZ, "a", kOS, "windows")}, {Segments: seg(kZ, "b", kOS, "linux")}}, []int{1}, ""},
		{"another OS alone", []*csi.Topology{{Segments: seg(kZ, "a", kOS, "windows")}}, nil, "names no zone of this driver"},
		{"unknown key", []*csi.Topology{{Segments: seg("example.com/x", "a")}}, nil, "and on nodes " + kNodeZone + " and " + kOS},
	})
	if z, _, err := topo.FindSegment(seg(kZ, "b", kNodeZone, "b", kOS, "linux")); err != nil || z != 1 {
		t.Errorf("FindSegment(a node's labels) = %d, %v; want zone b", z, err)
	}
}
