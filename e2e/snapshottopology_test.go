package e2e

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/test/e2e/framework"
	e2eskipper "k8s.io/kubernetes/test/e2e/framework/skipper"

	"github.com/zonepath/zonepath/e2e/driverext"
)

// needGate skips unless the cluster runs the VolumeSnapshotTopology gate:
// specs that only need Kubernetes' side (an admin-written nodeAffinity
// enforced by the scheduler) and not the driver's.
func (e *env) needGate() {
	if !e.ext.FeatureGates.VolumeSnapshotTopology {
		e2eskipper.Skipf("driver ext: featureGates.VolumeSnapshotTopology is false in this cluster")
	}
}

// needRegionWide skips unless the extension file says how to make a
// snapshot usable from a second segment of segments[0]'s region, and
// returns that segment.
func (e *env) needRegionWide() driverext.Segment {
	if why := e.ext.RegionWideMissing(); why != "" {
		e2eskipper.Skipf("%s", why)
	}
	same := e.ext.SameRegion()
	if same == nil {
		e2eskipper.Skipf("driver ext: no segment after segments[0] is in its region (%s=%s)", e.ext.RegionKey, e.segment(0)[e.ext.RegionKey])
	}
	return same
}

// expectLossless checks terms are the lossless form of CSI segments (one
// term per segment, one value per key, keys among the driver's topology
// keys, which may be more than the driver file lists) and that they admit
// a schedulable node of seg, the class's allowed segment: CSI,
// CreateSnapshotRequest accessibility_requirements "Specifies where
// (regions, zones, racks, etc.) the provisioned snapshot MUST be usable
// from". The spec lets the driver make it usable from more (a region for
// a zone): a term reaching outside seg is that choice, logged, not failed.
func (e *env) expectLossless(ctx context.Context, what string, ts []v1.TopologySelectorTerm, seg driverext.Segment) {
	keys, nodes := e.driverKeys(ctx), e.schedulableNodes(ctx)
	for i, t := range ts {
		if p := losslessProblem(t, keys); p != "" {
			framework.Failf("%s term %d: %s", what, i, p)
		}
		if p := insideProblem(t, nodes, seg); p != "" {
			framework.Logf("%s term %d %v is wider than the class's allowed segment %s (the driver's choice, which CSI allows): it %s", what, i, t.MatchLabelExpressions, seg, p)
		}
	}
	e.expectAccessible(ctx, fmt.Sprintf("%s %v", what, ts), termsAdmit(ts), seg)
}

// restrictedHint ends the failure of a snapshot without nodeAffinity.
const restrictedHint = " (a driver whose snapshots are unrestricted by default declares the class parameters of restricted ones: restrictedSnapshotClassParameters)"

func defineSnapshotTopology(e *env) {
	label := ginkgo.Label(labelSnapshotTopology)

	ginkgo.It("scenario 1: gives a VolumeSnapshotContent the driver's accessible topology as nodeAffinity, lossless and usable from the class's allowedTopologies", label, func(ctx context.Context) {
		e.needSnapshotTopology()
		seg := e.segment(0)
		content := e.sourceSnapshot(ctx, "s1-snapshot", seg, nil, terms(seg))
		affinity := nodeAffinity(content)
		framework.Logf("VolumeSnapshotContent %s nodeAffinity %v", content.GetName(), affinity)
		gomega.Expect(affinity).NotTo(gomega.BeEmpty(), "VolumeSnapshotContent %s has no spec.nodeAffinity, although the driver declares snapshot topology and the class allows %s%s", content.GetName(), seg, restrictedHint)
		e.expectLossless(ctx, "VolumeSnapshotContent "+content.GetName()+" nodeAffinity", affinity, seg)
	})

	ginkgo.It("scenario 2: places a pod restoring the snapshot (WaitForFirstConsumer) on a node its nodeAffinity allows", label, func(ctx context.Context) {
		affinity, sc := e.placementSnapshot(ctx, "s2-snapshot")
		e.restoreInside(ctx, "s2-snapshot", sc, "restore", "consumer", affinity)
	})

	ginkgo.It("scenario 3: keeps a pod Pending with a FailedScheduling event naming the snapshot when no node is in its topology", label, func(ctx context.Context) {
		e.needGate()
		seg, elsewhere := e.segment(0), e.segment(1)
		content := e.sourceSnapshot(ctx, "s3-snapshot", seg, nil, nil)
		// An admin narrows the snapshot to seg; the pod may only go to
		// elsewhere. The driver's own answer does not matter here.
		e.patchAffinity(ctx, content.GetName(), terms(seg))
		sc := e.storageClass(ctx, storagev1.VolumeBindingWaitForFirstConsumer, nil)
		e.pvc(ctx, "restore", sc, snapshotSource("s3-snapshot"))
		e.pod(ctx, "elsewhere", elsewhere, "restore")
		ev := e.waitEvent(ctx, "elsewhere", "FailedScheduling naming s3-snapshot", failedSchedulingNaming("s3-snapshot", content.GetName()))
		framework.Logf("FailedScheduling: %s", ev.Message)
		e.expectStaysUnscheduled(ctx, "elsewhere", []string{content.GetName()}, "s3-snapshot", content.GetName())
	})

	ginkgo.It("scenario 4: restores an Immediate claim inside the snapshot's topology ∩ StorageClass.allowedTopologies", label, func(ctx context.Context) {
		// The class offers seg and other; only the provisioner's
		// intersection with the snapshot's nodeAffinity keeps other out
		// of the requisite. A driver that narrows a restore to its
		// snapshot by itself hides a provisioner that does not here
		// (e2e-mutants proves this half with one that does not narrow:
		// restore-outside-snapshot); the second half is a restore the
		// driver could make elsewhere.
		e.needSnapshotTopology()
		seg, other := e.segment(0), e.segment(1)
		content := e.sourceSnapshot(ctx, "s4-snapshot", seg, nil, terms(seg))
		affinity := nodeAffinity(content)
		allowed := terms(seg, other)
		sc := e.storageClass(ctx, storagev1.VolumeBindingImmediate, allowed)
		e.pvc(ctx, "restore", sc, snapshotSource("s4-snapshot"))
		pv := e.waitBound(ctx, "restore")
		framework.Logf("restored PV %s nodeAffinity %s; snapshot %v; class %v", pv.Name, pvAffinity(pv), affinity, allowed)
		what, both := fmt.Sprintf("restored volume %s (%s)", pv.Name, pvAffinity(pv)), fmt.Sprintf("snapshot %v ∩ class %v", affinity, allowed)
		// The requisite is snapshot ∩ class: the restore must meet it,
		// and may reach beyond it (x > n).
		e.expectWithin(ctx, what, pvAdmits(pv), both, termsAdmit(affinity), termsAdmit(allowed))
		e.expectNarrowedByProvisioner(ctx)
	})

	ginkgo.It("scenario 5: places the pod in the snapshot's segment on each of 5 repetitions when nodes span several segments", label, func(ctx context.Context) {
		affinity, sc := e.placementSnapshot(ctx, "s5-snapshot")
		for i := 1; i <= 5; i++ {
			node := e.restoreInside(ctx, "s5-snapshot", sc, claimName("restore", i), claimName("consumer", i), affinity)
			framework.Logf("repetition %d: pod on node %s", i, node.Name)
		}
	})

	ginkgo.It("scenario 6: schedules a pending pod soon after an admin widens the content's nodeAffinity (requeued, not after a timeout)", label, func(ctx context.Context) {
		e.needSnapshotTopology()
		other := e.needRegionWide()
		seg := e.segment(0)
		content := e.sourceSnapshot(ctx, "s6-snapshot", seg, e.ext.RegionWideSnapshotClassParameters, nil)
		e.patchAffinity(ctx, content.GetName(), terms(seg))
		sc := e.storageClass(ctx, storagev1.VolumeBindingWaitForFirstConsumer, nil)
		e.pvc(ctx, "restore", sc, snapshotSource("s6-snapshot"))
		e.pod(ctx, "waiting", other, "restore")
		ev := e.waitEvent(ctx, "waiting", "FailedScheduling naming s6-snapshot", failedSchedulingNaming("s6-snapshot", content.GetName()))
		framework.Logf("while narrowed to %s: %s", seg, ev.Message)

		widened := time.Now()
		e.patchAffinity(ctx, content.GetName(), terms(seg, other))
		node := e.waitScheduled(ctx, "waiting", requeueBound)
		framework.Logf("pod scheduled to %s %.1fs after the content was widened", node.Name, time.Since(widened).Seconds())
		gomega.Expect(termsMatch(terms(other), node.Labels)).To(gomega.BeTrueBecause("pod on node %s is in %s", node.Name, other))
	})

	ginkgo.It("scenario 8: gives a snapshot of a driver without SNAPSHOT_ACCESSIBILITY_CONSTRAINTS no nodeAffinity, and schedules its restore as without snapshots", label, ginkgo.Label(labelCapabilityOff), func(ctx context.Context) {
		if e.ext.SnapshotTopology {
			e2eskipper.Skipf("driver ext: snapshotTopology is true; scenario 8 is for a driver without SNAPSHOT_ACCESSIBILITY_CONSTRAINTS (snapshotTopology: false)")
		}
		// With the gate off nothing writes nodeAffinity anyway, and the
		// spec would pass without testing the driver's side.
		e.needGate()
		seg, elsewhere := e.segment(0), e.segment(1)
		content := e.sourceSnapshot(ctx, "s8-snapshot", seg, nil, nil)
		affinity := nodeAffinity(content)
		gomega.Expect(affinity).To(gomega.BeEmpty(), "VolumeSnapshotContent %s has spec.nodeAffinity %v, although the driver does not advertise SNAPSHOT_ACCESSIBILITY_CONSTRAINTS", content.GetName(), affinity)
		sc := e.storageClass(ctx, storagev1.VolumeBindingWaitForFirstConsumer, nil)
		if e.ext.RestoresInSourceSegmentOnly {
			e.restoreOnlyAtSource(ctx, "s8-snapshot", sc, seg, elsewhere)
			return
		}
		// A snapshot without accessible_topology is usable everywhere (CSI
		// spec), so the scheduler must not filter on it: a pod pinned to
		// a segment other than the source's schedules there at once and
		// its claim is restored for that node.
		e.pvc(ctx, "restore", sc, snapshotSource("s8-snapshot"))
		e.pod(ctx, "elsewhere", elsewhere, "restore")
		node := e.waitScheduled(ctx, "elsewhere", e.timeout())
		gomega.Expect(termsMatch(terms(elsewhere), node.Labels)).To(gomega.BeTrueBecause("pod pinned to %s landed on node %s (%v)", elsewhere, node.Name, node.Labels))
		pv := e.waitBound(ctx, "restore")
		gomega.Expect(pvMatches(pv, node.Labels)).To(gomega.BeTrueBecause("restored volume %s (%s) is accessible from node %s in %s", pv.Name, pvAffinity(pv), node.Name, elsewhere))
		framework.Logf("snapshot of a volume in %s, content %s without nodeAffinity; pod on node %s in %s; restored volume %s %s", seg, content.GetName(), node.Name, elsewhere, pv.Name, pvAffinity(pv))
		e.expectFirstTry(ctx, "restore", "elsewhere")
	})

	ginkgo.It("scenario 12: refuses an Immediate restore whose StorageClass.allowedTopologies is disjoint from the snapshot: Warning event on the PVC, no volume", label, func(ctx context.Context) {
		e.needSnapshotTopology()
		seg := e.segment(0)
		content := e.sourceSnapshot(ctx, "s12-snapshot", seg, nil, terms(seg))
		// Disjoint by the nodes: a driver may make the snapshot usable
		// from more than seg (its region), which CSI allows.
		other := e.disjointSegment(ctx, "s12-snapshot", content)
		sc := e.storageClass(ctx, storagev1.VolumeBindingImmediate, terms(other))
		e.pvc(ctx, "impossible", sc, snapshotSource("s12-snapshot"))
		// KEP-5943: the provisioner refuses with an event naming the
		// incompatibility of the snapshot and the class, "rather than
		// deferring to a CSI driver failure" (which knows neither name).
		ev := e.waitEvent(ctx, "impossible", "a Warning naming s12-snapshot or its content", warningNaming("s12-snapshot", content.GetName()))
		framework.Logf("Warning %s: %s", ev.Reason, ev.Message)
		claim, err := e.f.ClientSet.CoreV1().PersistentVolumeClaims(e.ns()).Get(ctx, "impossible", metav1.GetOptions{})
		framework.ExpectNoError(err)
		gomega.Expect(claim.Status.Phase).To(gomega.Equal(v1.ClaimPending), "PVC impossible")
		gomega.Expect(claim.Spec.VolumeName).To(gomega.BeEmpty(), "PVC impossible got a volume in a StorageClass disjoint from its snapshot")
	})

	ginkgo.It("scenario 13: leaves a pod with two snapshot-sourced claims from different segments unschedulable, with the reason", label, func(ctx context.Context) {
		e.needSnapshotTopology()
		a := e.segment(0)
		ca := e.sourceSnapshot(ctx, "s13-a", a, nil, terms(a))
		b := e.disjointSegment(ctx, "s13-a", ca)
		cb := e.sourceSnapshot(ctx, "s13-b", b, nil, terms(b))
		if node := admittedBy(e.schedulableNodes(ctx), termsAdmit(nodeAffinity(ca)), termsAdmit(nodeAffinity(cb))); node != "" {
			framework.Failf("snapshots s13-a of %s and s13-b of %s, whose class allowed only %s, are both usable from node %s", a, b, b, node)
		}
		sc := e.storageClass(ctx, storagev1.VolumeBindingWaitForFirstConsumer, nil)
		e.pvc(ctx, "restore-a", sc, snapshotSource("s13-a"))
		e.pvc(ctx, "restore-b", sc, snapshotSource("s13-b"))
		e.pod(ctx, "both", nil, "restore-a", "restore-b")
		ev := e.waitEvent(ctx, "both", "FailedScheduling naming s13-a or s13-b", failedSchedulingNaming("s13-a", "s13-b", ca.GetName(), cb.GetName()))
		framework.Logf("FailedScheduling: %s", ev.Message)
		e.expectStaysUnscheduled(ctx, "both", []string{ca.GetName(), cb.GetName()}, "s13-a", "s13-b", ca.GetName(), cb.GetName())
	})
}

// placementSnapshot is how the placement scenarios start: a snapshot
// whose class allows only the first segment, its nodeAffinity (which must
// not be empty), a skip unless nodes outside it tell placement from chance,
// and a WaitForFirstConsumer class to restore into.
func (e *env) placementSnapshot(ctx context.Context, name string) (affinity []v1.TopologySelectorTerm, class string) {
	e.needSnapshotTopology()
	content := e.sourceSnapshot(ctx, name, e.segment(0), nil, terms(e.segment(0)))
	affinity = nodeAffinity(content)
	gomega.Expect(affinity).NotTo(gomega.BeEmpty(), "VolumeSnapshotContent %s has no nodeAffinity%s", content.GetName(), restrictedHint)
	e.needNodesOutside(ctx, affinity)
	return affinity, e.storageClass(ctx, storagev1.VolumeBindingWaitForFirstConsumer, nil)
}

// expectNarrowedByProvisioner is scenario 4 where the driver alone would
// restore elsewhere: a region-wide snapshot, which the driver can restore
// anywhere in segments[0]'s region, narrowed by an admin to segments[0],
// and two Immediate restores through a class that allows segments[0] and
// a second segment of that region. Only the provisioner's intersection of
// the class with the content's nodeAffinity keeps the second segment out
// of what the driver is offered. The claims are named like a
// StatefulSet's (spread-0, spread-1): a provisioner that hands the driver
// the class as it is spreads them, upstream external-provisioner by
// offering each segment first once (its preferred order shifted by the
// name's index), so one of them lands outside. Without region-wide
// parameters or a second segment in the region it logs why and does
// nothing.
func (e *env) expectNarrowedByProvisioner(ctx context.Context) {
	if why := e.ext.RegionWideMissing(); why != "" {
		framework.Logf("scenario 4 without its region-wide half: %s", why)
		return
	}
	same := e.ext.SameRegion()
	if same == nil {
		framework.Logf("scenario 4 without its region-wide half: no segment after segments[0] is in its region")
		return
	}
	seg := e.segment(0)
	content := e.sourceSnapshot(ctx, "s4-regional", seg, e.ext.RegionWideSnapshotClassParameters, nil)
	e.patchAffinity(ctx, content.GetName(), terms(seg))
	allowed := terms(seg, same)
	sc := e.storageClass(ctx, storagev1.VolumeBindingImmediate, allowed)
	claims := []string{claimName("spread", 0), claimName("spread", 1)}
	for _, c := range claims {
		e.pvc(ctx, c, sc, snapshotSource("s4-regional"))
	}
	for _, c := range claims {
		pv := e.waitBound(ctx, c)
		framework.Logf("claim %s restored the region-wide snapshot narrowed to %s as PV %s, nodeAffinity %s", c, seg, pv.Name, pvAffinity(pv))
		what := fmt.Sprintf("restored volume %s of claim %s (%s)", pv.Name, c, pvAffinity(pv))
		// A correct provisioner sends the requisite {seg}; one that
		// offers the class without intersecting it lets a driver place
		// the claim offered same first in same only. Accessible from same
		// as well as seg is a regional volume's second zone (x > n),
		// which does not tell the two apart: logged, not failed.
		e.expectWithin(ctx, what, pvAdmits(pv), fmt.Sprintf("%s, VolumeSnapshotContent %s's nodeAffinity %v (a provisioner offering the driver class %v without intersecting it lets the driver restore outside it)",
			seg, content.GetName(), terms(seg), allowed), inSeg(seg))
	}
}

// refusalCodes are the codes a driver may answer CreateVolume with for a
// restore it cannot make where the requisite asks (spec.md CreateVolume
// Errors): RESOURCE_EXHAUSTED, "Unable to provision in
// accessible_topology ... a new volume can not be provisioned with the
// specified topology constraints", and INVALID_ARGUMENT, "Source
// incompatible or not supported ... cannot create a volume from the
// requested source".
var refusalCodes = []string{"ResourceExhausted", "InvalidArgument"}

// restoreOnlyAtSource is scenario 8 for a driver that restores only in
// its source's segment (extension file restoresInSourceSegmentOnly, a
// node-local driver): the snapshot has no accessible_topology, so the
// scheduler places the pod pinned elsewhere and the driver must refuse
// that restore with a code of refusalCodes, never provisioning it; a pod
// pinned to the source's segment gets its restore. Any other code (a
// NOT_FOUND for a snapshot that exists) fails, naming it.
func (e *env) restoreOnlyAtSource(ctx context.Context, snapshot, sc string, seg, elsewhere driverext.Segment) {
	e.pvc(ctx, "restore", sc, snapshotSource(snapshot))
	e.pod(ctx, "elsewhere", elsewhere, "restore")
	ev := e.waitEvent(ctx, "restore", "ProvisioningFailed with a gRPC code", func(ev v1.Event) bool {
		return ev.Reason == "ProvisioningFailed" && !slices.Contains(retriedInPlace, rpcCode(ev.Message)) && rpcCode(ev.Message) != ""
	})
	if code := rpcCode(ev.Message); !slices.Contains(refusalCodes, code) {
		framework.Failf("the driver answered the restore of %s in %s with code %s; a driver that restores only in the source's segment must refuse elsewhere with one of %v (spec.md CreateVolume Errors):%s",
			snapshot, elsewhere, code, refusalCodes, e.claimFacts(ctx, "restore"))
	}
	framework.Logf("restore of %s in %s refused as declared (restoresInSourceSegmentOnly): %s", snapshot, elsewhere, eventLine(ev))
	c := e.claimFacts(ctx, "restore")
	gomega.Expect(c.Phase).To(gomega.Equal(string(v1.ClaimPending)), "claim restore, refused in %s, must not be bound:%s", elsewhere, c)
	e.expectUnscheduled(ctx, "elsewhere")
	e.pvc(ctx, "restore-home", sc, snapshotSource(snapshot))
	e.pod(ctx, "home", seg, "restore-home")
	node := e.waitScheduled(ctx, "home", e.timeout())
	pv := e.waitBound(ctx, "restore-home")
	gomega.Expect(termsMatch(terms(seg), node.Labels)).To(gomega.BeTrueBecause("pod pinned to %s landed on node %s (%v)", seg, node.Name, node.Labels))
	gomega.Expect(pvMatches(pv, node.Labels)).To(gomega.BeTrueBecause("restored volume %s (%s) is accessible from node %s in the source's segment %s", pv.Name, pvAffinity(pv), node.Name, seg))
	framework.Logf("restore of %s in the source's segment %s: node %s, volume %s %s", snapshot, seg, node.Name, pv.Name, pvAffinity(pv))
}
