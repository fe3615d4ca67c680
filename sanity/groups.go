package sanity

import (
	"context"
	"fmt"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
)

// ruleGroup: a group snapshot's members carry their topology like any
// snapshot. KEP-5943 says nothing of groups; CSI gives each member a
// Snapshot message, and the snapshotter reads a member's topology back
// with GetSnapshot or ListSnapshots (controllers/README.md, "Group
// snapshots and topology").
var ruleGroup = Label("group-snapshot", "rule:group")

const groupControllerCap = csi.PluginCapability_Service_GROUP_CONTROLLER_SERVICE

func (s *suite) needGroupSnapshots() {
	if !s.d.pluginCapability(groupControllerCap) {
		Skip("GROUP_CONTROLLER_SERVICE not advertised: the driver cuts no group snapshots")
	}
}

var _ = describe("Group snapshot topology [zonepath]", []func(*suite){(*suite).needSnapshots, (*suite).needGroupSnapshots}, func(s *suite) {
	It("returns each group snapshot member with the group's ID and one accessible_topology, the same in ListSnapshots and GetSnapshot (csi.proto Snapshot.group_snapshot_id: \"MUST be the same as the group_snapshot_id\"; accessible_topology only with SNAPSHOT_ACCESSIBILITY_CONSTRAINTS; VolumeGroupSnapshot.ready_to_use: MUST be false while a member's is; CreateVolumeGroupSnapshot MUST be idempotent; DeleteVolumeGroupSnapshot with snapshot_ids that are not the group's: SHOULD report an error, INVALID_ARGUMENT, reported when not)", ruleGroup, func() {
		segs := s.needSegments(2)
		group := csi.NewGroupControllerClient(s.sc.ControllerConn)
		sources := map[string]*csi.Topology{}
		for i, seg := range segs[:2] {
			sources[s.volume(fmt.Sprintf("zp-group-source-%d", i), seg).GetVolumeId()] = seg
		}
		g, req := s.cutGroup(group, sources)
		defer s.deleteGroup(group, g)
		Expect(g.GetSnapshots()).To(HaveLen(len(sources)), "CreateVolumeGroupSnapshot of %d volumes", len(sources))
		groupReady(g)
		sameGroup(group, req, g)
		topology := s.d.pluginCapability(snapshotTopologyCap)
		for _, m := range g.GetSnapshots() {
			Expect(sources).To(HaveKey(m.GetSourceVolumeId()), "member %s names a source volume not in the request", m.GetSnapshotId())
			Expect(m.GetGroupSnapshotId()).To(Equal(g.GetGroupSnapshotId()), "member %s group_snapshot_id", m.GetSnapshotId())
			if !topology {
				Expect(m.GetAccessibleTopology()).To(BeEmpty(), "member %s has accessible_topology %s without SNAPSHOT_ACCESSIBILITY_CONSTRAINTS", m.GetSnapshotId(), formatAll(m.GetAccessibleTopology()))
			}
			for _, r := range s.readBack(m.GetSnapshotId()) {
				Expect(sameSegments(r.snap.GetAccessibleTopology(), m.GetAccessibleTopology())).To(BeTrue(),
					"member %s of a volume in %s: %s: %s, CreateVolumeGroupSnapshot: %s (the snapshotter reads a member's topology back, since the snapshot-controller makes its content)",
					m.GetSnapshotId(), format(sources[m.GetSourceVolumeId()]), r.call, formatAll(r.snap.GetAccessibleTopology()), formatAll(m.GetAccessibleTopology()))
				Expect(r.snap.GetGroupSnapshotId()).To(Equal(g.GetGroupSnapshotId()), "member %s: %s group_snapshot_id", m.GetSnapshotId(), r.call)
			}
		}
		s.mismatchedDelete(group, g)
	})
})

// cutGroup cuts a group snapshot of the volumes (ID → segment) with the
// configured snapshot parameters. A driver that cannot snapshot volumes of
// several segments together may say so with FAILED_PRECONDITION
// (CreateVolumeGroupSnapshot Errors, "Cannot snapshot multiple volumes
// together"): that is reported, and the group is cut of two volumes of
// the first segment instead. Any other error fails.
func (s *suite) cutGroup(group csi.GroupControllerClient, sources map[string]*csi.Topology) (*csi.VolumeGroupSnapshot, *csi.CreateVolumeGroupSnapshotRequest) {
	ctx := context.Background()
	var req *csi.CreateVolumeGroupSnapshotRequest
	create := func() (*csi.CreateVolumeGroupSnapshotResponse, error) {
		ids := make([]string, 0, len(sources))
		for id := range sources {
			ids = append(ids, id)
		}
		req = &csi.CreateVolumeGroupSnapshotRequest{
			Name: sanity.UniqueString("zp-group"), SourceVolumeIds: ids,
			Parameters: s.sc.Config.TestSnapshotParameters, Secrets: s.sc.Secrets.CreateSnapshotSecret,
		}
		return group.CreateVolumeGroupSnapshot(ctx, req)
	}
	resp, err := create()
	if code(err) == codes.FailedPrecondition {
		warn(choiceMade, "group", fmt.Sprintf("a group of volumes in several segments is refused (%v); cutting one of a single segment", err))
		var first *csi.Topology
		for _, seg := range sources {
			first = seg
			break
		}
		clear(sources)
		for i := range 2 {
			sources[s.volume(fmt.Sprintf("zp-group-same-%d", i), first).GetVolumeId()] = first
		}
		resp, err = create()
	}
	Expect(err).NotTo(HaveOccurred(), "CreateVolumeGroupSnapshot")
	return resp.GetGroupSnapshot(), req
}

// sameGroup reissues the request that cut g, as a CO does while waiting
// for ready_to_use. spec.md CreateVolumeGroupSnapshot: "calls to this
// function MUST be idempotent ... the group snapshot MUST only be created
// once", and for a group of the same name, source_volume_ids and
// parameters that was cut "the Plugin MUST reply 0 OK with the
// corresponding CreateVolumeGroupSnapshotResponse": the same group, the
// same members.
func sameGroup(group csi.GroupControllerClient, req *csi.CreateVolumeGroupSnapshotRequest, g *csi.VolumeGroupSnapshot) {
	GinkgoHelper()
	resp, err := group.CreateVolumeGroupSnapshot(context.Background(), req)
	Expect(err).NotTo(HaveOccurred(), "the same CreateVolumeGroupSnapshot again")
	again := resp.GetGroupSnapshot()
	Expect(again.GetGroupSnapshotId()).To(Equal(g.GetGroupSnapshotId()), "the same CreateVolumeGroupSnapshot again returned another group")
	Expect(memberIDs(again)).To(Equal(memberIDs(g)), "the same CreateVolumeGroupSnapshot again returned other members")
}

func memberIDs(g *csi.VolumeGroupSnapshot) []string {
	ids := make([]string, 0, len(g.GetSnapshots()))
	for _, m := range g.GetSnapshots() {
		ids = append(ids, m.GetSnapshotId())
	}
	slices.Sort(ids)
	return ids
}

// deleteGroup deletes a group snapshot with its members, before the
// resources' cleanup deletes their source volumes.
func (s *suite) deleteGroup(group csi.GroupControllerClient, g *csi.VolumeGroupSnapshot) {
	ids := make([]string, 0, len(g.GetSnapshots()))
	for _, m := range g.GetSnapshots() {
		ids = append(ids, m.GetSnapshotId())
	}
	_, err := group.DeleteVolumeGroupSnapshot(context.Background(), &csi.DeleteVolumeGroupSnapshotRequest{
		GroupSnapshotId: g.GetGroupSnapshotId(), SnapshotIds: ids, Secrets: s.sc.Secrets.DeleteSnapshotSecret,
	})
	Expect(err).NotTo(HaveOccurred(), "DeleteVolumeGroupSnapshot %s", g.GetGroupSnapshotId())
}

// mismatchedDelete asks to delete group g with snapshot_ids that are not
// its members (all but one of them). DeleteVolumeGroupSnapshotRequest.
// snapshot_ids: an SP that does not need the list "SHOULD check this field
// and report an error if it has the ability to detect a mismatch", and
// DeleteVolumeGroupSnapshot Errors: INVALID_ARGUMENT "SHOULD also be used"
// for it. An SP that needs the list MUST report an error, but which SP needs
// it is not observable: both are reported, never failed. An OK deletes the
// group; the deferred deleteGroup then gets the OK of a group that "does
// not exist".
func (s *suite) mismatchedDelete(group csi.GroupControllerClient, g *csi.VolumeGroupSnapshot) {
	GinkgoHelper()
	ids := memberIDs(g)
	if len(ids) < 2 {
		return // no proper subset names anything
	}
	ids = ids[1:]
	_, err := group.DeleteVolumeGroupSnapshot(context.Background(), &csi.DeleteVolumeGroupSnapshotRequest{
		GroupSnapshotId: g.GetGroupSnapshotId(), SnapshotIds: ids, Secrets: s.sc.Secrets.DeleteSnapshotSecret,
	})
	switch code(err) {
	case codes.InvalidArgument:
	case codes.OK:
		warn(shouldNotMet, "group snapshot_ids mismatch", fmt.Sprintf("DeleteVolumeGroupSnapshot of group %s (members %v) with snapshot_ids %v answered OK: the SP SHOULD check the list and report an error", g.GetGroupSnapshotId(), memberIDs(g), ids))
	default:
		warn(shouldNotMet, "group snapshot_ids mismatch", fmt.Sprintf("DeleteVolumeGroupSnapshot of group %s (members %v) with snapshot_ids %v answered %v: an error, but the code for a mismatch SHOULD be INVALID_ARGUMENT", g.GetGroupSnapshotId(), memberIDs(g), ids, code(err)))
	}
}

// groupReady holds a group's ready_to_use to its members'. spec.md
// VolumeGroupSnapshot.ready_to_use: "If any snapshot in the list of
// snapshots in this message have ready_to_use set to false, the SP MUST set
// this field to false", and if all have it true "the SP SHOULD set this
// field to true": a group not ready with every member ready is reported.
func groupReady(g *csi.VolumeGroupSnapshot) {
	GinkgoHelper()
	var pending []string
	for _, m := range g.GetSnapshots() {
		if !m.GetReadyToUse() {
			pending = append(pending, m.GetSnapshotId())
		}
	}
	switch {
	case len(pending) > 0:
		Expect(g.GetReadyToUse()).To(BeFalse(), "group snapshot %s is ready_to_use while its members %v are not", g.GetGroupSnapshotId(), pending)
	case !g.GetReadyToUse():
		warn(shouldNotMet, "group ready_to_use", fmt.Sprintf("group snapshot %s is not ready_to_use though all %d members are", g.GetGroupSnapshotId(), len(g.GetSnapshots())))
	}
}
