package e2e

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/test/e2e/framework"
	e2eskipper "k8s.io/kubernetes/test/e2e/framework/skipper"
)

// labelZoneOutage: specs that take a zone down (the extension file's
// zoneOutage commands) and bring it back.
const labelZoneOutage = "zone-outage"

// defineZoneOutage holds the zone outage spec: what a topology-aware
// driver and Kubernetes do with snapshots while one zone is down.
func defineZoneOutage(e *env) {
	// Serial: the zone it takes down is every spec's, so under the Ginkgo
	// CLI's parallel processes no other spec may run meanwhile.
	ginkgo.It("scenario 20: with a zone down, a region-wide snapshot restores into another zone of its region, a zonal snapshot's restore waits with a reason naming the zone and completes once the zone is back; with storage capacity the zone's CSIStorageCapacity is 0 while it is down", ginkgo.Label(labelZoneOutage, labelSnapshotTopology), ginkgo.Serial, func(ctx context.Context) {
		if why := e.ext.ZoneOutageMissing(); why != "" {
			e2eskipper.Skipf("%s", why)
		}
		z := e.ext.ZoneOutage
		mate := e.ext.RegionMate(z.Segment)
		zNodes := namesIn(e.schedulableNodes(ctx), z.Segment)
		gomega.Expect(zNodes).NotTo(gomega.BeEmpty(), "zoneOutage.segment %s has schedulable nodes", z.Segment)
		zNode, err := e.f.ClientSet.CoreV1().Nodes().Get(ctx, zNodes[0], metav1.GetOptions{})
		framework.ExpectNoError(err)

		ginkgo.By(fmt.Sprintf("a volume in %s and two snapshots of it: zonal and region-wide", z.Segment))
		e.pvc(ctx, "source", e.storageClass(ctx, storagev1.VolumeBindingImmediate, terms(z.Segment)), nil)
		pv := e.waitBound(ctx, "source")
		e.expectAccessible(ctx, "source volume "+pv.Name, pvAdmits(pv), z.Segment)
		zonal := e.snapshot(ctx, "zonal", "source", e.snapshotClass(ctx, e.ext.RestrictedSnapshotClassParameters, nil))
		gomega.Expect(termsMatch(nodeAffinity(zonal), zNode.Labels)).To(gomega.BeTrueBecause("zonal snapshot's nodeAffinity %v admits node %s of its zone", nodeAffinity(zonal), zNode.Name))
		e.snapshot(ctx, "regional", "source", e.snapshotClass(ctx, e.ext.RegionWideSnapshotClassParameters, nil))
		// A WaitForFirstConsumer class, whose CSIStorageCapacity objects
		// storageClass waits for when the driver publishes them.
		capacityClass := e.storageClass(ctx, storagev1.VolumeBindingWaitForFirstConsumer, nil)
		if e.ext.StorageCapacity {
			e.waitZoneRoom(ctx, capacityClass, zNode, "more than 0 before the outage", func(n int64) bool { return n > 0 })
		}

		ginkgo.By("zone " + z.Zone + " goes down")
		zoneEnv := "ZONE=" + z.Zone
		ginkgo.DeferCleanup(runCommand, "zoneOutage.upCommand", z.UpCommand, zoneEnv) // also after a failure: up is idempotent
		runCommand(ctx, "zoneOutage.downCommand", z.DownCommand, zoneEnv)

		if e.ext.StorageCapacity {
			ginkgo.By("the CSIStorageCapacity of " + z.Zone + " drops to 0: the scheduler stops choosing a zone that provisions nothing")
			e.waitZoneRoom(ctx, capacityClass, zNode, "0 while the zone is down", func(n int64) bool { return n == 0 })
		}

		ginkgo.By("a pod restoring the region-wide snapshot lands in another zone of the region")
		e.pvc(ctx, "from-regional", e.storageClass(ctx, storagev1.VolumeBindingWaitForFirstConsumer, nil), snapshotSource("regional"))
		e.pod(ctx, "reader-regional", nil, "from-regional")
		node := e.waitScheduled(ctx, "reader-regional", e.timeout())
		gomega.Expect(inSegment(node.Labels, z.Segment)).To(gomega.BeFalseBecause("pod scheduled on node %s of %s, which is down", node.Name, z.Segment))
		gomega.Expect(node.Labels[e.ext.RegionKey]).To(gomega.Equal(mate[e.ext.RegionKey]), "pod on node %s restores a snapshot of region %s", node.Name, mate[e.ext.RegionKey])
		restored := e.waitBound(ctx, "from-regional")
		gomega.Expect(pvMatches(restored, node.Labels)).To(gomega.BeTrueBecause("volume %s (%s) is accessible from the pod's node %s", restored.Name, pvAffinity(restored), node.Name))
		gomega.Expect(pvMatches(restored, zNode.Labels)).To(gomega.BeFalseBecause("volume %s (%s), restored while %s is down, is not there", restored.Name, pvAffinity(restored), z.Segment))

		ginkgo.By("a claim restoring the zonal snapshot waits, with a Warning carrying the driver's code")
		e.pvc(ctx, "from-zonal", e.storageClass(ctx, storagev1.VolumeBindingImmediate, nil), snapshotSource("zonal"))
		// The provisioner writes the driver's gRPC code into the event; the
		// driver's message is only "a human readable description" (spec.md
		// "Error Scheme") and need not name the zone.
		ev := e.waitEvent(ctx, "from-zonal", "ProvisioningFailed with the driver's gRPC code", func(ev v1.Event) bool {
			return ev.Type == v1.EventTypeWarning && ev.Reason == "ProvisioningFailed" && rpcCode(ev.Message) != ""
		})
		framework.Logf("claim from-zonal waits: %s: %s", ev.Reason, ev.Message)
		claim, err := e.f.ClientSet.CoreV1().PersistentVolumeClaims(e.ns()).Get(ctx, "from-zonal", metav1.GetOptions{})
		framework.ExpectNoError(err)
		gomega.Expect(claim.Status.Phase).To(gomega.Equal(v1.ClaimPending), "claim from-zonal, whose snapshot's only copy is in %s, while it is down", z.Segment)

		ginkgo.By("zone " + z.Zone + " comes back: the zonal restore completes there")
		runCommand(ctx, "zoneOutage.upCommand", z.UpCommand, zoneEnv)
		if e.ext.StorageCapacity {
			e.waitZoneRoom(ctx, capacityClass, zNode, "more than 0 again once the zone is back", func(n int64) bool { return n > 0 })
		}
		back := e.waitBound(ctx, "from-zonal")
		gomega.Expect(pvMatches(back, zNode.Labels)).To(gomega.BeTrueBecause("volume %s (%s), restored from the zonal snapshot, is in %s", back.Name, pvAffinity(back), z.Segment))
		e.waitBound(ctx, "source") // still there, with its zone
	})
}

// waitZoneRoom waits until the CSIStorageCapacity objects of class that
// cover node's segment admit a limit (maximumVolumeSize, else capacity,
// as the scheduler reads them: roomFor) that ok accepts. A driver's
// GetCapacity gives a zone that is down available_capacity 0 and no
// maximum_volume_size ("The available capacity ... that can be used to
// provision volumes", GetCapacityResponse), and the external-provisioner
// publishes that at its next poll (fake zones: --capacity-poll-interval
// 10s), well inside the claim-provision timeout.
func (e *env) waitZoneRoom(ctx context.Context, class string, node *v1.Node, want string, ok func(int64) bool) {
	gomega.Eventually(ctx, func(ctx context.Context) error {
		caps, err := e.f.ClientSet.StorageV1().CSIStorageCapacities("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		limit, found := roomFor(caps.Items, class, node)
		switch {
		case !found:
			return fmt.Errorf("no CSIStorageCapacity of class %s covers node %s", class, node.Name)
		case !ok(limit):
			return fmt.Errorf("the CSIStorageCapacity of class %s covering node %s admits %d bytes, want %s", class, node.Name, limit, want)
		}
		return nil
	}).WithTimeout(e.timeout()).WithPolling(poll).Should(gomega.Succeed())
	framework.Logf("CSIStorageCapacity of class %s for node %s: %s", class, node.Name, want)
}
