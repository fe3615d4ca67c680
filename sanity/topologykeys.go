package sanity

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = describe("Node topology keys [zonepath]", []func(*suite){(*suite).needSnapshotTopology}, func(s *suite) {
	It("uses only NodeGetInfo's topology keys in snapshot topology (KEP-5943: nodeAffinity terms match node labels; NodeGetInfoResponse.accessible_topology keys are the node's labels)", ruleTopologyKeys, func() {
		info := s.d.nodeInfo()
		node := info.GetAccessibleTopology()
		if node == nil {
			Skip("the node reports no accessible_topology")
		}
		vol := s.volume("zp-keys-source", node)
		snap := s.r.MustCreateSnapshot(context.Background(), s.snapshotRequest("zp-keys", vol.GetVolumeId(), &csi.TopologyRequirement{Requisite: []*csi.Topology{node}})).GetSnapshot()
		nodeKeys := keysOf(node)
		for _, k := range keysOf(snap.GetAccessibleTopology()...) {
			Expect(nodeKeys).To(ContainElement(k), "snapshot topology key %q is not among NodeGetInfo's keys %v: no node label can match it", k, nodeKeys)
		}
	})
})
