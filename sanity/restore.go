package sanity

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
)

var _ = describe("Restore from a topology-constrained snapshot [zonepath]", []func(*suite){(*suite).needSnapshotTopology, (*suite).needVolumeTopology}, func(s *suite) {
	ctx := context.Background()

	// snapshotIn cuts a snapshot of a volume placed in seg, constrained to seg.
	snapshotIn := func(seg *csi.Topology) *csi.Snapshot {
		vol := s.volume("zp-restore-source", seg)
		Expect(placedIn("source volume", vol.GetAccessibleTopology(), []*csi.Topology{seg})).To(Succeed(), "source volume placed outside its requisite")
		req := s.snapshotRequest("zp-restore-snapshot", vol.GetVolumeId(), &csi.TopologyRequirement{Requisite: []*csi.Topology{seg}})
		return s.readySnapshot(req)
	}
	// restoreRequest restores snap, within requisite when one is given.
	restoreRequest := func(name string, snap *csi.Snapshot, requisite []*csi.Topology) *csi.CreateVolumeRequest {
		req := sanity.MakeCreateVolumeReq(s.sc, sanity.UniqueString(name))
		req.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.GetSnapshotId()}}}
		if len(requisite) > 0 {
			req.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: requisite}
		}
		return req
	}
	// restoresWhereClaimed restores snap into every configured segment its
	// accessible_topology claims, so a topology wider than the CO asked
	// for (allowed, TopologyRequirement x > n) must be true. csi.proto
	// Snapshot.accessible_topology: "A snapshot is usable from a location
	// if volumes created from that snapshot are guaranteed to be
	// accessible from that location."
	restoresWhereClaimed := func(name string, snap *csi.Snapshot) {
		topo := snap.GetAccessibleTopology()
		for i, seg := range s.d.segments() {
			if !usableFrom(topo, seg) {
				continue
			}
			// A name per segment: the same name with another requisite
			// is the idempotency table's business, not this test's.
			resp, err := s.r.CreateVolume(ctx, restoreRequest(fmt.Sprintf("%s-%d", name, i), snap, []*csi.Topology{seg}))
			Expect(err).NotTo(HaveOccurred(), "restore into %s, which the snapshot claims to be usable from: %s", format(seg), usableText(topo))
			Expect(placedIn("restore into "+format(seg), resp.GetVolume().GetAccessibleTopology(), []*csi.Topology{seg})).To(Succeed(), "restore placed outside its requisite")
		}
	}

	It("restores inside the snapshot's topology, in every configured segment it claims (csi.proto Snapshot.accessible_topology: volumes created from the snapshot are guaranteed to be accessible from there)", ruleRestore, func() {
		segs := s.needSegments(1)
		snap := snapshotIn(segs[0])
		if topo := snap.GetAccessibleTopology(); len(topo) > 0 {
			vol := s.r.MustCreateVolume(ctx, restoreRequest("zp-restored", snap, topo)).GetVolume()
			Expect(placedIn("restore into the snapshot's accessible_topology", vol.GetAccessibleTopology(), topo)).To(Succeed(), "restored volume placed outside the snapshot's topology")
		}
		restoresWhereClaimed("zp-restored", snap)
	})

	// The requisite is the first configured segment the snapshot does not
	// claim: for a regional snapshot, a segment in another region; a
	// snapshot claiming every configured segment (a global one, without
	// accessible_topology) leaves no restore outside it to refuse.
	// spec.md CreateVolume Errors give two rows that fit: RESOURCE_EXHAUSTED,
	// "Unable to provision in accessible_topology ... although the
	// accessible_topology field is valid, a new volume can not be
	// provisioned with the specified topology constraints", and
	// INVALID_ARGUMENT, "Source incompatible or not supported ... this
	// code MUST also be used to indicate when plugin supporting
	// CREATE_DELETE_VOLUME cannot create a volume from the requested
	// source". Both are accepted; INVALID_ARGUMENT, which zonepath does
	// not answer, is reported as the choice seen. OK (a volume placed
	// anyway) or any other code fails.
	It("refuses a restore whose requisite lies entirely outside the snapshot's topology with RESOURCE_EXHAUSTED or INVALID_ARGUMENT (spec.md CreateVolume Errors: Unable to provision in accessible_topology; Source incompatible or not supported)", ruleRestore, func() {
		segs := s.needSegments(2)
		snap := snapshotIn(segs[0])
		topo := snap.GetAccessibleTopology()
		i := slices.IndexFunc(segs, func(seg *csi.Topology) bool { return !usableFrom(topo, seg) })
		switch {
		case len(topo) == 0:
			Skip("the snapshot has no accessible_topology, so it is usable from everywhere (a global snapshot): no restore lies outside it")
		case i < 0:
			Skip(fmt.Sprintf("the snapshot is usable from %s, which covers every configured segment: configure one outside it (for regional snapshots, a segment in another region)", formatAll(topo)))
		}
		resp, err := s.r.CreateVolume(ctx, restoreRequest("zp-restored", snap, segs[i:i+1]))
		Expect(code(err)).To(BeElementOf(codes.ResourceExhausted, codes.InvalidArgument), "restore of a snapshot usable from %s into %s: got %v (volume %v)",
			formatAll(topo), format(segs[i]), err, resp.GetVolume())
		if code(err) == codes.InvalidArgument {
			warn(choiceMade, "restore outside the snapshot", fmt.Sprintf("INVALID_ARGUMENT (Source incompatible or not supported) for a restore of a snapshot usable from %s into %s, not RESOURCE_EXHAUSTED (external-provisioner reschedules a WaitForFirstConsumer claim only on RESOURCE_EXHAUSTED)", formatAll(topo), format(segs[i])))
		}
	})

	// Without requirements the SP MAY choose where the snapshot is usable
	// from (CreateSnapshotRequest.accessibility_requirements) and where a
	// volume goes (CreateVolumeRequest.accessibility_requirements), but
	// accessible_topology must still say where the snapshot is usable
	// from: a restore without requirements lands there, and a restore into
	// any place it claims succeeds. A driver that keeps its topology
	// straight only when told fails here.
	It("restores a snapshot cut without requirements where its accessible_topology says, also without requirements (csi.proto Snapshot.accessible_topology: where volumes created from the snapshot are accessible)", ruleRestore, func() {
		segs := s.needSegments(1)
		vol := s.volume("zp-unconstrained-source", segs[0])
		snap := s.readySnapshot(s.snapshotRequest("zp-unconstrained", vol.GetVolumeId(), nil))
		restored := s.r.MustCreateVolume(ctx, restoreRequest("zp-unconstrained-restored", snap, nil)).GetVolume()
		if topo := snap.GetAccessibleTopology(); len(topo) > 0 {
			Expect(placedIn("restore without requirements (held to the snapshot's accessible_topology)", restored.GetAccessibleTopology(), topo)).To(Succeed(), "restore without requirements placed outside the snapshot's accessible_topology")
		}
		restoresWhereClaimed("zp-unconstrained-into", snap)
	})
})

// readySnapshot cuts a snapshot and waits until it is ready_to_use, as a
// CO does before restoring it: a snapshot that uploads (EBS, PD, Azure
// Disk) answers ready_to_use false at first, and csi.proto
// Snapshot.ready_to_use says whether it is "ready to use as a
// volume_content_source". The wait reissues the same CreateSnapshot, the
// spec's way ("CO SHOULD then reissue the same CreateSnapshotRequest
// periodically until boolean ready_to_use flips to true", spec.md
// CreateSnapshot), as upstream csi-sanity's restore test does; so it needs
// neither GET_SNAPSHOT nor LIST_SNAPSHOTS. A snapshot not ready within
// readyTimeout fails the test saying so.
func (s *suite) readySnapshot(req *csi.CreateSnapshotRequest) *csi.Snapshot {
	ctx := context.Background()
	snap := s.r.MustCreateSnapshot(ctx, req).GetSnapshot()
	if snap.GetReadyToUse() {
		return snap
	}
	timeout := config().readyTimeout()
	warn(choiceMade, "ready", fmt.Sprintf("snapshot %s is not ready_to_use when CreateSnapshot returns; waiting up to %s", snap.GetSnapshotId(), timeout))
	Eventually(func(g Gomega) {
		resp, err := s.r.CreateSnapshot(ctx, req)
		g.Expect(err).NotTo(HaveOccurred(), "CreateSnapshot reissued while waiting for ready_to_use")
		g.Expect(resp.GetSnapshot().GetSnapshotId()).To(Equal(snap.GetSnapshotId()), "CreateSnapshot reissued while waiting for ready_to_use returned another snapshot")
		snap = resp.GetSnapshot()
		g.Expect(snap.GetReadyToUse()).To(BeTrue(), "snapshot %s ready_to_use", snap.GetSnapshotId())
	}).WithTimeout(timeout).WithPolling(time.Second).Should(Succeed(),
		"snapshot %s did not become ready_to_use within %s (--zonepath.ready-timeout), so it cannot be restored", snap.GetSnapshotId(), timeout)
	return snap
}
