package main

import (
	"os"
	"strings"
	"testing"

	"github.com/zonepath/zonepath/e2e/driverext"
)

// The e2e suite's skip reasons come from e2e/driverext: classify them as
// driverext words them today, so that a reworded reason fails here rather
// than the matrix.
func TestClassifyDriverextReasons(t *testing.T) {
	full := func() *driverext.File {
		return &driverext.File{
			SnapshotTopology: true, FeatureGates: driverext.FeatureGates{VolumeSnapshotTopology: true},
			Segments:  []driverext.Segment{{"r": "r1", "z": "a"}, {"r": "r1", "z": "b"}},
			RegionKey: "r",
		}
	}
	noCap := full()
	noCap.SnapshotTopology = false
	gateOff := full()
	gateOff.FeatureGates.VolumeSnapshotTopology = false
	gateOffNoCap := full()
	gateOffNoCap.FeatureGates.VolumeSnapshotTopology = false
	gateOffNoCap.SnapshotTopology = false
	noRegionKey := full()
	noRegionKey.RegionKey = ""
	noTopology := &driverext.File{VolumeTopology: new(bool), FeatureGates: driverext.FeatureGates{VolumeSnapshotTopology: true}}
	oneSegment := full()
	oneSegment.Segments = oneSegment.Segments[:1]
	nodeLocal := full()
	nodeLocal.RegionKey, nodeLocal.NodeLocal = "", true
	withLimits := full()
	withLimits.AttachLimits = &driverext.AttachLimits{MaxVolumesPerNode: 4}
	tests := []struct {
		name, reason, want string
	}{
		{"no capability", noCap.SnapshotTopologyMissing(), "snapshot-topology"},
		{"gate off", gateOff.SnapshotTopologyMissing(), "gate-on"},
		{"gate-off spec, gate on", full().GateOffMissing(), "gate-off"},
		{"gate-off spec, no capability", gateOffNoCap.GateOffMissing(), "snapshot-topology"},
		{"no region-wide parameters", full().RegionWideMissing(), "region-wide-snapshots"},
		{"no unrestricted parameters", full().UnrestrictedMissing(), "global-snapshots"},
		{"no exhaustion", full().ExhaustionMissing(), "exhaustion"},
		{"no attachLimits", full().AttachLimitsMissing(), "attach-limit"},
		{"no attachLimits.lateNode", withLimits.AttachLimitsMissing("lateNode"), "attach-limit"},
		{"no region key", second(noRegionKey.OtherRegion()), "region-key"},
		{"one region", second(full().OtherRegion()), "multi-region"},
		{"no volume topology", noTopology.SegmentsMissing(1), "volume-topology"},
		{"no volume topology, exhaustion", noTopology.ExhaustionMissing(), "volume-topology"},
		{"no volume topology, zone outage", noTopology.ZoneOutageMissing(), "volume-topology"},
		{"no volume topology, unrestricted", noTopology.UnrestrictedMissing(), "volume-topology"},
		{"no volume topology, region", second(noTopology.OtherRegion()), "volume-topology"},
		{"one segment", oneSegment.SegmentsMissing(2), "two-segments"},
		{"node-local, region", second(nodeLocal.OtherRegion()), "node-local"},
		{"node-local, region-wide", nodeLocal.RegionWideMissing(), "node-local"},
		{"node-local, node without the driver", nodeLocal.NodeLocalMissing(), "node-local"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.reason == "" {
				t.Fatal("driverext gave no reason: the set-up does not make it skip")
			}
			if got := classify(e2eSuite, tt.reason); got != tt.want {
				t.Errorf("classify(e2e, %q) = %q, want %q", tt.reason, got, tt.want)
			}
		})
	}
}

func second[A, B any](_ A, b B) B { return b }

// The specs' own Skipf texts (e2e/*_test.go) and the sanity suites':
// zonepath's extensions (sanity/*.go) and upstream csi-sanity v5.6.0's
// (pkg/sanity), as each words them.
func TestClassifyLiteralReasons(t *testing.T) {
	tests := []struct {
		suite, reason, want string
	}{
		{e2eSuite, "driver ext: snapshotTopology is true; scenario 8 is for a driver without SNAPSHOT_ACCESSIBILITY_CONSTRAINTS (snapshotTopology: false)", "capability-off"},
		{e2eSuite, "driver ext: no segment after segments[0] is in its region (topology.kubernetes.io/region=region-1)", "second-zone-in-region"},
		{e2eSuite, "server v1.33.0 is older than v1.34.0, where CSIDriver.spec.preventPodSchedulingIfMissing (KEP-5030, gate VolumeLimitScaling) is on by default", "kep-5030-server"},
		{e2eSuite, "node node-a-1 has no kubernetes.io/hostname label to pin a pod to it", "hostname-label"},
		{e2eSuite, "node node-a-1 has no label topology.kubernetes.io/zone (one of DriverInfo.TopologyKeys): no claim can be provisioned where it is usable there", "topology-labels"},
		{e2eSuite, "every schedulable node is inside [{[{zone In [a]}] []}]: where a pod lands proves nothing", "nodes-elsewhere"},
		{sanitySuite, "SNAPSHOT_ACCESSIBILITY_CONSTRAINTS not advertised: the driver's snapshots are usable from everywhere, no snapshot topology rule applies", "snapshot-topology"},
		{sanitySuite, "SNAPSHOT_ACCESSIBILITY_CONSTRAINTS not advertised", "snapshot-topology"},
		{sanitySuite, "CREATE_DELETE_SNAPSHOT not supported: the driver cuts no snapshots", "snapshots"},
		{sanitySuite, "VOLUME_ACCESSIBILITY_CONSTRAINTS not advertised: volumes carry no topology to compare", "volume-topology"},
		{sanitySuite, "the node reports no accessible_topology", "volume-topology"},
		{sanitySuite, "needs 2 segments the driver can satisfy, 1 known: give more with --zonepath.segment", "two-segments"},
		{sanitySuite, "no exhausted segment configured: give --zonepath.exhausted-segment", "exhaustion"},
		{sanitySuite, "the source volume is accessible from [{region=r1,zone=a} {region=r1,zone=b}], which meets every configured segment: none excludes it; give one more with --zonepath.segment", "segment-outside-source"},
		{e2eSuite, "every segment of the extension file has a node in snapshot zps-1's nodeAffinity [{[{region In [r1]}] []}]: list a segment outside it (another region)", "restore-outside"},
		{sanitySuite, "the snapshot is usable from {region=r1,zone=b} too; configure disjoint segments", "restore-outside"},
		{sanitySuite, "the snapshot has no accessible_topology, so it is usable from everywhere (a global snapshot): no restore lies outside it", "restore-outside"},
		{sanitySuite, "the snapshot is usable from [{region=r1}], which covers every configured segment: configure one outside it (for regional snapshots, a segment in another region)", "restore-outside"},
		{sanitySuite, "the driver advertises neither LIST_SNAPSHOTS nor GET_SNAPSHOT: CreateSnapshot's answer is the only one", "list-snapshots"},
		{sanitySuite, "the node took no publish (rpc error: code = ResourceExhausted desc = full): all of max_volumes_per_node 16 is taken before the test, so an unpublish cannot be shown to make room", "attach-limit"},
		{sanitySuite, "PUBLISH_UNPUBLISH_VOLUME not supported: the controller publishes to no node", "controller-publish"},
		{sanitySuite, "no configured node (nodes in --zonepath.config) lies inside the volume's accessible_topology [{topology.hostpath.csi/node=zone-a}]", "second-node"},
		{sanitySuite, "no configured node (nodes in --zonepath.config) lies outside the volume's accessible_topology [{region=r1}]", "node-outside"},
		{sanitySuite, "the driver creates no volume of a MULTI_NODE_* access mode it can be tested with", "multi-node"},
		{sanitySuite, "the node reports no max_volumes_per_node", "attach-limit"},
		{sanitySuite, "max_volumes_per_node 4096 is above the ceiling of 256 the test fills (it creates max_volumes_per_node + 1 volumes): raise --zonepath.attach-limit-ceiling to test it", "attach-limit"},
		{sanitySuite, "SNAPSHOT_ACCESSIBILITY_CONSTRAINTS not supported", "snapshot-topology"},
		{sanitySuite, "node does not report accessible topology", "volume-topology"},
		{sanitySuite, "ListSnapshots not supported", "list-snapshots"},
		{sanitySuite, "CreateSnapshot not supported", "snapshots"},
		{sanitySuite, "No MaxVolumesPerNode", "attach-limit"},
		{sanitySuite, "testnodevolumeattachlimit not enabled", "csi-sanity-attach-limit"},
		{sanitySuite, "Controller Publish, UnpublishVolume not supported", "controller-publish"},
		{sanitySuite, "ControllerModifyVolume not supported", "modify-volume"},
		{sanitySuite, "Modify volume not supported", "modify-volume"},
		{sanitySuite, "Modify Volume not supported", "modify-volume"},
		{sanitySuite, "ControllerGetVolumeHealth not supported", "volume-health"},
		{sanitySuite, "NodeGetVolumeHealth not supported", "volume-health"},
		{sanitySuite, "NodeGetStorageHealth not supported", "storage-health"},
		{sanitySuite, "GroupControllerService not supported", "split-plugins"},
		{sanitySuite, "VolumeGroupSnapshots not supported", "group-snapshots"},
		{sanitySuite, "ControllerExpandVolume not supported", "expansion"},
		{sanitySuite, "Volume Cloning not supported", "cloning"},
		{sanitySuite, "NodeStageVolume not supported", "node-stage"},
		{sanitySuite, "Controller Service not provided: CreateVolume not supported", "split-plugins"},
		// Explained by nothing: a set-up mistake, a reason no rule knows,
		// one suite's reason in the other, a reason only begun.
		{e2eSuite, "no -zonepath.driver-ext file: the segments and capabilities the specs need are not declared", ""},
		{sanitySuite, "CreateVolume not supported", ""},
		{sanitySuite, "", ""},
		{e2eSuite, "ControllerModifyVolume not supported", ""},
		{sanitySuite, "driver ext: regionKey is not set", ""},
		{e2eSuite, "driver ext: regionKey is not set, and more", ""},
		{e2eSuite, "because driver ext: regionKey is not set", ""},
	}
	for _, tt := range tests {
		if got := classify(tt.suite, tt.reason); got != tt.want {
			t.Errorf("classify(%s, %q) = %q, want %q", tt.suite, tt.reason, got, tt.want)
		}
	}
}

// Every capability a rule or driverLacks gives is in the vocabulary (so a
// lacks: can name it), and every capability of the vocabulary is given
// by a rule (else no lacks: entry could ever explain a skip).
func TestVocabulary(t *testing.T) {
	used := map[string]bool{}
	for _, r := range skipRules {
		if _, ok := capabilities[r.capability]; !ok {
			t.Errorf("rule %q gives %q, which is not in the vocabulary", r.reason, r.capability)
		}
		if r.suite != e2eSuite && r.suite != sanitySuite {
			t.Errorf("rule %q: suite %q", r.reason, r.suite)
		}
		used[r.capability] = true
	}
	for _, c := range driverLacks {
		if _, ok := capabilities[c]; !ok {
			t.Errorf("driverLacks names %q, which is not in the vocabulary", c)
		}
	}
	for c := range capabilities {
		if !used[c] {
			t.Errorf("capability %q: no skip rule gives it", c)
		}
	}
}

// e2e/README.md's table lists every capability, so that a vendor can
// write lacks: from it.
func TestVocabularyDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for c := range capabilities {
		if !strings.Contains(string(readme), "| `"+c+"` |") {
			t.Errorf("e2e/README.md's conformance matrix table has no row for %q", c)
		}
	}
}
