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

// publishUntilRefused publishes ids to the node in order until one is
// refused, and returns how many succeeded and the refusal (nil: all did).
func (s *suite) publishUntilRefused(ids []string, node string) (int, error) {
	for i, id := range ids {
		if _, err := s.r.ControllerPublishVolume(context.Background(), sanity.MakeControllerPublishVolumeReq(s.sc, id, node)); err != nil {
			return i, err
		}
	}
	return len(ids), nil
}

// attachLimit is the node's max_volumes_per_node, failing a negative one
// and skipping, with the reason, one the test cannot fill.
func (s *suite) attachLimit(info *csi.NodeGetInfoResponse) int64 {
	limit := info.GetMaxVolumesPerNode()
	// csi.proto NodeGetInfoResponse.max_volumes_per_node: "The plugin MUST
	// NOT set negative values here."
	Expect(limit).To(BeNumerically(">=", 0), "NodeGetInfo max_volumes_per_node is %d: \"The plugin MUST NOT set negative values here\" (csi.proto NodeGetInfoResponse)", limit)
	if want := config().AttachLimit; want > 0 {
		Expect(limit).To(Equal(want), "NodeGetInfo max_volumes_per_node")
	}
	if limit == 0 {
		// "If value is not set or zero CO SHALL decide" (csi.proto
		// NodeGetInfoResponse): nothing to hold the controller to.
		Skip("the node reports no max_volumes_per_node")
	}
	if ceiling := config().attachLimitCeiling(); limit > ceiling {
		Skip(fmt.Sprintf("max_volumes_per_node %d is above the ceiling of %d the test fills (it creates max_volumes_per_node + 1 volumes): raise --zonepath.attach-limit-ceiling to test it", limit, ceiling))
	}
	return limit
}

// What the spec binds, and what it leaves open:
//   - max_volumes_per_node is what "controller can publish to the node",
//     read by the CO to decide how many volumes to send (csi.proto
//     NodeGetInfoResponse); no MUST makes ControllerPublishVolume refuse at
//     it. A controller that takes more (an advisory cap: EBS
//     --reserved-volume-attachments, Cinder) is reported, not failed.
//   - What counts against it is not said: a volume attached before the test
//     (a root disk) may, so RESOURCE_EXHAUSTED may come before
//     max_volumes_per_node publishes; reported with how many, not failed.
//   - When the controller refuses because the node is full, "the plugin
//     MUST return the specified gRPC error code", RESOURCE_EXHAUSTED, and
//     "this operation will fail until at least one of the existing attached
//     volumes is detached" (spec.md ControllerPublishVolume Errors, Max
//     volumes attached): another code fails, and so does an unpublish that
//     makes no room.
var _ = describe("Attach limit [zonepath]", nil, func(s *suite) {
	ctx := context.Background()

	It("honours max_volumes_per_node: never negative; a publish refused for a full node is RESOURCE_EXHAUSTED, and an unpublish makes room (csi.proto NodeGetInfoResponse; spec.md ControllerPublishVolume Errors: Max volumes attached)", ruleAttachLimit, func() {
		s.needPublish()
		info := s.d.nodeInfo()
		limit := s.attachLimit(info)
		var ids []string
		for i := int64(0); i <= limit; i++ {
			ids = append(ids, s.volume(fmt.Sprintf("zp-limit-%d", i), info.GetAccessibleTopology()).GetVolumeId())
		}
		published, err := s.publishUntilRefused(ids, info.GetNodeId())
		if err == nil {
			warn(choiceMade, "publishes beyond max_volumes_per_node", fmt.Sprintf("%d publishes to node %s succeeded, max_volumes_per_node %d: the controller takes more than the node advertises (an advisory cap; no MUST binds ControllerPublishVolume to csi.proto NodeGetInfoResponse.max_volumes_per_node), so neither the refusal code nor the room an unpublish makes was seen", published, info.GetNodeId(), limit))
			return
		}
		Expect(code(err)).To(Equal(codes.ResourceExhausted), "publishing volume %d to a node with max_volumes_per_node %d: %v (spec.md ControllerPublishVolume Errors: Max volumes attached MUST be RESOURCE_EXHAUSTED)", published+1, limit, err)
		if published == 0 {
			Skip(fmt.Sprintf("the node took no publish (%v): all of max_volumes_per_node %d is taken before the test, so an unpublish cannot be shown to make room", err, limit))
		}
		if taken := limit - int64(published); taken > 0 {
			warn(choiceMade, "volumes counted before the test", fmt.Sprintf("%d of max_volumes_per_node %d taken before the test: RESOURCE_EXHAUSTED after %d publishes (an attached root disk or volume counts: ControllerPublishVolume Errors, Max volumes attached: \"already attached\")", taken, limit, published))
		}
		_, err = s.r.ControllerUnpublishVolume(ctx, sanity.MakeControllerUnpublishVolumeReq(s.sc, ids[0], info.GetNodeId()))
		Expect(err).NotTo(HaveOccurred(), "ControllerUnpublishVolume")
		_, err = s.r.ControllerPublishVolume(ctx, sanity.MakeControllerPublishVolumeReq(s.sc, ids[published], info.GetNodeId()))
		Expect(err).NotTo(HaveOccurred(), "publishing volume %d after unpublishing one, which must make room", published+1)
	})
})
