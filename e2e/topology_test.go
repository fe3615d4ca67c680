package e2e

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/kubernetes/test/e2e/framework"
	e2eskipper "k8s.io/kubernetes/test/e2e/framework/skipper"

	"github.com/zonepath/zonepath/e2e/driverext"
)

func defineTopology(e *env) {
	label := ginkgo.Label(labelTopology)

	ginkgo.It("scenario 16a: provisions a WaitForFirstConsumer claim in the selected node's segment", label, func(ctx context.Context) {
		e.needSegments(1)
		sc := e.storageClass(ctx, storagev1.VolumeBindingWaitForFirstConsumer, nil)
		e.pvc(ctx, "claim", sc, nil)
		e.pod(ctx, "consumer", nil, "claim")
		node := e.waitScheduled(ctx, "consumer", e.timeout())
		pv := e.waitBound(ctx, "claim")
		gomega.Expect(pvMatches(pv, node.Labels)).To(gomega.BeTrueBecause("volume %s (%s) is accessible from the selected node %s", pv.Name, pvAffinity(pv), node.Name))
		// Landing right after a volume was made elsewhere and the pod
		// rescheduled is not provisioning in the selected node's segment.
		e.expectFirstTry(ctx, "claim", "consumer")
		// Accessible from other segments too is a regional volume (x > n:
		// the SP "MAY choose the remaining x-n unique topologies"), not a
		// wrong placement: logged.
		e.logBeyond(e.schedulableNodes(ctx), fmt.Sprintf("volume %s (%s), provisioned for node %s,", pv.Name, pvAffinity(pv), node.Name), "the node's segment", pvAdmits(pv), inSeg(segmentOf(node.Labels, e.driverKeys(ctx))))
	})

	ginkgo.It("scenario 16b: provisions an Immediate claim only in the StorageClass's allowedTopologies", label, func(ctx context.Context) {
		seg := e.segment(1)
		sc := e.storageClass(ctx, storagev1.VolumeBindingImmediate, terms(seg))
		e.pvc(ctx, "claim", sc, nil)
		pv := e.waitBound(ctx, "claim")
		what := fmt.Sprintf("volume %s (%s), whose class allows only %s,", pv.Name, pvAffinity(pv), seg)
		// The requisite is seg: the volume must meet it and may reach
		// beyond it (x > n), which is logged.
		e.expectWithin(ctx, what, pvAdmits(pv), seg.String(), inSeg(seg))
	})

	ginkgo.It("scenario 16c: restores a region-wide snapshot through a multi-region StorageClass", label, ginkgo.Label(labelSnapshotTopology), func(ctx context.Context) {
		e.needSnapshotTopology()
		if why := e.ext.RegionWideMissing(); why != "" {
			e2eskipper.Skipf("%s", why)
		}
		other, why := e.ext.OtherRegion()
		if why != "" {
			e2eskipper.Skipf("%s", why)
		}
		seg := e.segment(0)
		content := e.sourceSnapshot(ctx, "s16-snapshot", seg, e.ext.RegionWideSnapshotClassParameters, nil)
		affinity := nodeAffinity(content)
		framework.Logf("region-wide VolumeSnapshotContent %s nodeAffinity %v", content.GetName(), affinity)
		e.expectAccessible(ctx, fmt.Sprintf("region-wide VolumeSnapshotContent %s (nodeAffinity %v)", content.GetName(), affinity), termsAdmit(affinity), seg)
		e.needNodesOutside(ctx, affinity)
		// One term over both regions, as an admin writes a multi-region
		// class: every key lists the values of all segments. Its cross
		// product holds segments that name no real place (a zone of one
		// region paired with the other region), which a provisioner passes
		// on in the requisite and the driver must skip; and it names the
		// selected node's whole segment, so the provisioner's preferred[0]
		// is that node's segment and the restore has one right answer.
		// (Region-only terms would leave the zone to the driver.)
		multiRegion := crossTerm(e.ext.Segments)
		framework.Logf("multi-region StorageClass term %v (regions %s and %s)", multiRegion, seg[e.ext.RegionKey], other[e.ext.RegionKey])
		sc := e.storageClass(ctx, storagev1.VolumeBindingWaitForFirstConsumer, multiRegion)
		e.pvc(ctx, "restore", sc, snapshotSource("s16-snapshot"))
		e.pod(ctx, "consumer", nil, "restore")
		// A requisite holding segments that name no place may also be
		// refused whole with INVALID_ARGUMENT (zonepath-sanity's
		// */requisite-with-unknown-place accepts both, internal/idempotency):
		// TopologyRequirement asks only that the volume be accessible from
		// "at least one" requisite segment, and says nothing of ones that
		// name nothing. The provisioner's event carries the code.
		if refused := e.waitBoundOrRefused(ctx, "restore", "InvalidArgument"); refused != "" {
			framework.Logf("WARN driver's choice: the multi-region class's cross product %v is refused (%s), so the class cannot be used with this driver", multiRegion, refused)
			return
		}
		e.expectRestoredInside(ctx, "s16-snapshot", "restore", "consumer", affinity)
	})
}

// segmentOf is the segment of a node with labels under the driver's
// topology keys: every key it carries.
func segmentOf(labels map[string]string, keys []string) driverext.Segment {
	seg := driverext.Segment{}
	for _, k := range keys {
		if v, ok := labels[k]; ok {
			seg[k] = v
		}
	}
	return seg
}
