package sanity

import (
	"context"
	"fmt"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	. "github.com/onsi/ginkgo/v2"
)

// Nothing in spec.md ties the keys of Snapshot.accessible_topology to
// NodeGetInfo's: csi.proto says only where the snapshot "is usable from"
// and that "COs MAY use this information ... when scheduling workloads".
// In Kubernetes (KEP-5943) a snapshot's nodeAffinity terms are matched
// against node labels, which NodeGetInfo's keys become, but a node also
// carries labels set by other means (the cloud provider's
// topology.kubernetes.io/zone beside a vendor's zone key, as EBS and PD
// drivers have relied on). A key NodeGetInfo omits is therefore reported,
// naming it, and not failed.
var _ = describe("Node topology keys [zonepath]", []func(*suite){(*suite).needSnapshotTopology}, func(s *suite) {
	It("reports snapshot topology keys NodeGetInfo does not report (KEP-5943: nodeAffinity terms match node labels; spec.md makes no MUST of it: reported as WARN, not failed)", ruleTopologyKeys, func() {
		info := s.d.nodeInfo()
		node := info.GetAccessibleTopology()
		if node == nil {
			Skip("the node reports no accessible_topology")
		}
		vol := s.volume("zp-keys-source", node)
		snap := s.r.MustCreateSnapshot(context.Background(), s.snapshotRequest("zp-keys", vol.GetVolumeId(), &csi.TopologyRequirement{Requisite: []*csi.Topology{node}})).GetSnapshot()
		nodeKeys := keysOf(node)
		for _, k := range keysOf(snap.GetAccessibleTopology()...) {
			if !slices.Contains(nodeKeys, k) {
				warn(choiceMade, "snapshot key not reported by NodeGetInfo", fmt.Sprintf("snapshot topology key %q is not among NodeGetInfo's keys %v: only a node label set by other means (a cloud provider's, an administrator's) can match it", k, nodeKeys))
			}
		}
	})
})
