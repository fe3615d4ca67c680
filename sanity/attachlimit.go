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

// The spec does not say what counts against max_volumes_per_node: a
// driver may count volumes attached before the test (a root disk), so the
// limit may be reached before max_volumes_per_node publishes. What fails
// is more publishes than the limit, or an unpublish that does not make
// room ("this operation will fail until at least one of the existing
// attached volumes is detached from the node").
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
		published, err := s.publishUntilRefused(ids, info.GetNodeId())
		Expect(published).To(BeNumerically("<=", limit), "%d publishes to a node with max_volumes_per_node %d succeeded", published, limit)
		Expect(code(err)).To(Equal(codes.ResourceExhausted), "publishing volume %d to a node with max_volumes_per_node %d: %v", published+1, limit, err)
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
