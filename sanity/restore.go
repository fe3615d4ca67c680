package sanity

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
)

var _ = sanity.DescribeSanity("Restore from a topology-constrained snapshot [zonepath]", func(sc *sanity.TestContext) {
	var s *snapshotSuite
	ctx := context.Background()
	BeforeEach(func() {
		s = newSnapshotSuite(sc)
		s.needSnapshotTopology()
		if !s.d.pluginCapability(volumeTopologyCap) {
			Skip("VOLUME_ACCESSIBILITY_CONSTRAINTS not advertised: volumes carry no topology to compare")
		}
	})
	AfterEach(func() { s.r.Cleanup() })

	// snapshotIn cuts a snapshot of a volume placed in seg, constrained to seg.
	snapshotIn := func(seg *csi.Topology) *csi.Snapshot {
		vol := s.volume("zp-restore-source", seg)
		Expect(within(vol.GetAccessibleTopology(), []*csi.Topology{seg})).To(Succeed(), "source volume placed outside its requisite")
		req := s.snapshotRequest("zp-restore-snapshot", vol.GetVolumeId(), &csi.TopologyRequirement{Requisite: []*csi.Topology{seg}})
		snap := s.r.MustCreateSnapshot(ctx, req).GetSnapshot()
		Expect(snap.GetAccessibleTopology()).NotTo(BeEmpty(), "snapshot constrained to %s reports no accessible_topology", format(seg))
		return snap
	}
	restoreRequest := func(snap *csi.Snapshot, requisite []*csi.Topology) *csi.CreateVolumeRequest {
		req := sanity.MakeCreateVolumeReq(s.sc, sanity.UniqueString("zp-restored"))
		req.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.GetSnapshotId()}}}
		req.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: requisite}
		return req
	}

	It("restores inside the snapshot's topology (csi.proto Snapshot.accessible_topology: volumes created from the snapshot are accessible from there)", ruleRestore, func() {
		segs := s.needSegments(1)
		snap := snapshotIn(segs[0])
		vol := s.r.MustCreateVolume(ctx, restoreRequest(snap, snap.GetAccessibleTopology())).GetVolume()
		Expect(within(vol.GetAccessibleTopology(), snap.GetAccessibleTopology())).To(Succeed(), "restored volume placed outside the snapshot's topology")
	})

	It("refuses a restore whose requisite lies entirely outside the snapshot's topology with RESOURCE_EXHAUSTED (spec.md CreateVolume Errors: Unable to provision in accessible_topology)", ruleRestore, func() {
		segs := s.needSegments(2)
		snap := snapshotIn(segs[0])
		if within([]*csi.Topology{segs[1]}, snap.GetAccessibleTopology()) == nil {
			Skip("the snapshot is usable from " + format(segs[1]) + " too; configure disjoint segments")
		}
		resp, err := s.r.CreateVolume(ctx, restoreRequest(snap, segs[1:2]))
		Expect(code(err)).To(Equal(codes.ResourceExhausted), "restore of a snapshot usable from %s into %s: got %v (volume %v)",
			formatAll(snap.GetAccessibleTopology()), format(segs[1]), err, resp.GetVolume())
	})
})
