package sanity

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
)

var _ = sanity.DescribeSanity("Attach limit [zonepath]", func(sc *sanity.TestContext) {
	var s *snapshotSuite
	ctx := context.Background()
	BeforeEach(func() { s = newSnapshotSuite(sc) })
	AfterEach(func() { s.r.Cleanup() })

	It("honours max_volumes_per_node: one more publish is RESOURCE_EXHAUSTED, and an unpublish makes room (spec.md ControllerPublishVolume Errors: Max volumes attached)", ruleAttachLimit, func() {
		if !s.d.controllerCapability(csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME) {
			Skip("PUBLISH_UNPUBLISH_VOLUME not supported: the controller attaches nothing")
		}
		info := s.d.nodeInfo()
		limit := info.GetMaxVolumesPerNode()
		if want := config().AttachLimit; want > 0 {
			Expect(limit).To(Equal(want), "NodeGetInfo max_volumes_per_node")
		}
		if limit <= 0 {
			Skip("the node reports no max_volumes_per_node")
		}
		if limit > 64 {
			Skip(fmt.Sprintf("max_volumes_per_node %d is too large to fill in a test", limit))
		}
		var ids []string
		for i := int64(0); i <= limit; i++ {
			ids = append(ids, s.volume(fmt.Sprintf("zp-limit-%d", i), info.GetAccessibleTopology()).GetVolumeId())
		}
		for _, id := range ids[:limit] {
			s.r.MustControllerPublishVolume(ctx, sanity.MakeControllerPublishVolumeReq(s.sc, id, info.GetNodeId()))
		}
		_, err := s.r.ControllerPublishVolume(ctx, sanity.MakeControllerPublishVolumeReq(s.sc, ids[limit], info.GetNodeId()))
		Expect(code(err)).To(Equal(codes.ResourceExhausted), "publishing volume %d to a node with max_volumes_per_node %d: %v", limit+1, limit, err)
		_, err = s.r.ControllerUnpublishVolume(ctx, sanity.MakeControllerUnpublishVolumeReq(s.sc, ids[0], info.GetNodeId()))
		Expect(err).NotTo(HaveOccurred(), "ControllerUnpublishVolume")
		_, err = s.r.ControllerPublishVolume(ctx, sanity.MakeControllerPublishVolumeReq(s.sc, ids[limit], info.GetNodeId()))
		Expect(err).NotTo(HaveOccurred(), "publishing after an unpublish made room")
	})
})

var _ = sanity.DescribeSanity("Node topology keys [zonepath]", func(sc *sanity.TestContext) {
	var s *snapshotSuite
	BeforeEach(func() {
		s = newSnapshotSuite(sc)
		s.needSnapshotTopology()
	})
	AfterEach(func() { s.r.Cleanup() })

	It("uses only NodeGetInfo's topology keys in snapshot topology (KEP-5943: nodeAffinity terms match node labels; NodeGetInfoResponse.accessible_topology keys are the node's labels)", ruleTopologyKeys, func() {
		info := s.d.nodeInfo()
		node := info.GetAccessibleTopology()
		if node == nil {
			Skip("the node reports no accessible_topology")
		}
		vol := s.volume("zp-keys-source", node)
		snap := s.r.MustCreateSnapshot(context.Background(), s.snapshotRequest("zp-keys", vol.GetVolumeId(), &csi.TopologyRequirement{Requisite: []*csi.Topology{node}})).GetSnapshot()
		nodeKeys := map[string]bool{}
		for _, k := range keysOf(node) {
			nodeKeys[k] = true
		}
		for _, k := range keysOf(snap.GetAccessibleTopology()...) {
			Expect(nodeKeys).To(HaveKey(k), "snapshot topology key %q is not among NodeGetInfo's keys %v: no node label can match it", k, keysOf(node))
		}
	})
})
