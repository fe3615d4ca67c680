package provisioner

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"

	"github.com/zonepath/zonepath/controllers/topology"
)

// ebsNode is a node of an EBS-shaped driver in zone: the vendor zone key,
// topology.kubernetes.io/zone and the OS key, all three from NodeGetInfo.
func ebsNode(name, zone string) fakeNode {
	return labelled(name, vendorZoneKey, zone, zoneKey, zone, osKey, "linux")
}

// ebsNodes are two zones of an EBS-shaped cluster, as ebs-keys' cluster has.
func ebsNodes() []fakeNode {
	return []fakeNode{ebsNode("a-1", "zone-a"), ebsNode("a-2", "zone-a"), ebsNode("c-1", "zone-c")}
}

// unreadNodes fails the test's expectation if read: a segment a side names
// exactly must go out without asking the nodes.
func unreadNodes() DriverNodes {
	return DriverNodes{Driver: "zonepath.csi.dev", CSINodes: failingCSINodes{}, Nodes: corelisters.NewNodeLister(nil)}
}

type failingCSINodes struct{ storagelisters.CSINodeLister }

var errNodesRead = errors.New("the nodes were read")

func (failingCSINodes) List(labels.Selector) ([]*storagev1.CSINode, error) { return nil, errNodesRead }

// TestPlaceable: a merged segment goes out when a side names it exactly or
// a node of the driver carries it; nothing goes out when neither holds
// for any (the EBS-style disjoint class). Every case is checked through
// the real Intersect, as intersection calls it.
func TestPlaceable(t *testing.T) {
	cases := []struct {
		name            string
		class, affinity []v1.TopologySelectorTerm
		nodes           DriverNodes
		want            []v1.TopologySelectorTerm // nil: refuse
		wantDrivers     int
		wantErr         error
	}{
		{name: "ebs-keys, vendor-key class disjoint from the snapshot's zone: nothing (the defect)",
			class: terms(term(vendorZoneKey, "zone-c")), affinity: terms(term(zoneKey, "zone-a")),
			nodes: driverNodes("zonepath.csi.dev", ebsNodes()...), want: nil, wantDrivers: 3},
		{name: "ebs-keys, vendor-key class holding the snapshot's zone: the nodes' combination only",
			class: terms(term(vendorZoneKey, "zone-a", "zone-c")), affinity: terms(term(zoneKey, "zone-a")),
			nodes: driverNodes("zonepath.csi.dev", ebsNodes()...),
			want:  terms(term(zoneKey, "zone-a", vendorZoneKey, "zone-a")), wantDrivers: 3},
		{name: "ebs-keys, vendor-key class, every combination on a node: the merge unchanged",
			class: terms(term(vendorZoneKey, "zone-a")), affinity: terms(term(zoneKey, "zone-a")),
			nodes: driverNodes("zonepath.csi.dev", ebsNodes()...),
			want:  terms(term(zoneKey, "zone-a", vendorZoneKey, "zone-a")), wantDrivers: 3},
		{name: "ebs-keys, class in the snapshot's key (today's personality): unchanged, nodes not read",
			class: terms(term(zoneKey, "zone-a", "zone-c")), affinity: terms(term(zoneKey, "zone-a")),
			nodes: unreadNodes(), want: terms(term(zoneKey, "zone-a")), wantDrivers: -1},
		{name: "class without allowedTopologies: the snapshot's own terms, nodes not read",
			affinity: terms(term(zoneKey, "zone-a")), nodes: unreadNodes(), want: terms(term(zoneKey, "zone-a")), wantDrivers: -1},
		{name: "region and zone combine where nodes are",
			class: terms(term(zoneKey, "a", "b")), affinity: snapR1, nodes: fixtureNodes(), want: r1ZonesAB, wantDrivers: 4},
		{name: "a combination in a zone without nodes is dropped",
			class: terms(term(zoneKey, "a", "e")), affinity: snapR1, nodes: fixtureNodes(), want: r1ZoneAOnly, wantDrivers: 4},
		{name: "a segment the class names exactly stays, even in a zone without nodes (as upstream sends any class)",
			class: terms(term(regionKey, "r1", zoneKey, "a", "e")), affinity: snapR1, nodes: fixtureNodes(),
			want: terms(term(regionKey, "r1", zoneKey, "a", "e")), wantDrivers: -1},
		{name: "a segment the snapshot names exactly stays, even in a zone without nodes",
			class: terms(term(regionKey, "r1")), affinity: terms(term(regionKey, "r1", zoneKey, "e")), nodes: fixtureNodes(),
			want: terms(term(regionKey, "r1", zoneKey, "e")), wantDrivers: -1},
		{name: "labels of a node without the driver carry nothing",
			class: terms(term(vendorZoneKey, "zone-a")), affinity: terms(term(zoneKey, "zone-a")),
			nodes: driverNodes("zonepath.csi.dev", fakeNode{node: ebsNode("a-1", "zone-a").node, drivers: []string{"other.csi.dev"}},
				fakeNode{node: ebsNode("a-2", "zone-a").node}, ebsNode("c-1", "zone-c")),
			want: nil, wantDrivers: 1},
		{name: "no node runs the driver yet",
			class: terms(term(vendorZoneKey, "zone-a")), affinity: terms(term(zoneKey, "zone-a")),
			nodes: driverNodes("zonepath.csi.dev"), want: nil, wantDrivers: 0},
		{name: "no listers (a driver without VOLUME_ACCESSIBILITY_CONSTRAINTS): the merge unchanged",
			class: terms(term(vendorZoneKey, "zone-c")), affinity: terms(term(zoneKey, "zone-a")),
			want: terms(term(zoneKey, "zone-a", vendorZoneKey, "zone-c")), wantDrivers: -1},
		{name: "a lister error is the caller's error",
			class: terms(term(vendorZoneKey, "zone-a")), affinity: terms(term(zoneKey, "zone-a")),
			nodes: unreadNodes(), wantErr: errNodesRead, wantDrivers: -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			merged, ok, err := topology.Intersect(tc.affinity, tc.class)
			if err != nil || !ok {
				t.Fatalf("Intersect = %v, %v, %v; the case needs a non-empty merge", merged, ok, err)
			}
			got, drivers, err := placeable(merged, tc.class, tc.affinity, tc.nodes)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("placeable error %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("placeable = %s, want %s (-want +got):\n%s", formatTerms(got), formatTerms(tc.want), diff)
			}
			if drivers != tc.wantDrivers {
				t.Errorf("driver nodes = %d, want %d", drivers, tc.wantDrivers)
			}
		})
	}
}
