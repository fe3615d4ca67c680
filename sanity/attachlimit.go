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

var _ = describe("Attach limit [zonepath]", nil, func(s *suite) {
	ctx := context.Background()

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
