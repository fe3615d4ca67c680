package sanity

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"

	"github.com/zonepath/zonepath/internal/idempotency"
)

// lift lifts the exhaustion the configured way: deleting one of the
// snapshots that filled the segment, or running the lift command. It
// reports false when the configuration gives no way.
func (s *suite) lift(cfg Config, fill []string) bool {
	switch {
	case cfg.ExhaustAfter > 0:
		_, err := s.r.DeleteSnapshot(context.Background(), sanity.MakeDeleteSnapshotReq(s.sc, fill[0]))
		Expect(err).NotTo(HaveOccurred(), "DeleteSnapshot to lift the condition")
	case cfg.LiftCommand != "":
		out, err := exec.Command("sh", "-c", cfg.LiftCommand).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "lift command %q: %s", cfg.LiftCommand, out)
	default:
		fmt.Fprintln(GinkgoWriter, "no way to lift the condition configured (exhaustAfter or liftCommand): not checking that it recovers")
		return false
	}
	return true
}

// exhaustedSource creates the RESOURCE_EXHAUSTED test's source volume in
// the exhausted segment, so a driver that can cut a snapshot only in its
// source volume's zone (anything else RESOURCE_EXHAUSTED, CreateSnapshot
// Errors) fills it like any other. A segment that takes no volume either
// gets a source the driver places, and the log says so.
func (s *suite) exhaustedSource(seg *csi.Topology) *csi.Volume {
	req := sanity.MakeCreateVolumeReq(s.sc, sanity.UniqueString("zp-exhausted-source"))
	if s.d.pluginCapability(volumeTopologyCap) {
		req.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: []*csi.Topology{seg}, Preferred: []*csi.Topology{seg}}
	}
	resp, err := s.r.CreateVolume(context.Background(), req)
	if err == nil {
		return resp.GetVolume()
	}
	fmt.Fprintf(GinkgoWriter, "no source volume in the exhausted segment %s (%v): the driver places it\n", format(seg), err)
	return s.volume("zp-exhausted-source", nil)
}

// retryAfterLift retries req with exponential backoff, as the spec tells
// the caller to, until it succeeds or the timeout passes.
func (s *suite) retryAfterLift(req *csi.CreateSnapshotRequest, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
		_, err := s.r.CreateSnapshot(context.Background(), req)
		if err == nil || time.Now().Add(delay).After(deadline) {
			return err
		}
		time.Sleep(delay)
	}
}

// listed finds a snapshot by walking the unfiltered list in pages, to
// its end however many snapshots the driver holds: a driver with more
// than any fixed number of snapshots is no less correct (ListSnapshots:
// "next_token ... can be used in a subsequent ListSnapshots call to
// retrieve the next page"). A next_token the walk has been given before
// would make it endless; that skips, saying so, rather than fail, since
// the spec says nothing of it.
func (s *suite) listed(id string) *csi.Snapshot {
	seen := map[string]bool{}
	for token := ""; ; {
		resp, err := s.r.ListSnapshots(context.Background(), &csi.ListSnapshotsRequest{MaxEntries: 100, StartingToken: token})
		Expect(err).NotTo(HaveOccurred(), "ListSnapshots (starting_token %q)", token)
		for _, e := range resp.GetEntries() {
			if e.GetSnapshot().GetSnapshotId() == id {
				return e.GetSnapshot()
			}
		}
		if token = resp.GetNextToken(); token == "" {
			return nil
		}
		if seen[token] {
			Skip(fmt.Sprintf("ListSnapshots returned next_token %q a second time, before snapshot %s was listed: the walk would not end", token, id))
		}
		seen[token] = true
	}
}

// readBack is a snapshot as one of the driver's read calls returns it.
type readBack struct {
	call string
	snap *csi.Snapshot
}

// readBack reads snapshot id back by every call the driver advertises:
// ListSnapshots (LIST_SNAPSHOTS, which the spec does not require beside
// CREATE_DELETE_SNAPSHOT) by ID and unfiltered, and GetSnapshot
// (GET_SNAPSHOT).
func (s *suite) readBack(id string) []readBack {
	ctx := context.Background()
	var out []readBack
	if s.d.controllerCapability(csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS) {
		byID, err := s.r.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SnapshotId: id})
		Expect(err).NotTo(HaveOccurred(), "ListSnapshots by snapshot_id")
		Expect(byID.GetEntries()).To(HaveLen(1), "ListSnapshots by snapshot_id")
		listed := s.listed(id)
		Expect(listed).NotTo(BeNil(), "snapshot %s missing from ListSnapshots", id)
		out = append(out, readBack{"ListSnapshots by ID", byID.GetEntries()[0].GetSnapshot()}, readBack{"ListSnapshots", listed})
	}
	if s.d.controllerCapability(csi.ControllerServiceCapability_RPC_GET_SNAPSHOT) {
		got, err := s.r.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: id})
		Expect(err).NotTo(HaveOccurred(), "GetSnapshot")
		out = append(out, readBack{"GetSnapshot", got.GetSnapshot()})
	}
	return out
}

var _ = describe("Snapshot topology capability [zonepath]", nil, func(s *suite) {
	It("returns accessible_topology only with SNAPSHOT_ACCESSIBILITY_CONSTRAINTS (csi.proto Snapshot.accessible_topology: a plugin that returns this field MUST also set the capability)", ruleCapability, func() {
		s.needSnapshots()
		advertised := s.d.pluginCapability(snapshotTopologyCap)
		vol := s.volume("zp-capability-source", nil)
		snap := s.r.MustCreateSnapshot(context.Background(), s.snapshotRequest("zp-capability", vol.GetVolumeId(), nil)).GetSnapshot()
		if advertised {
			return
		}
		Expect(snap.GetAccessibleTopology()).To(BeEmpty(), "CreateSnapshot returned accessible_topology %s without SNAPSHOT_ACCESSIBILITY_CONSTRAINTS", formatAll(snap.GetAccessibleTopology()))
		for _, r := range s.readBack(snap.GetSnapshotId()) {
			Expect(r.snap.GetAccessibleTopology()).To(BeEmpty(), "%s returned accessible_topology %s without SNAPSHOT_ACCESSIBILITY_CONSTRAINTS", r.call, formatAll(r.snap.GetAccessibleTopology()))
		}
	})

	It("advertises SNAPSHOT_ACCESSIBILITY_CONSTRAINTS only with CREATE_DELETE_SNAPSHOT (spec.md: snapshot topology is returned by CreateSnapshot)", ruleCapability, func() {
		if !s.d.pluginCapability(snapshotTopologyCap) {
			Skip("SNAPSHOT_ACCESSIBILITY_CONSTRAINTS not advertised")
		}
		Expect(s.d.controllerCapability(createDeleteSnap)).To(BeTrue(), "SNAPSHOT_ACCESSIBILITY_CONSTRAINTS advertised without the CREATE_DELETE_SNAPSHOT controller capability")
	})
})

var _ = describe("Snapshot topology [zonepath]", []func(*suite){(*suite).needSnapshotTopology}, func(s *suite) {
	ctx := context.Background()

	// spec.md CreateSnapshotRequest.accessibility_requirements: "Specifies
	// where (regions, zones, racks, etc.) the provisioned snapshot MUST be
	// usable from", a TopologyRequirement, whose requisite says: "If
	// requisite is specified, the provisioned volume MUST be accessible
	// from at least one of the requisite topologies" and, for x > n, "the
	// SP MUST make the provisioned volume available from all topologies
	// from the list of requisite topologies and MAY choose the remaining
	// x-n unique topologies from the list of all possible topologies".
	// With one requisite segment both say the same: the snapshot must be
	// usable from it (a segment meeting it, {region} or {region, zone});
	// usable from more, or from everywhere (no accessible_topology), is
	// allowed and reported. Whether the claim is true, restores check.
	It("makes a snapshot usable from its requisite (spec.md TopologyRequirement.requisite: usable from at least one requisite topology; x > n: the SP MAY add others, reported as WARN)", ruleRequisite, func() {
		segs := s.needSegments(1)
		requisite := segs[:1]
		vol := s.volume("zp-requisite-source", segs[0])
		snap := s.r.MustCreateSnapshot(ctx, s.snapshotRequest("zp-requisite", vol.GetVolumeId(), &csi.TopologyRequirement{Requisite: requisite})).GetSnapshot()
		topo := snap.GetAccessibleTopology()
		Expect(len(topo) == 0 || meetsAny(topo, requisite)).To(BeTrue(), "CreateSnapshot ignored requisite: usable from %s, none of it in %s", formatAll(topo), formatAll(requisite))
		if len(topo) == 0 || within(topo, requisite) != nil {
			warn(mayUsed, "usable beyond requisite", fmt.Sprintf("requisite %s, snapshot usable from %s (TopologyRequirement x > n; the restore tests check the claim)", formatAll(requisite), usableText(topo)))
		}
	})

	// The snapshot must meet the requisite as in the test above (a
	// regional {region} snapshot for a requisite of two zones of that
	// region does); the order of preferred is a SHOULD, so a first
	// preferred segment the snapshot is not usable from is reported, and
	// so is a snapshot usable from it and more (x > n).
	It("prefers the first preferred segment (TopologyRequirement.preferred: the SP SHOULD attempt preferred first; reported, not failed)", rulePreferred, func() {
		segs := s.needSegments(2)
		vol := s.volume("zp-preferred-source", segs[0])
		req := &csi.TopologyRequirement{Requisite: segs[:2], Preferred: []*csi.Topology{segs[1], segs[0]}}
		snap := s.r.MustCreateSnapshot(ctx, s.snapshotRequest("zp-preferred", vol.GetVolumeId(), req)).GetSnapshot()
		topo, first := snap.GetAccessibleTopology(), segs[1]
		Expect(len(topo) == 0 || meetsAny(topo, req.GetRequisite())).To(BeTrue(), "CreateSnapshot ignored requisite: usable from %s, none of it in %s", formatAll(topo), formatAll(req.GetRequisite()))
		switch {
		case !usableFrom(topo, first):
			warn(shouldNotMet, "preferred", fmt.Sprintf("first preferred segment %s not used: snapshot usable from %s, its source volume in %s (a driver that cuts snapshots only in their source's zone cannot follow it)",
				format(first), usableText(topo), usableText(vol.GetAccessibleTopology())))
		case len(topo) == 0 || within(topo, []*csi.Topology{first}) != nil:
			warn(mayUsed, "preferred", fmt.Sprintf("first preferred segment %s used, and beyond it: snapshot usable from %s (TopologyRequirement x > n)", format(first), usableText(topo)))
		}
	})

	// A requisite that leaves out the source volume's segment: the only
	// request in which a driver that cuts every snapshot beside its source
	// differs from one that reads the requisite. spec.md CreateSnapshot: OK
	// only for a snapshot "usable from `accessibility_requirements`", the
	// field saying where it "MUST be usable from"; a driver that cannot
	// cut one there has CreateSnapshot Errors' RESOURCE_EXHAUSTED: "the
	// `accessibility_requirements` field is valid but a snapshot cannot be
	// created with the specified topology constraints". The segment is
	// valid: the driver took it as a volume's requisite and the preferred
	// test's snapshot requisite names it, so INVALID_ARGUMENT ("Invalid or
	// unsupported field") is not the spec's answer, and no other row fits.
	It("makes a snapshot usable from a requisite that excludes its source's segment, or answers RESOURCE_EXHAUSTED (spec.md CreateSnapshot: usable from accessibility_requirements; Errors: RESOURCE_EXHAUSTED for topology constraints)", ruleRequisite, func() {
		segs := s.needSegments(2)
		vol := s.volume("zp-elsewhere-source", segs[0])
		// Never segs[0], where the source was asked to be, even when the
		// volume carries no topology.
		i := 1 + slices.IndexFunc(segs[1:], func(seg *csi.Topology) bool { return !meetsAny(vol.GetAccessibleTopology(), []*csi.Topology{seg}) })
		if i == 0 {
			Skip(fmt.Sprintf("the source volume is accessible from %s, which meets every configured segment: none excludes it; give one more with --zonepath.segment", accessibleText(vol.GetAccessibleTopology())))
		}
		requisite := segs[i : i+1]
		resp, err := s.r.CreateSnapshot(ctx, s.snapshotRequest("zp-elsewhere", vol.GetVolumeId(), &csi.TopologyRequirement{Requisite: requisite}))
		switch code(err) {
		case codes.ResourceExhausted:
			warn(choiceMade, "requisite excluding the source", fmt.Sprintf("RESOURCE_EXHAUSTED for requisite %s, source volume in %s", formatAll(requisite), accessibleText(vol.GetAccessibleTopology())))
			return
		case codes.OK:
		default:
			Fail(fmt.Sprintf("CreateSnapshot with requisite %s, source volume in %s: got %v, want OK usable from it or RESOURCE_EXHAUSTED", formatAll(requisite), accessibleText(vol.GetAccessibleTopology()), err))
		}
		topo := resp.GetSnapshot().GetAccessibleTopology()
		Expect(len(topo) == 0 || meetsAny(topo, requisite)).To(BeTrue(), "CreateSnapshot answered OK for requisite %s with a snapshot usable from %s, its source volume in %s: cut beside the source, not where asked",
			formatAll(requisite), usableText(topo), accessibleText(vol.GetAccessibleTopology()))
	})

	It("returns the same accessible_topology from CreateSnapshot, ListSnapshots and GetSnapshot (csi.proto Snapshot: one snapshot, one topology)", ruleConsistent, func() {
		segs := s.needSegments(1)
		vol := s.volume("zp-consistent-source", segs[0])
		snap := s.r.MustCreateSnapshot(ctx, s.snapshotRequest("zp-consistent", vol.GetVolumeId(), &csi.TopologyRequirement{Requisite: segs[:1]})).GetSnapshot()
		want := snap.GetAccessibleTopology()
		reads := s.readBack(snap.GetSnapshotId())
		if len(reads) == 0 {
			Skip("the driver advertises neither LIST_SNAPSHOTS nor GET_SNAPSHOT: CreateSnapshot's answer is the only one")
		}
		for _, r := range reads {
			Expect(sameSegments(r.snap.GetAccessibleTopology(), want)).To(BeTrue(), "%s: %s, CreateSnapshot: %s", r.call, formatAll(r.snap.GetAccessibleTopology()), formatAll(want))
		}
	})

	It("returns RESOURCE_EXHAUSTED for a valid but unsatisfiable requisite, and succeeds once lifted (spec.md CreateSnapshot Errors: Not enough resources to create snapshot)", ruleExhausted, func() {
		cfg := config()
		if len(cfg.ExhaustedSegment) == 0 {
			Skip("no exhausted segment configured: give --zonepath.exhausted-segment (without it only the topology half of RESOURCE_EXHAUSTED is checked, by rule:requisite's requisite excluding the source)")
		}
		full := &csi.TopologyRequirement{Requisite: toCSI(cfg.ExhaustedSegment)}
		vol := s.exhaustedSource(full.GetRequisite()[0])
		var fill []string
		for i := 0; i < cfg.ExhaustAfter; i++ {
			resp, err := s.r.CreateSnapshot(ctx, s.snapshotRequest(fmt.Sprintf("zp-fill-%d", i), vol.GetVolumeId(), full))
			Expect(err).NotTo(HaveOccurred(), "snapshot %d of the %d exhaustAfter says %s holds, of a volume in %s", i+1, cfg.ExhaustAfter, formatSegment(cfg.ExhaustedSegment), usableText(vol.GetAccessibleTopology()))
			fill = append(fill, resp.GetSnapshot().GetSnapshotId())
		}
		req := s.snapshotRequest("zp-exhausted", vol.GetVolumeId(), full)
		resp, err := s.r.CreateSnapshot(ctx, req)
		Expect(code(err)).To(Equal(codes.ResourceExhausted), "CreateSnapshot in exhausted segment %s after %d snapshots: got %v (response %v)", formatSegment(cfg.ExhaustedSegment), cfg.ExhaustAfter, err, resp)
		if !s.lift(cfg, fill) {
			return
		}
		Expect(s.retryAfterLift(req, cfg.liftTimeout())).To(Succeed(), "the same CreateSnapshot once the condition in %s was lifted", formatSegment(cfg.ExhaustedSegment))
	})

	It("is idempotent: the same name and requirements return the same snapshot and topology (spec.md CreateSnapshot: MUST reply 0 OK with the corresponding response)", ruleIdempotent, func() {
		segs := s.needSegments(1)
		vol := s.volume("zp-idempotent-source", segs[0])
		req := s.snapshotRequest("zp-idempotent", vol.GetVolumeId(), &csi.TopologyRequirement{Requisite: segs[:1], Preferred: segs[:1]})
		first := s.r.MustCreateSnapshot(ctx, req).GetSnapshot()
		again := s.r.MustCreateSnapshot(ctx, req).GetSnapshot()
		Expect(again.GetSnapshotId()).To(Equal(first.GetSnapshotId()), "a repeated CreateSnapshot returned another snapshot")
		Expect(sameSegments(again.GetAccessibleTopology(), first.GetAccessibleTopology())).To(BeTrue(),
			"a repeated CreateSnapshot returned topology %s, first %s", formatAll(again.GetAccessibleTopology()), formatAll(first.GetAccessibleTopology()))
	})

	It("rejects the same name with another source as ALREADY_EXISTS (spec.md CreateSnapshot Errors: Snapshot already exists but is incompatible)", ruleIdempotent, func() {
		segs := s.needSegments(1)
		a, b := s.volume("zp-source-a", segs[0]), s.volume("zp-source-b", segs[0])
		req := s.snapshotRequest("zp-other-source", a.GetVolumeId(), &csi.TopologyRequirement{Requisite: segs[:1]})
		s.r.MustCreateSnapshot(ctx, req)
		req.SourceVolumeId = b.GetVolumeId()
		_, err := s.r.CreateSnapshot(ctx, req)
		Expect(code(err)).To(Equal(codes.AlreadyExists), "same name, other source volume: %v", err)
	})

	// The cases of internal/idempotency, which zonepath's driver test runs
	// too: OK wherever the snapshot is usable from the requisite (also
	// when it is usable from more, TopologyRequirement x > n), the
	// documented code (--zonepath.incompatible-requirements) where it is
	// usable from none of it, and a final error for a requisite naming no
	// topology of the driver.
	It("answers the same name with other requirements by the spec's words, case by case (spec.md CreateSnapshot: OK when usable from accessibility_requirements; --zonepath.incompatible-requirements where it is usable from none of it)", ruleIdempotent, func() {
		s.caseRunner(idempotency.CreateSnapshot).runAll(true)
	})

	It("answers a requisite naming no topology of the driver with INVALID_ARGUMENT or RESOURCE_EXHAUSTED, saying which, and skips such a segment beside a known one (spec.md General Error Table: Invalid or unsupported field; CreateSnapshot Errors)", ruleUnknown, func() {
		s.caseRunner(idempotency.CreateSnapshot).runAll(false)
	})
})
