package plugin_test

import (
	"context"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	ctrl "github.com/kubernetes-csi/external-provisioner/v6/pkg/controller"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/plugin"
	"github.com/zonepath/zonepath/driver/world"
)

// twoRegions has zone names unique across its regions, so a StorageClass
// can allow zones of both by name.
const twoRegions = `
regions:
- name: region-1
  zones: [{name: zone-a}, {name: zone-b}]
- name: region-2
  zones: [{name: zone-c}, {name: zone-d}]
`

// twoRegionClass is a StorageClass's allowedTopologies allowing zone-a
// (region-1) and zone-c (region-2) in one term. The external-provisioner
// expands it into the cross product of the values, so the requisite it
// sends also holds {region-1, zone-c} and {region-2, zone-a}: segments
// with the driver's keys that name no zone.
var twoRegionClass = []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{
	{Key: world.DefaultRegionKey, Values: []string{"region-1", "region-2"}},
	{Key: world.DefaultZoneKey, Values: []string{"zone-a", "zone-c"}},
}}}

// upstreamCluster holds the CSINode and Node objects the
// external-provisioner reads for WaitForFirstConsumer claims.
type upstreamCluster struct {
	csiNodes storagelisters.CSINodeLister
	nodes    corelisters.NodeLister
}

func newUpstreamCluster(t *testing.T, nodeZones map[string][2]string) upstreamCluster {
	t.Helper()
	csiNodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for name, rz := range nodeZones {
		labels := map[string]string{world.DefaultRegionKey: rz[0], world.DefaultZoneKey: rz[1], v1.LabelHostname: name}
		err := nodes.Add(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
		if err == nil {
			err = csiNodes.Add(&storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{
				Name: plugin.DefaultName, NodeID: name, TopologyKeys: []string{world.DefaultRegionKey, world.DefaultZoneKey},
			}}}})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return upstreamCluster{csiNodes: storagelisters.NewCSINodeLister(csiNodes), nodes: corelisters.NewNodeLister(nodes)}
}

// requirement is what external-provisioner v6.3.0 puts in CreateVolume
// for a claim of twoRegionClass: Immediate binding when selectedNode is
// empty, WaitForFirstConsumer on selectedNode otherwise (default, not
// strict, topology). Its kube client is unused by this function.
func (c upstreamCluster) requirement(t *testing.T, claim, selectedNode string) *csi.TopologyRequirement {
	t.Helper()
	req, err := ctrl.GenerateAccessibilityRequirements(nil, plugin.DefaultName, types.UID("uid-"+claim), claim, twoRegionClass,
		selectedNode, false, false, c.csiNodes, c.nodes, ctrl.NewInMemoryStore())
	if err != nil {
		t.Fatalf("GenerateAccessibilityRequirements: %v", err)
	}
	// The test is only meaningful if the cross product reached the driver.
	for _, rz := range [][2]string{{"region-2", "zone-a"}, {"region-1", "zone-c"}} {
		noZone := &csi.Topology{Segments: map[string]string{world.DefaultRegionKey: rz[0], world.DefaultZoneKey: rz[1]}}
		if !slices.ContainsFunc(req.GetRequisite(), func(s *csi.Topology) bool { return sameTopology([]*csi.Topology{s}, []*csi.Topology{noZone}) }) {
			t.Fatalf("requisite %s lacks %s: not the cross product this test is about", world.FormatSegments(req.GetRequisite()), world.FormatSegment(noZone.GetSegments()))
		}
	}
	return req
}

// TestUpstreamCrossProductRequirements drives the driver with the
// requirements external-provisioner v6.3.0 builds from a StorageClass
// whose allowedTopologies spans zones of two regions. The requisite then
// holds segments naming no zone; they are valid (the driver's keys,
// well-formed values) and the volume must be provisioned in one of the
// requisite zones that exist (spec.md TopologyRequirement: "the
// provisioned volume MUST be accessible from at least one of the
// requisite topologies"). A restore of a region-wide snapshot must land in
// the allowed zone of the snapshot's region.
func TestUpstreamCrossProductRequirements(t *testing.T) {
	c := newClientIn(t, twoRegions, "")
	cluster := newUpstreamCluster(t, map[string][2]string{"node-a": {"region-1", "zone-a"}, "node-c": {"region-2", "zone-c"}})
	ctx := context.Background()
	// Region-wide snapshots of volumes in zones the class does not allow,
	// as a VolumeSnapshotClass with snapshotScope=region makes them.
	regionWide := map[string]string{plugin.ParamSnapshotScope: "region"}
	snapshotIn := func(z string) string {
		src := c.mustCreateVolume(drivertest.VolumeRequest("source-"+z, gib, &csi.TopologyRequirement{Requisite: zonesIn(z)}))
		resp, err := c.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snap-" + z, SourceVolumeId: src.GetVolumeId(), Parameters: regionWide})
		if err != nil {
			t.Fatalf("CreateSnapshot of a volume in %s: %v", z, err)
		}
		return resp.GetSnapshot().GetSnapshotId()
	}
	inRegion1, inRegion2 := snapshotIn("zone-b"), snapshotIn("zone-d")

	tests := []struct {
		name, node, snapshot string
		want                 []string // the zones the volume may land in
	}{
		{"Immediate, new volume", "", "", []string{"zone-a", "zone-c"}},
		{"WaitForFirstConsumer on zone-a, new volume", "node-a", "", []string{"zone-a"}},
		{"WaitForFirstConsumer on zone-c, new volume", "node-c", "", []string{"zone-c"}},
		{"Immediate, restore of a region-1 snapshot", "", inRegion1, []string{"zone-a"}},
		{"Immediate, restore of a region-2 snapshot", "", inRegion2, []string{"zone-c"}},
		{"WaitForFirstConsumer on zone-a, restore of a region-1 snapshot", "node-a", inRegion1, []string{"zone-a"}},
		{"WaitForFirstConsumer on zone-c, restore of a region-2 snapshot", "node-c", inRegion2, []string{"zone-c"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claim := "pvc-" + string(rune('a'+i))
			r := drivertest.VolumeRequest(claim, gib, cluster.requirement(t, claim, tt.node))
			if tt.snapshot != "" {
				r.VolumeContentSource = restoreRequest("", tt.snapshot).GetVolumeContentSource()
			}
			resp, err := c.CreateVolume(ctx, r)
			if err != nil {
				t.Fatalf("CreateVolume with requisite %s: %v", world.FormatSegments(r.GetAccessibilityRequirements().GetRequisite()), err)
			}
			if err := withinRequisite(resp.GetVolume().GetAccessibleTopology(), zonesIn(tt.want...)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// zonesIn is zones() for the twoRegions world.
func zonesIn(names ...string) []*csi.Topology {
	region := map[string]string{"zone-a": "region-1", "zone-b": "region-1", "zone-c": "region-2", "zone-d": "region-2"}
	out := make([]*csi.Topology, len(names))
	for i, z := range names {
		out[i] = &csi.Topology{Segments: map[string]string{world.DefaultRegionKey: region[z], world.DefaultZoneKey: z}}
	}
	return out
}
