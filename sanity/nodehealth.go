package sanity

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// The node's side of health (CSI v1.13, alpha): the paths
// NodeGetVolumeHealth must take, and NodeGetStorageHealth, which upstream
// csi-sanity only calls.

var (
	ruleHealthPaths   = Label("volume-health", "rule:health-paths")
	ruleStorageHealth = Label("volume-health", "rule:storage-health")
)

const (
	nodeStorageHealth = csi.NodeServiceCapability_RPC_GET_STORAGE_HEALTH
	// minPathLength is the path length NodeGetVolumeHealth MUST accept
	// (NodeGetVolumeHealthRequest.volume_publish_path: "at a minimum, SP
	// MUST accept a max path length of at least 128 bytes").
	minPathLength = 128
)

var _ = describe("Node health [zonepath]", nil, func(s *suite) {
	ctx := context.Background()

	It("answers NodeGetVolumeHealth for a volume published at a target path of 128 bytes (spec.md NodeGetVolumeHealthRequest.volume_publish_path: \"SP MUST accept a max path length of at least 128 bytes\")", ruleHealthPaths, func() {
		s.needNodeCap(nodeVolumeHealth)
		id := s.volume("zp-health-path", s.d.nodeInfo().GetAccessibleTopology()).GetVolumeId()
		target := longPath(s.sc.TargetPath, minPathLength)
		req := s.onNodeAt(id, target)
		// Upstream's cleanup unpublishes only its own target path.
		defer func() {
			_, err := s.r.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target})
			Expect(err).NotTo(HaveOccurred(), "NodeUnpublishVolume %s at %s", id, target)
		}()
		resp, err := s.r.NodeGetVolumeHealth(ctx, req)
		Expect(err).NotTo(HaveOccurred(), "NodeGetVolumeHealth of volume %s, published at volume_publish_path %q (%d bytes; the SP MUST accept at least %d)", id, target, len(target), minPathLength)
		Expect(resp.GetVolumeHealth().GetVolumeId()).To(Equal(id), "NodeGetVolumeHealthResponse.volume_health (REQUIRED) of volume %s", id)
	})

	// Storage health is optional: with the capability the call must
	// answer, and its entries must be unique. A node with healthy storage
	// has none to repeat, so with the outage commands the test also asks
	// while the storage of the node's segment is down; whether the node
	// then reports a condition is its own to say (the RPC "MAY be called
	// by the CO"; backend_health is OPTIONAL), and one that does not is
	// reported.
	It("answers NodeGetStorageHealth with the capability, each (status, reason, volume_capability) once, also during an outage of the node's segment (spec.md NodeGetStorageHealth: \"A Node Plugin MUST implement this RPC call if it has GET_STORAGE_HEALTH\"; StorageBackendHealth.reason: MUST NOT return multiple messages with the same combination)", ruleStorageHealth, func() {
		s.needNodeCap(nodeStorageHealth)
		resp, err := s.r.NodeGetStorageHealth(ctx, &csi.NodeGetStorageHealthRequest{})
		Expect(code(err)).NotTo(Equal(codes.Unimplemented), "NodeGetStorageHealth: the node advertises GET_STORAGE_HEALTH, so it \"MUST implement this RPC call\"")
		Expect(err).NotTo(HaveOccurred(), "NodeGetStorageHealth with nothing down")
		uniqueBackends(resp.GetBackendHealth(), "with nothing down")
		cfg := config()
		if cfg.OutageCommand == "" || cfg.RecoverCommand == "" || !s.d.controllerCapability(getVolumeHealth) {
			return // nothing can be made unhealthy, or seen to be
		}
		id := s.volume("zp-storage-health", s.d.nodeInfo().GetAccessibleTopology()).GetVolumeId()
		o := s.beforeOutage(cfg, id)
		defer s.recover(o)
		s.outage(o)
		var last []*csi.NodeGetStorageHealthResponse_StorageBackendHealth
		deadline := time.Now().Add(cfg.outageTimeout())
		for len(last) == 0 && time.Now().Before(deadline) {
			resp, err := s.r.NodeGetStorageHealth(ctx, &csi.NodeGetStorageHealthRequest{})
			if err != nil {
				warn(choiceMade, "node storage health during the outage", fmt.Sprintf("NodeGetStorageHealth on the node of the segment that is down answers %v", err))
				return
			}
			last = resp.GetBackendHealth()
			uniqueBackends(last, "during the outage")
			time.Sleep(100 * time.Millisecond)
		}
		if len(last) == 0 {
			warn(choiceMade, "node storage health during the outage", fmt.Sprintf("NodeGetStorageHealth reports no condition within %s of the outage of the node's segment, while the controller reports volume %s %v", cfg.outageTimeout(), id, o.during[id]))
		}
	})
})

// longPath is a path under dir of at least n bytes: dir and one entry
// whose name pads it to n (one entry, since the CO only ensures that a
// target path's parent exists).
func longPath(dir string, n int) string {
	name := "zp-health-path-"
	if pad := n - len(dir) - 1 - len(name); pad > 0 {
		name += strings.Repeat("x", pad)
	}
	return filepath.Join(dir, name)
}

// uniqueBackends fails when two entries have the same (status, reason,
// volume_capability) (csi.proto StorageBackendHealth.reason: "The Plugin
// MUST NOT return multiple StorageBackendHealth messages with the same
// (status, reason, volume_capability) combination").
func uniqueBackends(entries []*csi.NodeGetStorageHealthResponse_StorageBackendHealth, when string) {
	GinkgoHelper()
	for i, a := range entries {
		for _, b := range entries[i+1:] {
			same := a.GetStatus() == b.GetStatus() && a.GetReason() == b.GetReason() && proto.Equal(a.GetVolumeCapability(), b.GetVolumeCapability())
			Expect(same).To(BeFalse(), "NodeGetStorageHealth %s reports (%s, %q, %v) twice: %v", when, a.GetStatus(), a.GetReason(), a.GetVolumeCapability(), entries)
		}
	}
}
