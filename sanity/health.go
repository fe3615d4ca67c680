package sanity

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
)

// Volume health (CSI v1.13, alpha). Upstream csi-sanity only checks that
// the RPCs answer; these tests hold them to the spec's MUSTs. The tests
// that need an unhealthy volume take the storage of the node's segment
// down with Config.OutageCommand and bring it back with RecoverCommand,
// and skip without them.

var (
	ruleHealthCodes      = Label("volume-health", "rule:health-codes")
	ruleHealthList       = Label("volume-health", "rule:health-list")
	ruleHealthEntries    = Label("volume-health", "rule:health-entries")
	ruleHealthConsistent = Label("volume-health", "rule:health-consistent")
)

const (
	getVolumeHealth  = csi.ControllerServiceCapability_RPC_GET_VOLUME_HEALTH
	listVolumeHealth = csi.ControllerServiceCapability_RPC_LIST_VOLUME_HEALTH
	nodeVolumeHealth = csi.NodeServiceCapability_RPC_GET_VOLUME_HEALTH
	// invalidToken is a starting_token no driver issues.
	invalidToken = "zonepath-sanity-not-a-token"
	// listLimit bounds the pages of the ControllerListVolumeHealth walk.
	listLimit = 10000
)

var _ = describe("Volume health [zonepath]", nil, func(s *suite) {
	ctx := context.Background()

	It("answers ControllerGetVolumeHealth: INVALID_ARGUMENT without volume_id, NOT_FOUND for a deleted volume, the volume's own ID for a known one (spec.md ControllerGetVolumeHealthRequest.volume_id REQUIRED; ControllerGetVolumeHealth Errors: Volume does not exist)", ruleHealthCodes, func() {
		s.needControllerCap(getVolumeHealth)
		_, err := s.r.ControllerGetVolumeHealth(ctx, &csi.ControllerGetVolumeHealthRequest{})
		Expect(code(err)).To(Equal(codes.InvalidArgument), "ControllerGetVolumeHealth without volume_id: %v", err)
		vol := s.volume("zp-health-known", nil)
		resp, err := s.r.ControllerGetVolumeHealth(ctx, &csi.ControllerGetVolumeHealthRequest{VolumeId: vol.GetVolumeId()})
		Expect(err).NotTo(HaveOccurred(), "ControllerGetVolumeHealth of a known volume")
		Expect(resp.GetVolumeHealth().GetVolumeId()).To(Equal(vol.GetVolumeId()), "volume_health.volume_id (REQUIRED)")
		// spec.md ControllerGetVolumeHealth: "The Plugin SHOULD return a
		// VolumeHealth entry with empty health_statuses when the volume is
		// known and no adverse health condition exists". A fresh volume may
		// have one (a degraded pool), so this is only reported.
		if st := resp.GetVolumeHealth().GetHealthStatuses(); len(st) > 0 {
			warn(shouldNotMet, "health of a fresh volume", fmt.Sprintf("volume %s, just created, reported %v: either it has an adverse condition or a healthy volume is not reported with empty health_statuses", vol.GetVolumeId(), st))
		}
		gone := s.deletedVolume()
		_, err = s.r.ControllerGetVolumeHealth(ctx, &csi.ControllerGetVolumeHealthRequest{VolumeId: gone})
		Expect(code(err)).To(Equal(codes.NotFound), "ControllerGetVolumeHealth of deleted volume %s: %v", gone, err)
	})

	It("answers NodeGetVolumeHealth: INVALID_ARGUMENT without volume_id, NOT_FOUND for a deleted volume (spec.md NodeGetVolumeHealthRequest.volume_id REQUIRED; NodeGetVolumeHealth Errors: Volume does not exist)", ruleHealthCodes, func() {
		s.needNodeCap(nodeVolumeHealth)
		_, err := s.r.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{})
		Expect(code(err)).To(Equal(codes.InvalidArgument), "NodeGetVolumeHealth without volume_id: %v", err)
		gone := s.deletedVolume()
		_, err = s.r.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: gone})
		Expect(code(err)).To(Equal(codes.NotFound), "NodeGetVolumeHealth of deleted volume %s: %v", gone, err)
	})

	It("pages ControllerListVolumeHealth: at most max_entries, next_token while more follow, every unhealthy volume exactly once, a foreign starting_token ABORTED (spec.md ControllerListVolumeHealthRequest.max_entries; ControllerListVolumeHealth Errors: Invalid starting_token; LIST_VOLUME_HEALTH MUST come with GET_VOLUME_HEALTH)", ruleHealthList, func() {
		s.needControllerCap(listVolumeHealth)
		// spec.md ControllerListVolumeHealth: a plugin with LIST_VOLUME_HEALTH
		// "MUST also have the GET_VOLUME_HEALTH controller capability".
		Expect(s.d.controllerCapability(getVolumeHealth)).To(BeTrue(), "LIST_VOLUME_HEALTH advertised without GET_VOLUME_HEALTH")
		_, err := s.r.ControllerListVolumeHealth(ctx, &csi.ControllerListVolumeHealthRequest{StartingToken: invalidToken})
		Expect(code(err)).To(Equal(codes.Aborted), "ControllerListVolumeHealth with starting_token %q: %v", invalidToken, err)
		cfg := s.needOutage()
		var ids []string
		for i := range 3 {
			ids = append(ids, s.volume(fmt.Sprintf("zp-health-list-%d", i), s.d.nodeInfo().GetAccessibleTopology()).GetVolumeId())
		}
		o := s.beforeOutage(cfg, ids...)
		defer s.recover(o)
		s.outage(o)
		for _, max := range []int32{0, 1, 2} {
			seen := map[string]int{}
			for _, h := range s.walkHealth(max) {
				seen[h.GetVolumeId()]++
			}
			for _, id := range ids {
				Expect(seen[id]).To(Equal(1), "max_entries %d: volume %s, reported unhealthy by ControllerGetVolumeHealth, listed %d times (\"The Plugin SHALL return the health information about all the volumes that it knows about\")", max, id, seen[id])
			}
			for id, n := range seen {
				Expect(n).To(Equal(1), "max_entries %d: volume %s listed %d times with nothing changing", max, id, n)
			}
		}
	})

	It("reports each (status, reason) of a volume at most once, in every view (spec.md VolumeHealthEntry.reason: MUST NOT return multiple entries with the same (status, reason))", ruleHealthEntries, func() {
		s.needControllerCap(getVolumeHealth)
		cfg := s.needOutage()
		id := s.volume("zp-health-entries", s.d.nodeInfo().GetAccessibleTopology()).GetVolumeId()
		o := s.beforeOutage(cfg, id)
		defer s.recover(o)
		s.outage(o)
		views := map[string]*csi.VolumeHealth{"ControllerGetVolumeHealth": s.controllerHealth(id)}
		if s.d.controllerCapability(listVolumeHealth) {
			for _, h := range s.walkHealth(0) {
				if h.GetVolumeId() == id {
					views["ControllerListVolumeHealth"] = h
				}
			}
		}
		if s.d.nodeCapability(nodeVolumeHealth) {
			if resp, err := s.r.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: id}); err == nil {
				views["NodeGetVolumeHealth"] = resp.GetVolumeHealth()
			}
		}
		for view, h := range views {
			seen := map[string]bool{}
			for _, e := range h.GetHealthStatuses() {
				key := e.GetStatus().String() + "/" + e.GetReason()
				Expect(seen[key]).To(BeFalse(), "%s of volume %s reports %s twice: %v", view, id, key, h.GetHealthStatuses())
				Expect(e.GetReason()).NotTo(BeEmpty(), "%s of volume %s: reason is REQUIRED", view, id)
				seen[key] = true
			}
		}
	})

	// The node is asked about a volume staged and published on it, with
	// the paths: NodeGetVolumeHealth "MAY be called for a volume that is
	// not currently staged or published on the node if the CO has
	// recently attempted to stage or publish the volume on the node", and
	// NOT_FOUND says the volume "does not exist on the node", the right
	// answer for one never put there. The node's view of the outage is
	// no MUST: it is judged by whether the node, too, reports a condition
	// the volume did not have before the outage (nodeEcho), and one that
	// does not, or fails the call while its storage is down, is reported
	// as a WARN.
	It("reports the health of a volume staged and published on the node, and what the node says when the controller reports the outage (spec.md NodeGetVolumeHealthResponse.volume_health REQUIRED; NodeGetVolumeHealth Errors: NOT_FOUND only for a volume that does not exist on the node; VolumeHealthErrorType: the CO MAY interpret INACCESSIBLE, the node's echo reported as WARN)", ruleHealthConsistent, func() {
		s.needControllerCap(getVolumeHealth)
		s.needNodeCap(nodeVolumeHealth)
		cfg := s.needOutage()
		id := s.volume("zp-health-consistent", s.d.nodeInfo().GetAccessibleTopology()).GetVolumeId()
		req := s.onNode(id)
		nodeBefore, err := s.r.NodeGetVolumeHealth(ctx, req)
		Expect(err).NotTo(HaveOccurred(), "NodeGetVolumeHealth of volume %s, staged and published on the node, before the outage", id)
		Expect(nodeBefore.GetVolumeHealth().GetVolumeId()).To(Equal(id), "NodeGetVolumeHealthResponse.volume_health (REQUIRED) of volume %s", id)
		o := s.beforeOutage(cfg, id)
		defer s.recover(o)
		s.outage(o)
		resp, err := s.r.NodeGetVolumeHealth(ctx, req)
		if err != nil {
			warn(choiceMade, "node health during the outage", fmt.Sprintf("the controller reports volume %s %v; NodeGetVolumeHealth on the node of its segment answers %v", id, o.during[id], err))
			return
		}
		Expect(resp.GetVolumeHealth().GetVolumeId()).To(Equal(id), "NodeGetVolumeHealthResponse.volume_health (REQUIRED) of volume %s during the outage", id)
		node := added(resp.GetVolumeHealth(), conditionsOf(nodeBefore.GetVolumeHealth()))
		if missing := nodeEcho(o.during[id], node); missing != "" {
			warn(choiceMade, "node does not echo "+missing, fmt.Sprintf("during the outage the controller reports volume %s %v, the node of its segment %v (new since before the outage: %v); the CO MAY take a controller's INACCESSIBLE as not accessible from all nodes, a node's as not from that node", id, o.during[id], conditionsOf(resp.GetVolumeHealth()), node))
		}
	})
})

// nodeEcho is what the node's new conditions during an outage (node) do
// not echo of the controller's (controller), "" when they echo it: any
// new condition echoes one that is not INACCESSIBLE (a node of the zone
// that is down may well find a volume DEGRADED elsewhere INACCESSIBLE
// from there, csi.proto VolumeHealthErrorType INACCESSIBLE: "not being
// accessible from that node"); a controller's INACCESSIBLE, which the CO
// "MAY interpret ... as volume not being accessible from all nodes in
// the cluster", is echoed only by the node's INACCESSIBLE.
func nodeEcho(controller, node []condition) string {
	inaccessible := func(c condition) bool { return c.status == csi.VolumeHealthErrorType_INACCESSIBLE }
	switch {
	case slices.ContainsFunc(controller, inaccessible) && !slices.ContainsFunc(node, inaccessible):
		return csi.VolumeHealthErrorType_INACCESSIBLE.String()
	case len(node) == 0:
		return statuses(controller)
	}
	return ""
}

// statuses names the statuses of cs, each once, in their order.
func statuses(cs []condition) string {
	var names []string
	for _, c := range cs {
		if !slices.Contains(names, c.status.String()) {
			names = append(names, c.status.String())
		}
	}
	return strings.Join(names, ", ")
}

func (s *suite) needControllerCap(c csi.ControllerServiceCapability_RPC_Type) {
	if !s.d.controllerCapability(c) {
		Skip(c.String() + " not supported")
	}
}

func (s *suite) needNodeCap(c csi.NodeServiceCapability_RPC_Type) {
	if !s.d.nodeCapability(c) {
		Skip("node " + c.String() + " not supported")
	}
}

// onNode puts volume id on the node as a CO does before it asks the
// node about it: ControllerPublishVolume when the controller publishes,
// NodeStageVolume when the node stages, and NodePublishVolume, at the
// paths the upstream cleanup unpublishes and unstages. It returns the
// NodeGetVolumeHealth request naming those paths.
func (s *suite) onNode(id string) *csi.NodeGetVolumeHealthRequest {
	GinkgoHelper()
	return s.onNodeAt(id, s.sc.TargetPath+"/target")
}

// onNodeAt is onNode publishing at target, whose parent must exist: a
// target other than the one upstream's cleanup unpublishes is for the
// caller to unpublish.
func (s *suite) onNodeAt(id, target string) *csi.NodeGetVolumeHealthRequest {
	GinkgoHelper()
	ctx := context.Background()
	node := s.d.nodeInfo().GetNodeId()
	capability := sanity.TestVolumeCapabilityWithAccessType(s.sc, csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)
	var publishContext map[string]string
	if s.d.controllerCapability(publishUnpublish) {
		req := sanity.MakeControllerPublishVolumeReq(s.sc, id, node)
		req.VolumeCapability = capability
		publishContext = s.r.MustControllerPublishVolume(ctx, req).GetPublishContext()
	}
	req := &csi.NodeGetVolumeHealthRequest{VolumeId: id, VolumePublishPath: target}
	if s.d.nodeCapability(csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME) {
		req.StagingTargetPath = s.sc.StagingPath
		_, err := s.r.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: req.StagingTargetPath,
			VolumeCapability: capability, PublishContext: publishContext, Secrets: s.sc.Secrets.NodeStageVolumeSecret})
		Expect(err).NotTo(HaveOccurred(), "NodeStageVolume %s", id)
	}
	_, err := s.r.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: req.StagingTargetPath, TargetPath: req.VolumePublishPath,
		VolumeCapability: capability, PublishContext: publishContext, Secrets: s.sc.Secrets.NodePublishVolumeSecret})
	Expect(err).NotTo(HaveOccurred(), "NodePublishVolume %s", id)
	return req
}

// needOutage returns the configuration of the outage commands, or skips.
func (s *suite) needOutage() Config {
	cfg := config()
	if cfg.OutageCommand == "" || cfg.RecoverCommand == "" {
		Skip("no outageCommand and recoverCommand configured: no volume can be made unhealthy")
	}
	s.needControllerCap(getVolumeHealth)
	return cfg
}

// deletedVolume is the ID of a volume the driver made and deleted: one
// it must know to be gone, whatever its IDs look like.
func (s *suite) deletedVolume() string {
	vol := s.volume("zp-health-deleted", nil)
	_, err := s.r.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: vol.GetVolumeId(), Secrets: s.sc.Secrets.DeleteVolumeSecret})
	Expect(err).NotTo(HaveOccurred(), "DeleteVolume")
	return vol.GetVolumeId()
}

func (s *suite) controllerHealth(id string) *csi.VolumeHealth {
	resp, err := s.r.ControllerGetVolumeHealth(context.Background(), &csi.ControllerGetVolumeHealthRequest{VolumeId: id})
	Expect(err).NotTo(HaveOccurred(), "ControllerGetVolumeHealth %s", id)
	return resp.GetVolumeHealth()
}

// walkHealth lists every page of ControllerListVolumeHealth with max
// entries each, checking the pages as it goes.
func (s *suite) walkHealth(max int32) []*csi.VolumeHealth {
	GinkgoHelper()
	var all []*csi.VolumeHealth
	token := ""
	for page := 0; ; page++ {
		Expect(page).To(BeNumerically("<", listLimit), "ControllerListVolumeHealth: more than %d pages", listLimit)
		resp, err := s.r.ControllerListVolumeHealth(context.Background(), &csi.ControllerListVolumeHealthRequest{MaxEntries: max, StartingToken: token})
		Expect(err).NotTo(HaveOccurred(), "ControllerListVolumeHealth page %d (max_entries %d)", page, max)
		if max > 0 {
			Expect(len(resp.GetEntries())).To(BeNumerically("<=", max), "page %d: %d entries, max_entries %d (\"the Plugin MUST NOT return more entries than this number\")", page, len(resp.GetEntries()), max)
		}
		all = append(all, resp.GetEntries()...)
		// spec.md ControllerListVolumeHealth: "The Plugin SHOULD omit
		// volumes with no known adverse health condition".
		for _, h := range resp.GetEntries() {
			if len(h.GetHealthStatuses()) == 0 {
				warn(shouldNotMet, "healthy volume listed", fmt.Sprintf("ControllerListVolumeHealth lists volume %s with no adverse condition", h.GetVolumeId()))
			}
		}
		if token = resp.GetNextToken(); token == "" {
			return all
		}
	}
}
